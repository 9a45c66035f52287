"""signature: every lifted placeholder maps to the right tensor of the eager model.

For a model ``M`` with ``self.lin = nn.Linear(4, 4)``, a buffer ``steps`` and a
plain tensor attribute ``scale``, non-strict export gives the graph::

    placeholder p_lin_weight  PARAMETER   lin.weight
    placeholder p_lin_bias    PARAMETER   lin.bias
    placeholder b_steps       BUFFER      steps
    placeholder c_scale       CONSTANT    scale
    placeholder x             USER_INPUT  (args[0])

and this check verifies, by value and tensor identity rather than by name:
kinds are known; each target FQN resolves to an eager tensor of the same kind,
dtype and shape as the graph's placeholder; the tensor the path feeds that
placeholder *is* the captured model's tensor at the target (identity, so equal
values cannot hide a swap) and equals eager's; alias groups (tied weights)
agree both ways; every eager parameter and buffer is lifted, aliases a lifted
one, or is held by the capture (strict export does not lift state forward never
reads); user inputs follow the flattened case inputs in order; and
``expect.placeholders`` matches if given. Every capture path fills the same
placeholder list, so this one check serves them all.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch.utils import _pytree as pytree

from pytest_exportcheck.capture.record import (
    PLACEHOLDER_KINDS,
    STATE_KINDS,
    CaptureRecord,
    named_tensors,
    tensor_at,
)
from pytest_exportcheck.capture.symbolic import same_static_shape
from pytest_exportcheck.checks.listdiff import partition_differences, side_by_side
from pytest_exportcheck.checks.usage_scopes import is_traced_constant, usage_scopes
from pytest_exportcheck.spec import Case
from pytest_exportcheck.spec.versions import placeholder_notes


def check_signature(case: Case, record: CaptureRecord) -> list[str]:
    model = record.subject.pristine_model
    findings: list[str] = []
    findings += _unknown_kinds(record)
    findings += _state_targets(model, record)
    findings += _alias_groups(model, record)
    findings += _unaccounted_state(model, record)
    findings += usage_scopes(record)
    findings += _user_inputs(record)
    findings += _expected_placeholders(case, record)
    return findings


def _unknown_kinds(record: CaptureRecord) -> list[str]:
    return [
        f"placeholder {p.name!r} has kind {p.kind!r}, not one of {', '.join(PLACEHOLDER_KINDS)}"
        for p in record.placeholders
        if p.kind not in PLACEHOLDER_KINDS
    ]


def _persistent_buffers(model: torch.nn.Module) -> set[str]:
    """The buffers a plain ``state_dict()`` holds, read from each module's
    ``_non_persistent_buffers_set`` as export reads it: never by calling ``state_dict()``,
    which a model may override (and which may raise, or allocate, as its code likes)."""
    return {
        f"{prefix}.{name}" if prefix else name
        for prefix, module in model.named_modules(remove_duplicate=False)
        for name, buffer in module._buffers.items()
        if buffer is not None and name not in module._non_persistent_buffers_set
    }


def _state_targets(model: torch.nn.Module, record: CaptureRecord) -> list[str]:
    parameters = dict(model.named_parameters(remove_duplicate=False))
    buffers = dict(model.named_buffers(remove_duplicate=False))
    persistent = _persistent_buffers(model)
    findings = []
    for p in record.placeholders:
        if p.kind not in STATE_KINDS:
            continue
        if p.target is None:
            findings.append(f"{p.name}: {p.kind} placeholder has no target FQN")
            continue
        eager = eager_tensor(model, p.target)
        if eager is None and p.kind == "constant" and is_traced_constant(p.target):
            # A tensor forward creates (torch.tensor([...]) in forward): export
            # lifts it under a name of its own; it has no eager counterpart.
            if record.fed_tensor(p) is None:
                findings.append(f"{p.render()}: the program holds no tensor for {p.target!r}")
            continue
        if eager is None:
            findings.append(f"{p.render()}: the eager model has no tensor at {p.target!r}")
            continue
        eager_kind = "parameter" if p.target in parameters else "constant"
        if p.target in buffers:
            eager_kind = "buffer"
        if eager_kind != p.kind:
            findings.append(f"{p.render()}: in eager, {p.target!r} is a {eager_kind}")
        is_persistent = p.target in persistent
        if p.kind == "buffer" and p.persistent is not None and p.persistent != is_persistent:
            eager_says = "persistent" if is_persistent else "non-persistent"
            findings.append(
                f"{p.render()}: signature says persistent={p.persistent}, "
                f"eager buffer is {eager_says}"
            )
        example = p.example
        if isinstance(example, torch.Tensor) and (
            example.dtype != eager.dtype or not same_static_shape(example.shape, eager.shape)
        ):
            # The graph was traced for another tensor than the one its target names.
            findings.append(
                f"{p.render()}: graph expects {_describe(example)}, "
                f"eager {p.target} is {_describe(eager)}"
            )
        held = record.fed_tensor(p)
        if held is None:
            findings.append(f"{p.render()}: the program holds no tensor for {p.target!r}")
            continue
        findings += _fed_identity(record, p, held)
        if held.dtype != eager.dtype or held.shape != eager.shape:
            findings.append(
                f"{p.render()}: program tensor {_describe(held)} != eager {_describe(eager)}"
            )
        elif not _same_values(held, eager):
            findings.append(f"{p.render()}: program tensor values differ from eager's")
    return findings


def _alias_groups(model: torch.nn.Module, record: CaptureRecord) -> list[str]:
    """Tensors that are one object in eager must be one in the program, and vice versa."""
    lifted = [p for p in record.placeholders if p.kind in STATE_KINDS and p.target]
    eager_ids: dict[str, Any] = {}
    program_ids: dict[str, Any] = {}
    for p in lifted:
        eager = eager_tensor(model, p.target)
        held = record.fed_tensor(p)
        if eager is not None and held is not None:
            eager_ids[p.target] = tensor_identity(eager)
            program_ids[p.target] = tensor_identity(held)
    return partition_differences(
        eager_ids,
        program_ids,
        merged="{a!r} and {b!r} are two tensors in eager but one in the program",
        split="{a!r} and {b!r} are one tensor in eager (tied) but two in the program",
    )


def _unaccounted_state(model: torch.nn.Module, record: CaptureRecord) -> list[str]:
    """Every eager parameter and buffer is lifted, an alias of a lifted one, or held.

    "Held" covers state forward never reads: strict export does not lift it,
    but the program still carries it in ``state_dict``/``constants``.
    """
    if not record.keeps_unread_state:
        return []  # the path keeps only what forward reads; see CaptureRecord
    lifted_ids = {
        tensor_identity(t)
        for p in record.placeholders
        if p.kind in STATE_KINDS and p.target and (t := eager_tensor(model, p.target)) is not None
    }
    findings = []
    named = [
        *(("parameter", n, t) for n, t in model.named_parameters(remove_duplicate=False)),
        *(("buffer", n, t) for n, t in model.named_buffers(remove_duplicate=False)),
    ]
    for kind, name, tensor in named:
        if tensor_identity(tensor) in lifted_ids or record.state_tensor(name) is not None:
            continue
        findings.append(
            f"eager {kind} {name!r} is neither lifted, an alias of a lifted one, "
            "nor held by the program"
        )
    return findings


def _user_inputs(record: CaptureRecord) -> list[str]:
    """Each user-input placeholder maps to one case input and expects what the case gives.

    Paths differ in which inputs get placeholders (Dynamo specializes scalars
    and orders inputs by first use; legacy Dynamo keeps a placeholder for a
    ``None``), so placeholders are paired with inputs by their target path;
    the order is already part of how export-style paths assign those targets.
    """
    user = [p for p in record.placeholders if p.kind == "user_input"]
    inputs = dict(record.subject.flat_inputs)
    findings = []
    mapped: dict[str, str] = {}
    for placeholder in user:
        path, example = placeholder.target, placeholder.example
        if path is None:
            if isinstance(example, torch.Tensor):
                findings.append(f"{placeholder.name}: a tensor input that maps to no case input")
            continue  # a baked-in non-tensor (legacy Dynamo keeps None as a graph input)
        if path not in inputs:
            findings.append(f"{placeholder.name}: maps to {path}, which the case does not give")
            continue
        if path in mapped:
            findings.append(f"{placeholder.name} and {mapped[path]} both map to input {path}")
        mapped[path] = placeholder.name
        findings += _input_matches(placeholder, path, inputs[path])
    expected = [
        path
        for path, value in record.subject.flat_inputs
        if isinstance(value, torch.Tensor) or not record.bakes_scalar_inputs
    ]
    missing = [path for path in expected if path not in mapped]
    if missing and not record.drops_unread_inputs:
        findings.append(
            f"case inputs without a user-input placeholder: {', '.join(missing)} "
            f"(placeholders: {', '.join(p.name for p in user) or 'none'})"
        )
    in_spec = record.in_spec
    if in_spec is not None:
        case_spec = pytree.tree_structure(record.subject.pristine_inputs)
        if in_spec != case_spec:
            findings.append(
                "input structure differs:\n"
                f"  program: {' '.join(str(in_spec).split())}\n"
                f"  case:    {' '.join(str(case_spec).split())}"
            )
    return findings


def _input_matches(placeholder: Any, path: str, value: Any) -> list[str]:
    example = placeholder.example
    if isinstance(value, torch.Tensor):
        if not isinstance(example, torch.Tensor):
            return [
                f"{placeholder.name} (input {path}): a tensor input, but the graph expects "
                f"{example!r}"
            ]
        if example.dtype != value.dtype or not same_static_shape(example.shape, value.shape):
            return [
                f"{placeholder.name} (input {path}): graph expects {_describe(example)}, "
                f"the case gives {_describe(value)}"
            ]
    elif not isinstance(example, torch.Tensor) and example != value:
        return [
            f"{placeholder.name} (input {path}): graph baked in {example!r}, "
            f"the case gives {value!r}"
        ]
    return []


def _expected_placeholders(case: Case, record: CaptureRecord) -> list[str]:
    expected = case.expect.placeholders_for(record.capture)
    if expected is None:
        return []
    wanted, actual = _as_compared(expected, record)
    if actual == wanted:
        return []
    where = f" ({case.at(case.expect.placeholders_line)})"
    finding = f"placeholders differ from expect.placeholders{where}:\n" + side_by_side(
        wanted, actual, names=("expected", f"actual [{record.capture}]")
    )
    # An expectation a torch: condition gives other versions may fit this one.
    notes = placeholder_notes(
        case, record.capture, lambda other: operator.eq(*_as_compared(other, record))
    )
    return ["\n".join([finding, *notes])]


def _as_compared(expected: list[Any], record: CaptureRecord) -> tuple[list[str], list[str]]:
    """(expected, actual) rendered alike; an expectation without a target compares name
    and kind only."""
    untargeted = {e.name for e in expected if e.target is None}
    actual = [
        f"{p.name}: {p.kind}" if p.name in untargeted else p.render() for p in record.placeholders
    ]
    return [e.render() for e in expected], actual


eager_tensor = tensor_at


def _fed_identity(record: CaptureRecord, p: Any, held: torch.Tensor) -> list[str]:
    """The tensor fed to ``p`` is the captured model's tensor at ``p.target``, by identity."""
    captured = record.captured_model
    if captured is None:  # e.g. moved to a device: new tensors, compared by value only
        return []
    expected = tensor_at(captured, p.target)
    if expected is not None and tensor_identity(expected) == tensor_identity(held):
        return []
    actual = [
        fqn
        for fqn, (_, tensor) in named_tensors(captured).items()
        if tensor_identity(tensor) == tensor_identity(held)
    ]
    fed = f"the tensor at {', '.join(actual)}" if actual else "a tensor the model does not hold"
    return [
        f"{p.render()}: {record.capture} feeds this placeholder {fed}, not {p.target!r} "
        f"(target read from {p.mapped_by})"
    ]


def tensor_identity(tensor: torch.Tensor) -> Any:
    """Same object, or a view of the same storage with the same geometry.

    By storage (``_cdata``), not ``data_ptr()``: asking for the pointer gives a
    copy-on-write tensor bytes of its own (``copy_on_write.py``).
    """
    if tensor.device.type == "meta":
        return id(tensor)
    return (
        tensor.untyped_storage()._cdata,
        tensor.storage_offset(),
        tuple(tensor.shape),
        tuple(tensor.stride()),
        tensor.dtype,
    )


def _same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.device.type == "meta" or b.device.type == "meta":
        return True
    a, b = a.detach().cpu(), b.detach().cpu()
    if a.is_floating_point() or a.is_complex():
        return bool(torch.allclose(a, b, rtol=0, atol=0, equal_nan=True))
    return bool(torch.equal(a, b))


def _describe(tensor: Any) -> str:
    dtype = str(getattr(tensor, "dtype", "?")).removeprefix("torch.")
    return f"{dtype}{list(getattr(tensor, 'shape', []))}"
