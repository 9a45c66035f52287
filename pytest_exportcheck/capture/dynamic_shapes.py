"""A case's ``dynamic:`` → the ``dynamic_shapes`` argument torch's export functions take.

torch wants a structure mirroring the inputs: a dict from ``forward``'s
parameter names to, for each tensor, ``{dim index: Dim}`` (``None`` for an
input with no dynamic dims; nested inputs nest the same way)::

    dims:   {batch: {min: 1, max: 64}, seq2: {expr: 2*seq}}
    shapes: {args[0]: {0: batch}, "kwargs['mask']": {0: batch}}
    →  {"x": {0: Dim("batch", min=1, max=64)}, "mask": {0: Dim("batch", ...)}}

One ``Dim`` object per named dim (torch ties dims by object and name), derived
dims by arithmetic on it (``2 * seq``), markers as ``Dim.AUTO`` / ``STATIC`` /
``DYNAMIC``.
"""

from __future__ import annotations

import inspect
import os
import re
from typing import TYPE_CHECKING, Any

import torch
from torch.utils import _pytree as pytree

from pytest_exportcheck.capture.refused_dims import DimReason, dim_line, parse_refusal
from pytest_exportcheck.containment.failures import (
    CaptureError,
    CaseError,
    capture_error,
    exception_text,
    is_user_file,
)
from pytest_exportcheck.model.isolation import render_input_path
from pytest_exportcheck.spec.dynamic import DynamicSpec, Placement

if TYPE_CHECKING:
    from pytest_exportcheck.model.subject import Subject


class DynamicShapesError(Exception):
    """The spec cannot be given to this torch or this model (a marker it lacks, a path
    that is not a tensor of the built inputs)."""


def torch_dims(spec: DynamicSpec) -> dict[str, Any]:
    """One torch object per dim and marker name."""
    dim = torch.export.Dim
    made: dict[str, Any] = {n: dim(n, min=d.min, max=d.max) for n, d in spec.named.items()}
    for name, derived in spec.derived.items():
        made[name] = derived.scale * made[derived.base] + derived.offset
    for marker in ("auto", "static", "dynamic"):
        value = getattr(dim, marker.upper(), None)
        if value is not None:
            made[marker] = value
    return made


def dynamic_shapes(
    spec: DynamicSpec, model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The ``dynamic_shapes`` mapping for ``model(*args, **kwargs)``, keyed by parameter name."""
    dims = torch_dims(spec)
    missing = sorted({p.dim for p in spec.placements if p.dim not in dims})
    if missing:
        raise DynamicShapesError(
            f"this torch has no Dim.{missing[0].upper()} (torch.export.Dim lacks it)"
        )
    wanted: dict[str, dict[int, Any]] = {}
    for placement in spec.placements:
        wanted.setdefault(placement.path, {})[placement.index] = _torch_dim(placement, dims)
    found: set[str] = set()

    def spec_for(path: tuple[Any, ...], leaf: Any) -> Any:
        name = render_input_path(path)
        if name in wanted:
            found.add(name)
            if not isinstance(leaf, torch.Tensor):
                raise DynamicShapesError(f"{name} is a {type(leaf).__name__}, not a tensor")
            return wanted[name]
        return None

    structure = pytree.tree_map_with_path(spec_for, (args, kwargs))
    unknown = sorted(set(wanted) - found)
    if unknown:
        raise DynamicShapesError(f"{unknown[0]} is not an input of the built inputs")
    arg_specs, kwarg_specs = structure
    try:
        bound = inspect.signature(model.forward).bind(*arg_specs, **kwarg_specs)
    except TypeError as exc:
        raise DynamicShapesError(f"cannot bind the inputs to forward's parameters: {exc}") from exc
    return dict(bound.arguments)


def _torch_dim(placement: Placement, dims: dict[str, Any]) -> Any:
    """The named dim, or the marker with its range (``Dim.DYNAMIC(min=1, max=64)``)."""
    made = dims[placement.dim]
    marker = placement.marker
    if marker is None or (marker.min is None and marker.max is None):
        return made
    try:
        return made(min=marker.min, max=marker.max)
    except TypeError as exc:  # torch before ranged hints: Dim.DYNAMIC is not callable
        raise DynamicShapesError(f"this torch's Dim.{marker.kind.upper()} takes no range") from exc


def dim_constraints(
    model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], dynamic: dict[str, Any]
) -> list[Any]:
    """Torch's constraints for ``dynamic`` on these input tensors (they are keyed by the
    tensors' ids), as ``torch.export`` makes them for its own Dynamo capture."""
    from torch.export.dynamic_shapes import _combine_args, _process_dynamic_shapes

    return _process_dynamic_shapes(_combine_args(model, args, kwargs), dynamic)


_SUGGESTED = re.compile(
    r"^\s*(\w+)\s*=\s*(?:torch\.export\.)?Dim\(\s*['\"](\w+)['\"]\s*(.*?)\)\s*$"
)
# ``dx = 2*_dx``, ``a = b + 1``, ``other = batch``: a dim torch found derived from another.
_SUGGESTED_DERIVED = re.compile(
    r"^\s*(\w+)\s*=\s*(?:(\d+)\s*\*\s*)?(\w+)\s*(?:([-+])\s*(\d+))?\s*$"
)


def suggested_lines(text: str) -> tuple[str, ...]:
    """The indented lines right after ``Suggested fixes:``; the paragraph after the blank
    line ("The error above occurred when calling torch.export.export...") is not one."""
    if "Suggested fixes:" not in text:
        return ()
    lines = []
    for line in text.split("Suggested fixes:", 1)[1].split("\n")[1:]:
        if not line.strip() or not line[:1].isspace():
            break
        lines.append(line.strip())
    return tuple(lines)


def case_fix(fixes: tuple[str, ...], spec: DynamicSpec) -> str | None:
    """Torch's fixes as the case would write them.

    Torch omits a min of 2 (its own lower bound) and any min it did not
    compute: ``batch = Dim('batch', max=8)`` for a declared ``[1, 64]`` reads ``[0, 8]``
    copied as is, so the case line keeps the declared min; a root torch introduces for
    a declared dim (``_dx = Dim('_dx', max=32)``, ``dx = 2*_dx`` for ``dx`` declared
    ``[4, 64]``) gets the min that keeps the derived dim's (``_dx: {min: 2, max: 32}``).
    A dim torch fixed to a number (``src_len = 7``) is one the case declares static.
    """
    lines = list(fixes)
    derived = {}  # root -> (derived name, scale, offset), from lines like dx = 2*_dx
    for line in lines:
        match = _SUGGESTED_DERIVED.match(line)
        if match is not None:
            name, scale, root, sign, offset = match.groups()
            signed = int(offset or 0) * (-1 if sign == "-" else 1)
            derived[root] = (name, int(scale or 1), signed)
    case_lines = []
    for line in lines:
        match = _SUGGESTED.match(line)
        if match is None:
            derived_match = _SUGGESTED_DERIVED.match(line)
            if derived_match is not None and not derived_match[3].isdigit():
                name, scale, root, sign, offset = derived_match.groups()
                expr = f"{scale}*{root}" if scale else root
                case_lines.append(f"{name}: {{expr: {expr}{f'{sign}{offset}' if sign else ''}}}")
            continue
        name, _, options = match.groups()
        bounds = dict(re.findall(r"(min|max)\s*=\s*(\d+)", options))
        if "max" in bounds:
            low = int(bounds.get("min", _declared_min(name, spec, derived)))
            case_lines.append(f"{name}: {{min: {low}, max: {bounds['max']}}}")
    static = [m[1] for line in lines if (m := re.match(r"^(\w+) = \d+$", line))]
    shown = []
    if case_lines:
        shown.append("in the case (keeping the declared min): " + "; ".join(case_lines))
    if static:
        shown.append(f"in the case: leave {', '.join(static)} out of dynamic: (static)")
    return "; ".join(shown) or None


def _declared_min(name: str, spec: DynamicSpec, derived: dict[str, tuple[str, int, int]]) -> int:
    """The min a suggested dim keeps: its declared one, or, for a root torch introduced
    under a declared dim (``dx = 2*_dx``), the least root that keeps that dim's min."""
    if name in spec.named:
        return spec.named[name].min
    if name in derived:
        of, scale, offset = derived[name]
        if of in spec.named:
            return max(0, -(-(spec.named[of].min - offset) // scale))
    return 0


def declared_dynamic_shapes(
    subject: Subject, model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any] | None:
    """``dynamic_shapes`` for a capture of ``subject`` (None: the case declares none);
    a spec that does not fit the built inputs is the case's error."""
    spec = subject.case.dynamic
    if spec is None:
        return None
    try:
        return dynamic_shapes(spec, model, args, kwargs)
    except DynamicShapesError as exc:
        where = subject.case.at(spec.line)
        raise CaseError(f"{where}: dynamic: {exc}") from None


def dynamic_capture_error(exc: BaseException, context: str, subject: Subject) -> CaptureError:
    """The capture's failure; where it refused the declared dims, a line per dim with
    torch's reason and its suggested fix, then the case lines for the fixes.

    Torch's own message repeats each reason with advice for spellings a case does not
    use, a strict export adds a stack per dim, and the fixes follow in a block of their
    own: read into one line per dim, the failure says why in a few lines; the whole
    message stays in the traceback (-vv).
    """
    error = capture_error(exc, context)
    spec = subject.case.dynamic
    if spec is None or error.kind != "constraint violation":
        return error
    refusal = parse_refusal(exception_text(exc))
    if refusal is None:  # a wording this reader does not know: torch's message as it is
        return error
    # Where strict export says the model specialized a dim, the message names the line;
    # the short form (an xfail's reason) leaves it out.
    refused = tuple(dim_line(refusal, reason) for reason in refusal.reasons)
    located = [dim_line(refusal, r, where=_specialized_at(r)) for r in refusal.reasons]
    head, *rest = error.message.splitlines()
    unclaimed = refusal.unclaimed_fixes()
    in_case = case_fix(refusal.fixes, spec)
    frame = rest[rest.index("raised from user code:") :] if "raised from user code:" in rest else []
    message = "\n".join(
        [
            head,
            *(f"- {line}" for line in located),
            *([f"torch also suggests: {'; '.join(unclaimed)}"] if unclaimed else []),
            *([in_case] if in_case else []),
            "(torch's whole message: in its traceback)",
            *frame,
        ]
    )
    shortened = CaptureError(message, error.kind, refused)
    # An xfail's match: reads torch's own words too (a guard's spelling, its advice).
    shortened._full_text = f"{shortened.render()}\n{exception_text(exc)}"
    return shortened


def _specialized_at(reason: DimReason) -> str:
    """Where the model specialized the dim, from the stack strict export gives a reason:
    its innermost frame of user code, ``models/seq2seq.py:16 in forward``."""
    frames = [frame for frame in reason.stack if is_user_file(frame.filename)]
    if not frames:
        return ""
    frame = frames[-1]
    try:
        shown = os.path.relpath(frame.filename)
    except ValueError:  # another drive (Windows)
        shown = frame.filename
    source = f" ({frame.source})" if frame.source else ""
    return f"{shown}:{frame.lineno} in {frame.name}{source}"
