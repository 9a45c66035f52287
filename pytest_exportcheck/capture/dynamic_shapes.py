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
import re
from typing import TYPE_CHECKING, Any

import torch
from torch.utils import _pytree as pytree

from pytest_exportcheck.containment.failures import CaptureError, CaseError, capture_error
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


def suggested_fix(exc: BaseException, spec: DynamicSpec) -> str | None:
    """Torch's suggested fixes for a refused ``dynamic_shapes``, and the case lines for them.

    The fixes are the indented lines right after ``Suggested fixes:``; the paragraph
    after the blank line ("The error above occurred when calling torch.export.export...")
    is not one. Torch omits a min of 2 (its own lower bound) and any min it did not
    compute: ``batch = Dim('batch', max=8)`` for a declared ``[1, 64]`` reads ``[0, 8]``
    copied as is, so the case line keeps the declared min; a root torch introduces for
    a declared dim (``_dx = Dim('_dx', max=32)``, ``dx = 2*_dx`` for ``dx`` declared
    ``[4, 64]``) gets the min that keeps the derived dim's (``_dx: {min: 2, max: 32}``).
    """
    text = str(exc)
    if "Suggested fixes:" not in text:
        return None
    lines = []
    for line in text.split("Suggested fixes:", 1)[1].split("\n")[1:]:
        if not line.strip() or not line[:1].isspace():
            break  # the fixes end at the blank line before torch's closing paragraph
        lines.append(line.strip())
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
    if not lines:
        return None
    shown = "torch suggests: " + "; ".join(lines[:4])
    if case_lines:
        shown += "; in the case (keeping the declared min): " + "; ".join(case_lines)
    return shown


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
    """The capture's failure; where it refused the declared dims, torch's fix beside the
    case line that keeps the declared min."""
    error = capture_error(exc, context)
    spec = subject.case.dynamic
    if spec is None or error.kind != "constraint violation":
        return error
    # Torch says which guard refused which dim on indented lines; they come first, once.
    reasons = [line.strip() for line in str(exc).splitlines() if line.startswith("  - ")][:3]
    fix = suggested_fix(exc, spec)
    head, *rest = error.message.splitlines()
    rest = [line for line in rest if line.strip() not in reasons]
    message = "\n".join([head, *reasons, *([fix] if fix else []), *rest])
    return CaptureError(message, error.kind)
