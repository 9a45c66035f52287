"""The floor: the least work that answers every question the plugin's checks ask, without pytest.

    python benchmarks/floor.py cases benchmarks/generated [-v] [--ops]

For every case of the given YAML files (directories are searched for ``*.yaml``):

* build the model and inputs once (seeded), with the plugin's own loader and
  builders (``load_case_file``, ``build_model``, ``build_inputs``: not the work
  being measured);
* one eager reference run on a private deep copy, ``max(mutation steps, parity
  steps, 1)`` calls, each on freshly cloned inputs after re-seeding; the first
  call carries the forward hooks that count module calls (re-run without them
  where hooks make forward raise) and is diffed against the pristine model and
  inputs to learn what eager mutated;

and per (case, capture):

* one ``torch.export.export`` of a private deep copy;
* at most one ``torch.export.unflatten``, one ``run_decompositions()`` and one
  ``torch.export.save`` / ``torch.export.load`` (the program users ship, which the
  plugin runs by default: ``programs: [module, unflatten, decompose, save]``);
* each module that is *run* (``unflatten(ep)``, ``ep.module()``, the decomposed
  program's ``.module()``, the loaded program's) starts from state of its own: all
  but the last of them get a deep copy of the program (the loaded one needs none:
  loading makes tensors of its own), the last one takes the program itself once
  nothing reads it any more — the plugin's isolation rule, no more copies than it
  needs;
* each of those modules is called as many times as the checks that compare it
  need (the most of their step counts, not their sum), on cloned inputs after
  re-seeding, and compared to the eager reference as the checks do: outputs
  within tolerance, every lifted parameter/buffer and mutated tensor input
  after each mutation step, plus the checks' structural comparisons
  (signature, hierarchy, recorded mutations).

It prints the wall time, and with ``--ops`` how many of each expensive operation
it made and the time spent in them (``opcount.py``, as for the plugin). ``-v`` lists every
(case, capture, check) that does not pass, to compare with the plugin's
failures and xfails.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STARTED = time.perf_counter()

import torch  # noqa: E402 - the start time includes the torch import, as pytest's does
from torch.export import ExportedProgram  # noqa: E402
from torch.export.graph_signature import InputKind  # noqa: E402
from torch.utils import _pytree as pytree  # noqa: E402

from pytest_exportcheck.checks import signature as signature_check  # noqa: E402
from pytest_exportcheck.checks import usage_scopes  # noqa: E402
from pytest_exportcheck.comparison.compare_values import DEFAULT_TOLERANCES  # noqa: E402
from pytest_exportcheck.model.build import build_inputs, build_model, seed_everything  # noqa: E402
from pytest_exportcheck.model.program_files import saved_and_loaded  # noqa: E402
from pytest_exportcheck.spec import Case, load_case_file  # noqa: E402

Inputs = tuple[tuple[Any, ...], dict[str, Any]]
CHECKS = ("signature", "hierarchy", "mutation", "parity")  # the plugin's checks on CPU
STATE_KINDS = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)
KNOWN_KINDS = (*STATE_KINDS, InputKind.CUSTOM_OBJ, InputKind.TOKEN, InputKind.USER_INPUT)
KIND_NAMES = {
    InputKind.PARAMETER: "parameter",
    InputKind.BUFFER: "buffer",
    InputKind.CONSTANT_TENSOR: "constant",
    InputKind.CUSTOM_OBJ: "custom_obj",
    InputKind.TOKEN: "token",
    InputKind.USER_INPUT: "user_input",
}
# The package's pure helpers are the same definitions, not the work measured.
TRACED_CONSTANT = usage_scopes.TRACED_CONSTANT
TOLERANCES = DEFAULT_TOLERANCES  # torch.testing.assert_close's (rtol, atol)
tensor_identity = signature_check.tensor_identity
eager_tensor = signature_check.eager_tensor


# --- small helpers: cloning, flattening, comparing ---------------------------------------


def clone_inputs(inputs: Inputs) -> Inputs:
    def clone(leaf: Any) -> Any:
        if isinstance(leaf, torch.Tensor):
            return leaf.detach().clone().requires_grad_(leaf.requires_grad)
        return leaf

    return pytree.tree_map(clone, inputs)


def flat_inputs(inputs: Inputs) -> list[tuple[str, Any]]:
    """Leaves of ``(args, kwargs)`` with the plugin's path spelling (``args[0]``, ...)."""
    leaves, _ = pytree.tree_flatten_with_path(inputs)
    out = []
    for path, leaf in leaves:
        text = "args" if getattr(path[0], "idx", None) == 0 else "kwargs"
        for key in path[1:]:
            if hasattr(key, "idx"):
                text += f"[{key.idx}]"
            elif hasattr(key, "key"):
                text += f"[{key.key!r}]"
            else:
                text += f".{getattr(key, 'name', key)}"
        out.append((text, leaf))
    return out


def module_state(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    state = dict(module.named_parameters(remove_duplicate=False))
    state.update(module.named_buffers(remove_duplicate=False))
    return state


def groups_of(named: Any) -> dict[str, tuple[str, ...]]:
    """For each name, every name of the same object (tied tensors, shared modules)."""
    by_object: dict[int, list[str]] = {}
    for name, obj in named:
        by_object.setdefault(id(obj), []).append(name)
    return {name: tuple(names) for names in by_object.values() for name in names}


@dataclass(frozen=True)
class Tol:
    atol: float | None = None
    rtol: float | None = None


EXACT = Tol(0.0, 0.0)


def leaf_close(want: Any, got: Any, tol: Tol) -> bool:
    if not isinstance(want, torch.Tensor) or not isinstance(got, torch.Tensor):
        if isinstance(want, torch.Tensor) or isinstance(got, torch.Tensor):
            return False
        return bool(want == got or (want != want and got != got))
    if want.dtype != got.dtype or want.shape != got.shape:
        return False
    if want.device.type == "meta":
        return True
    rtol, atol = TOLERANCES.get(want.dtype, (0.0, 0.0))
    rtol = rtol if tol.rtol is None else tol.rtol
    atol = atol if tol.atol is None else tol.atol
    want, got = want.detach(), got.detach()
    if want.is_floating_point() or want.is_complex():
        return bool(torch.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True))
    return bool(torch.equal(got, want))


def trees_close(want: Any, got: Any, tol: Tol) -> bool:
    want_leaves, want_spec = pytree.tree_flatten(want)
    got_leaves, got_spec = pytree.tree_flatten(got)
    if want_spec != got_spec:
        return False
    return all(leaf_close(w, g, tol) for w, g in zip(want_leaves, got_leaves, strict=True))


def held_tensor(program: ExportedProgram, fqn: str) -> torch.Tensor | None:
    if fqn in program.state_dict:
        return program.state_dict[fqn]
    value = program.constants.get(fqn)
    return value if isinstance(value, torch.Tensor) else None


# --- the eager reference -------------------------------------------------------------------


@dataclass
class Step:
    output: Any
    state: dict[str, torch.Tensor] | None  # cloned, for steps the mutation check compares
    inputs: dict[str, Any] | None


@dataclass
class Eager:
    steps: list[Step]
    mutated_state: set[str]
    mutated_inputs: set[str]
    call_counts: dict[str, int] | None


def call(
    module: Callable[..., Any], inputs: Inputs, seed: int, *, eager: bool, cloned: bool = False
) -> tuple[Any, Inputs]:
    """One seeded call on cloned inputs; eager runs as export traces (autograd on)."""
    args, kwargs = inputs if cloned else clone_inputs(inputs)
    seed_everything(seed)
    with torch.set_grad_enabled(eager):
        return module(*args, **kwargs), (args, kwargs)


def eager_reference(
    case: Case, model: torch.nn.Module, inputs: Inputs, steps: int, snapshot_steps: int
) -> Eager:
    """One private copy, ``steps`` calls; the first one hooked and diffed.

    A tensor counts as mutated when its identity, its version counter or its
    values changed (values against the pristine model and inputs: no snapshot).
    """
    try:
        runner, first = _first_call(case, model, inputs, hooked=True)
    except Exception:  # hooks break some forwards (torch.cond): count nothing, run plainly
        runner, first = _first_call(case, model, inputs, hooked=False)  # a raise: eager error
    output, used, call_counts, before_state, before_inputs = first
    pristine_state = module_state(model)
    mutated_state = {
        n
        for n, t in module_state(runner).items()
        if n not in before_state or changed(before_state[n], pristine_state[n], t)
    }
    pristine_inputs = dict(flat_inputs(inputs))
    mutated_inputs = {
        p
        for p, v in flat_inputs(used)
        if p in before_inputs and changed(before_inputs[p], pristine_inputs[p], v)
    }
    record = [_step(output, runner, used, snapshot_steps > 0)]
    for index in range(1, steps):
        output, used = call(runner, inputs, case.seed, eager=True)
        record.append(_step(output, runner, used, index < snapshot_steps))
    return Eager(record, mutated_state, mutated_inputs, call_counts)


Identity = tuple[torch.Tensor, int]  # a tensor object and its version counter


def _first_call(
    case: Case, model: torch.nn.Module, inputs: Inputs, *, hooked: bool
) -> tuple[
    torch.nn.Module,
    tuple[Any, Inputs, dict[str, int] | None, dict[str, Identity], dict[str, Identity]],
]:
    runner = copy.deepcopy(model)
    counter: Counter[int] = Counter()
    handles = [
        m.register_forward_hook(lambda mod, _a, _o: counter.update([id(mod)]))
        for m in (runner.modules() if hooked else ())
    ]
    used = clone_inputs(inputs)
    before_state = {n: (t, t._version) for n, t in module_state(runner).items()}
    before_inputs = {
        p: (v, v._version) for p, v in flat_inputs(used) if isinstance(v, torch.Tensor)
    }
    try:
        output, used = call(runner, used, case.seed, eager=True, cloned=True)
    finally:
        for handle in handles:
            handle.remove()
    call_counts = None
    if hooked:
        named = runner.named_modules(remove_duplicate=False)
        call_counts = {name: counter[id(m)] for name, m in named if name}
    return runner, (output, used, call_counts, before_state, before_inputs)


def _step(output: Any, module: torch.nn.Module, used: Inputs, snapshot: bool) -> Step:
    if not snapshot:
        return Step(output, None, None)
    state = {n: t.detach().clone() for n, t in module_state(module).items()}
    return Step(output, state, dict(flat_inputs(used)))


def changed(identity: Identity, before: torch.Tensor, after: Any) -> bool:
    obj, version = identity
    if after is not obj or after._version != version:
        return True
    if before.shape != after.shape or before.dtype != after.dtype:
        return True
    if after.device.type == "meta":
        return False
    after = after.detach()
    if torch.equal(before, after):
        return False
    if before.is_floating_point() or before.is_complex():
        return not torch.allclose(before, after, rtol=0, atol=0, equal_nan=True)
    return True


# --- per (case, capture) -------------------------------------------------------------------


@dataclass
class Outcome:
    failed: dict[str, str] = field(default_factory=dict)  # check -> first problem

    def fail(self, check: str, problem: str) -> None:
        self.failed.setdefault(check, problem)


def check_signature(
    case: Case,
    capture: str,
    model: torch.nn.Module,
    ep: ExportedProgram,
    inputs: Inputs,
    out: Outcome,
) -> None:
    specs = ep.graph_signature.input_specs
    nodes = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    parameters = dict(model.named_parameters(remove_duplicate=False))
    buffers = dict(model.named_buffers(remove_duplicate=False))
    persistent = set(model.state_dict(keep_vars=True))
    flat = flat_inputs(inputs)
    eager_ids: dict[str, Any] = {}
    program_ids: dict[str, Any] = {}
    lifted_ids = set()
    rendered = []
    user = []
    for spec in specs:
        kind = KIND_NAMES.get(spec.kind, str(spec.kind))
        if spec.kind not in KNOWN_KINDS:
            out.fail("signature", f"unknown kind {spec.kind}")
        example = nodes[spec.arg.name].meta.get("val") if spec.arg.name in nodes else None
        if spec.kind == InputKind.USER_INPUT:
            example = getattr(spec.arg, "value", example)
            path = flat[len(user)][0] if len(user) < len(flat) else None
            user.append(example)
            rendered.append((spec.arg.name, kind, path))
            continue
        rendered.append((spec.arg.name, kind, spec.target))
        if spec.kind not in STATE_KINDS:
            continue
        target = spec.target
        eager = eager_tensor(model, target) if target else None
        if eager is None and kind == "constant" and target and TRACED_CONSTANT.fullmatch(target):
            if held_tensor(ep, target) is None:
                out.fail("signature", f"{spec.arg.name}: the program holds no tensor for it")
            continue
        if eager is None:
            out.fail("signature", f"{spec.arg.name}: no eager tensor at {target!r}")
            continue
        lifted_ids.add(tensor_identity(eager))
        eager_kind = "parameter" if target in parameters else "constant"
        eager_kind = "buffer" if target in buffers else eager_kind
        if eager_kind != kind:
            out.fail("signature", f"{spec.arg.name}: {target} is a {eager_kind} in eager")
        if (
            kind == "buffer"
            and getattr(spec, "persistent", None) is not None
            and spec.persistent != (target in persistent)
        ):
            out.fail("signature", f"{spec.arg.name}: persistence differs")
        if isinstance(example, torch.Tensor) and (
            example.dtype != eager.dtype or tuple(example.shape) != tuple(eager.shape)
        ):
            out.fail("signature", f"{spec.arg.name}: graph expects another tensor")
        held = held_tensor(ep, target)
        if held is None:
            out.fail("signature", f"{spec.arg.name}: the program holds no tensor for it")
            continue
        if not leaf_close(eager, held, EXACT):
            out.fail("signature", f"{spec.arg.name}: program tensor differs from eager")
        eager_ids[target] = tensor_identity(eager)
        program_ids[target] = tensor_identity(held)
    targets = list(eager_ids)
    for i, a in enumerate(targets):
        for b in targets[i + 1 :]:
            if (eager_ids[a] == eager_ids[b]) != (program_ids[a] == program_ids[b]):
                out.fail("signature", f"{a} / {b}: aliasing differs")
    for name, tensor in module_state(model).items():
        if tensor_identity(tensor) not in lifted_ids and held_tensor(ep, name) is None:
            out.fail("signature", f"eager {name} neither lifted nor held")
    if len(user) != len(flat):
        out.fail("signature", "user-input count differs")
    else:
        for example, (_, value) in zip(user, flat, strict=True):
            if isinstance(value, torch.Tensor):
                if not isinstance(example, torch.Tensor) or (
                    example.dtype != value.dtype or tuple(example.shape) != tuple(value.shape)
                ):
                    out.fail("signature", "user input differs")
            elif not isinstance(example, torch.Tensor) and example != value:
                out.fail("signature", "baked-in user input differs")
    in_spec = getattr(ep.call_spec, "in_spec", None)
    if in_spec is not None and in_spec != pytree.tree_structure(inputs):
        out.fail("signature", "input structure differs")
    expected = case.expect.placeholders_for(capture)
    if expected is not None:
        untargeted = {e.name for e in expected if e.target is None}
        actual = [(n, k, None if n in untargeted else t) for n, k, t in rendered]
        if actual != [(e.name, e.kind, e.target) for e in expected]:
            out.fail("signature", "placeholders differ from expect.placeholders")


def check_hierarchy_structure(
    case: Case, model: torch.nn.Module, unflat: torch.nn.Module, eager: Eager, out: Outcome
) -> None:
    """Everything hierarchy verifies except outputs (compared with the runs)."""
    unflat_named = list(unflat.named_modules(remove_duplicate=False))
    eager_named = list(model.named_modules(remove_duplicate=False))
    names = [n for n, _ in unflat_named if n]
    expected = case.expect.modules
    if names != (expected if expected is not None else [n for n, _ in eager_named if n]):
        out.fail("hierarchy", "module FQNs differ")
    eager_mods, unflat_mods = dict(eager_named), dict(unflat_named)
    common = [n for n in eager_mods if n and n in unflat_mods]
    for i, a in enumerate(common):
        for b in common[i + 1 :]:
            if (eager_mods[a] is eager_mods[b]) != (unflat_mods[a] is unflat_mods[b]):
                out.fail("hierarchy", f"{a} / {b}: sharing differs")
    want, got = model.state_dict(), unflat.state_dict()
    if want.keys() != got.keys():
        out.fail("hierarchy", "state_dict keys differ")
    for key in want.keys() & got.keys():
        if not trees_close(want[key], got[key], EXACT):
            out.fail("hierarchy", f"state_dict[{key!r}] differs")
    unflat_buffers = {n for n, _ in unflat.named_buffers(remove_duplicate=False)}
    for name, _ in model.named_buffers(remove_duplicate=False):
        if name not in want and (name not in unflat_buffers or name in got):
            out.fail("hierarchy", f"non-persistent buffer {name} changed kind")
    nodes: Counter[int] = Counter()
    for prefix, module in unflat.named_modules():
        graph = getattr(module, "graph", None)
        if not isinstance(graph, torch.fx.Graph):
            continue
        for node in graph.nodes:
            if node.op == "call_module":
                try:
                    nodes[id(module.get_submodule(node.target))] += 1
                except AttributeError:
                    out.fail("hierarchy", f"call_module {prefix}.{node.target} has no module")
    if eager.call_counts is None:
        return
    module_groups = groups_of(eager_named)
    reported: set[str] = set()
    for name, calls in eager.call_counts.items():
        if name in reported or name not in unflat_mods:
            continue
        group = module_groups[name]
        reported.update(group)
        copies = {id(unflat_mods[n]) for n in group if n in unflat_mods}
        if sum(nodes[c] for c in copies) != calls:
            out.fail("hierarchy", f"{name}: call_module nodes != eager calls")


def check_recorded_mutations(
    case: Case,
    decomposed: ExportedProgram,
    eager: Eager,
    tensor_groups: dict[str, tuple[str, ...]],
    inputs: Inputs,
    out: Outcome,
) -> None:
    signature = decomposed.graph_signature
    buffers = set(signature.buffers_to_mutate.values())
    params = set(getattr(signature, "parameters_to_mutate", {}).values())
    recorded = {alias for fqn in buffers | params for alias in tensor_groups[fqn]}
    if recorded != eager.mutated_state:
        out.fail("mutation", "recorded state mutations differ from eager's")
    paths = [p for p, _ in flat_inputs(inputs)]
    path_of = dict(zip(signature.user_inputs, paths, strict=False))
    if {path_of.get(n, n) for n in signature.user_inputs_to_mutate.values()} != (
        eager.mutated_inputs
    ):
        out.fail("mutation", "recorded input mutations differ from eager's")
    expected = case.expect.mutated_buffers
    if expected is not None and set(expected) != buffers:
        out.fail("mutation", "expect.mutated_buffers differs")


def run_side(
    label: str,
    module: torch.nn.Module,
    case: Case,
    inputs: Inputs,
    eager: Eager,
    lifted: set[str],
    tensor_groups: dict[str, tuple[str, ...]],
    compares: dict[str, int],
    out: Outcome,
) -> None:
    """Call ``module`` once per step any check needs; each check compares its own steps.

    ``compares`` maps a check to the steps it compares (``hierarchy``: outputs of
    the first; ``parity``: outputs; ``mutation``: outputs, state and inputs).
    """
    tol = Tol(case.expect.parity.atol, case.expect.parity.rtol)
    mutation_steps = compares.get("mutation", 0)
    mutation_diverged = False
    for index in range(max(compares.values())):
        try:
            output, used = call(module, inputs, case.seed, eager=False)
        except Exception as exc:
            for check, steps in compares.items():
                if index < steps:
                    out.fail(check, f"{label} raised {type(exc).__name__}")
            return
        want = eager.steps[index]
        outputs_ok = trees_close(want.output, output, tol)
        for check in ("hierarchy", "parity"):
            if index < compares.get(check, 0) and not outputs_ok:
                out.fail(check, f"{label}: output of step {index + 1} differs")
        if index < mutation_steps and not mutation_diverged:
            ok = outputs_ok and _state_agrees(want, module, lifted, tensor_groups, tol)
            ok = ok and _inputs_agree(want, used, tol)
            if not ok:
                out.fail("mutation", f"{label}: diverges after step {index + 1}")
                mutation_diverged = True


def _state_agrees(
    want: Step,
    module: torch.nn.Module,
    lifted: set[str],
    groups: dict[str, tuple[str, ...]],
    tol: Tol,
) -> bool:
    assert want.state is not None
    got = module_state(module)
    for fqn, value in want.state.items():
        held = next((got[a] for a in groups.get(fqn, (fqn,)) if a in got), None)
        if held is None:
            if fqn in lifted:
                return False
            continue
        if not leaf_close(value, held, tol):
            return False
    return True


def _inputs_agree(want: Step, used: Inputs, tol: Tol) -> bool:
    assert want.inputs is not None
    got = dict(flat_inputs(used))
    return all(
        trees_close(value, got.get(path), tol)
        for path, value in want.inputs.items()
        if isinstance(value, torch.Tensor)
    )


def run_capture(
    case: Case,
    capture: str,
    model: torch.nn.Module,
    inputs: Inputs,
    eager: Eager,
    tensor_groups: dict[str, tuple[str, ...]],
) -> Outcome:
    out = Outcome()
    checks = set(selected_checks(case))
    try:
        args, kwargs = clone_inputs(inputs)
        ep = torch.export.export(
            copy.deepcopy(model), args, kwargs, strict=capture == "export-strict"
        )
    except Exception as exc:
        for check in checks:
            out.fail(check, f"export raised {type(exc).__name__}")
        return out
    if "signature" in checks:
        check_signature(case, capture, model, ep, inputs, out)

    mutation = case.expect.mutation_steps if "mutation" in checks else 0
    parity = case.expect.parity.steps if "parity" in checks else 0
    hierarchy = 1 if "hierarchy" in checks else 0
    # Who runs, how many steps each check compares on it. Every runner gets state of its own.
    plan: dict[str, dict[str, int]] = {}
    if hierarchy or mutation or parity:
        plan["unflatten(ep)"] = {"hierarchy": hierarchy, "mutation": mutation, "parity": parity}
    if parity:
        plan["decomposed"] = {"parity": parity}
    if mutation or parity:
        # The program users ship: saved and loaded again (the plugin's default `save`).
        plan["saved and loaded"] = {"mutation": mutation, "parity": parity}
        plan["ep.module()"] = {"mutation": mutation, "parity": parity}
    plan = {k: {c: n for c, n in v.items() if n} for k, v in plan.items()}
    runners = list(plan)

    def program_for(runner: str | None) -> ExportedProgram:
        """A private copy of ``ep`` unless ``runner`` is the last one (or runs nothing)."""
        if runner is not None and runner == runners[-1]:
            return ep
        return copy.deepcopy(ep)

    lifted = {
        alias
        for spec in ep.graph_signature.input_specs
        if spec.kind in STATE_KINDS and spec.target
        for alias in tensor_groups.get(spec.target, (spec.target,))
    }
    decomposed: ExportedProgram | None = None
    if mutation or parity:
        try:
            # Decomposition shares the program's storage: it needs a copy only if it runs.
            source = program_for("decomposed") if parity else ep
            decomposed = source.run_decompositions()
        except Exception as exc:
            out.fail("mutation", f"run_decompositions raised {type(exc).__name__}")
            out.fail("parity", f"run_decompositions raised {type(exc).__name__}")
        if decomposed is not None and mutation:
            check_recorded_mutations(case, decomposed, eager, tensor_groups, inputs, out)

    for runner, compares in plan.items():
        try:
            if runner == "unflatten(ep)":
                module = torch.export.unflatten(program_for(runner))
                if hierarchy:
                    check_hierarchy_structure(case, model, module, eager, out)
            elif runner == "decomposed":
                if decomposed is None:
                    continue
                module = decomposed.module()
            elif runner == "saved and loaded":
                # Saving reads ``ep`` and loading makes tensors of its own: no copy.
                module = saved_and_loaded(ep).module()
            else:
                module = program_for(runner).module()
        except Exception as exc:
            for check in compares:
                out.fail(check, f"building {runner} raised {type(exc).__name__}")
            continue
        run_side(runner, module, case, inputs, eager, lifted, tensor_groups, compares, out)
    return out


# --- driver --------------------------------------------------------------------------------


@dataclass
class Totals:
    cases: int = 0
    captures: int = 0
    checks: int = 0
    failures: list[str] = field(default_factory=list)


def export_captures(case: Case) -> list[str]:
    """The floor writes out the export paths only (the plugin side: export_paths.py)."""
    return [capture for capture in case.captures if capture in ("export", "export-strict")]


def selected_checks(case: Case) -> list[str]:
    """The case's checks that run on CPU (device-only checks are not collected there)."""
    return [check for check in case.checks if check in CHECKS]


def run_case(case: Case, totals: Totals) -> None:
    checks = selected_checks(case)
    if not checks:  # only checks the floor has no counterpart of (export_paths.py drops them)
        return
    totals.cases += 1
    mutation = case.expect.mutation_steps if "mutation" in checks else 0
    parity = case.expect.parity.steps if "parity" in checks else 0
    seed_everything(case.seed)
    try:
        model = build_model(case)
        inputs = build_inputs(case)
        eager = eager_reference(case, model, inputs, max(1, mutation, parity), mutation)
    except Exception as exc:
        for capture in export_captures(case):
            for check in checks:
                totals.failures.append(f"{case.name}::{check}[{capture}] case/eager: {exc!r}")
        return
    tensor_groups = groups_of(module_state(model).items())
    for capture in export_captures(case):
        totals.captures += 1
        totals.checks += len(checks)
        outcome = run_capture(case, capture, model, inputs, eager, tensor_groups)
        for check, problem in outcome.failed.items():
            totals.failures.append(f"{case.path.name}::{case.name}::{check}[{capture}] {problem}")


def case_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*.yaml") if p.is_file())
        else:
            files.append(path)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path, help="case files or directories")
    parser.add_argument("-v", "--verbose", action="store_true", help="list what does not pass")
    parser.add_argument("--ops", action="store_true", help="count the expensive operations")
    args = parser.parse_args(argv)
    # torch's deprecations against itself (pytree LeafSpec on deepcopy); the plugin hides them too
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=UserWarning, module="torch")
    if args.ops:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import opcount

        opcount.install()
    totals = Totals()
    for path in case_files(args.paths):
        for entry in load_case_file(path.resolve()):
            if entry.case is None:
                totals.failures.append(f"{path.name}::{entry.name} invalid: {entry.error}")
                continue
            run_case(entry.case, totals)
    wall = time.perf_counter() - STARTED
    if args.verbose:
        for failure in totals.failures:
            print(f"NOT PASSED {failure}")
    if args.ops:
        spent = opcount.seconds()
        for name, value in opcount.counts().items():
            print(f"ops {name} {value} {spent[name]}")
        collector = opcount.gc_stats()
        print(f"gc {collector['seconds']} {collector['collections']} {collector['full']}")
    print(
        f"floor: {totals.cases} cases, {totals.captures} captures, {totals.checks} checks, "
        f"{len(totals.failures)} not passed, wall {wall:.2f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
