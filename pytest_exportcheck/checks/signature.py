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
dtype and shape as the graph's placeholder, held by the program with equal
values; alias groups (tied weights) agree both ways; every eager parameter and
buffer is lifted, aliases a lifted one, or is held by the program (strict export
does not lift state forward never reads); user inputs follow the flattened case
inputs in order; and ``expect.placeholders`` matches if given.
"""

from __future__ import annotations

import re
from typing import Any

import torch
from torch.utils import _pytree as pytree

from pytest_exportcheck.capture.record import PLACEHOLDER_KINDS, STATE_KINDS, CaptureRecord
from pytest_exportcheck.checks.listdiff import list_diff, partition_differences
from pytest_exportcheck.spec import Case


def check_signature(case: Case, record: CaptureRecord) -> list[str]:
    model = record.subject.pristine_model
    findings: list[str] = []
    findings += _unknown_kinds(record)
    findings += _state_targets(model, record)
    findings += _alias_groups(model, record)
    findings += _unaccounted_state(model, record)
    findings += _user_inputs(record)
    findings += _expected_placeholders(case, record)
    return findings


def _unknown_kinds(record: CaptureRecord) -> list[str]:
    return [
        f"placeholder {p.name!r} has kind {p.kind!r}, not one of {', '.join(PLACEHOLDER_KINDS)}"
        for p in record.placeholders
        if p.kind not in PLACEHOLDER_KINDS
    ]


def _state_targets(model: torch.nn.Module, record: CaptureRecord) -> list[str]:
    parameters = dict(model.named_parameters(remove_duplicate=False))
    buffers = dict(model.named_buffers(remove_duplicate=False))
    persistent = set(model.state_dict(keep_vars=True))
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
            if record.state_tensor(p.target) is None:
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
            example.dtype != eager.dtype or tuple(example.shape) != tuple(eager.shape)
        ):
            # The graph was traced for another tensor than the one its target names.
            findings.append(
                f"{p.render()}: graph expects {_describe(example)}, "
                f"eager {p.target} is {_describe(eager)}"
            )
        held = record.state_tensor(p.target)
        if held is None:
            findings.append(f"{p.render()}: the program holds no tensor for {p.target!r}")
            continue
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
        held = record.state_tensor(p.target)
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
    user = [p for p in record.placeholders if p.kind == "user_input"]
    flat = record.subject.flat_inputs
    findings = []
    if len(user) != len(flat):
        findings.append(
            f"{len(user)} user-input placeholders ({', '.join(p.name for p in user)}) for "
            f"{len(flat)} flattened case inputs ({', '.join(path for path, _ in flat)})"
        )
        return findings
    for placeholder, (path, value) in zip(user, flat, strict=True):
        example = placeholder.example
        if isinstance(value, torch.Tensor):
            if not isinstance(example, torch.Tensor):
                findings.append(
                    f"{placeholder.name} (input {path}): a tensor input, but the graph expects "
                    f"{example!r}"
                )
            elif example.dtype != value.dtype or tuple(example.shape) != tuple(value.shape):
                findings.append(
                    f"{placeholder.name} (input {path}): graph expects {_describe(example)}, "
                    f"the case gives {_describe(value)}"
                )
        elif not isinstance(example, torch.Tensor) and example != value:
            findings.append(
                f"{placeholder.name} (input {path}): graph baked in {example!r}, "
                f"the case gives {value!r}"
            )
    in_spec = getattr(record.program.call_spec, "in_spec", None)
    if in_spec is not None:
        case_spec = pytree.tree_structure(record.subject.pristine_inputs)
        if in_spec != case_spec:
            findings.append(
                "input structure differs:\n"
                f"  program: {' '.join(str(in_spec).split())}\n"
                f"  case:    {' '.join(str(case_spec).split())}"
            )
    return findings


def _expected_placeholders(case: Case, record: CaptureRecord) -> list[str]:
    expected = case.expect.placeholders
    if expected is None:
        return []
    # An expectation without a target compares name and kind only.
    untargeted = {e.name for e in expected if e.target is None}
    actual = [
        f"{p.name}: {p.kind}" if p.name in untargeted else p.render() for p in record.placeholders
    ]
    wanted = [e.render() for e in expected]
    if actual == wanted:
        return []
    where = f" ({case.at(case.expect.placeholders_line)})"
    return [
        f"placeholders differ from expect.placeholders{where}:\n"
        + list_diff(wanted, actual, names=("expected", f"actual [{record.capture}]"))
    ]


TRACED_CONSTANT = re.compile(r"(.+\.)?lifted_tensor_\d+")


def is_traced_constant(target: str) -> bool:
    """Export's name for a tensor created inside forward, lifted as a constant."""
    return TRACED_CONSTANT.fullmatch(target) is not None


def eager_tensor(model: torch.nn.Module, fqn: str) -> torch.Tensor | None:
    """The tensor at ``fqn`` in ``model``: a parameter, buffer or plain tensor attribute."""
    owner_path, _, attr = fqn.rpartition(".")
    try:
        owner = model.get_submodule(owner_path) if owner_path else model
    except AttributeError:
        return None
    value = getattr(owner, attr, None)
    return value if isinstance(value, torch.Tensor) else None


def tensor_identity(tensor: torch.Tensor) -> Any:
    """Same object, or a view of the same memory with the same geometry."""
    if tensor.device.type == "meta":
        return id(tensor)
    return (
        tensor.untyped_storage().data_ptr(),
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
