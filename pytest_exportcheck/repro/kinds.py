"""What a reproduction compares, per finding kind: the ``main()`` of its script.

- ``capture``: the capture call raised (any check's item fails at ``[capture]``): the
  script makes the same call and reproduces when it raises the same exception type;
- ``parity``: every program the item ran, called as the item called it, against eager
  (``torch.testing.assert_close`` with the case's ``atol`` / ``rtol``);
- ``mutation``: the mutations the decomposed program records against what one eager
  call changed (parameters, buffers, tensor inputs), ``expect.mutated_buffers``, then
  outputs, state and inputs of every stateful program after each of the steps;
- ``shapes``: the sizes the findings name, eager and each program run there, and the
  placeholder's dims and ``ep.range_constraints`` (``shapes_kind.py``);
- ``signature``: ``graph_signature.input_specs`` against the eager model and
  ``expect.placeholders`` (``signature_kind.py``);
- ``hierarchy`` (``hierarchy_kind.py``), ``mode`` (``mode_kind.py``), ``moved``
  (``moved_kind.py``), ``loaded`` (``loaded_kind.py``), ``lowered`` (a lowered
  program's values, ``lowered_kind.py``), ``lower`` (the lowering raised).

Every other finding has no plain reproduction yet: :func:`kind_for` says why.
"""

from __future__ import annotations

from pytest_exportcheck.repro import shapes_kind, signature_kind
from pytest_exportcheck.repro.hierarchy_alone import ALONE, OUTPUTS
from pytest_exportcheck.repro.hierarchy_calls import CALLS
from pytest_exportcheck.repro.hierarchy_kind import HIERARCHY_MAIN, TREE, hierarchy_parts
from pytest_exportcheck.repro.loaded_kind import LOADED_MAIN
from pytest_exportcheck.repro.lowered_kind import LOWERED_MAIN, lowered_kind
from pytest_exportcheck.repro.lowered_sizes import LOWERED_SIZES
from pytest_exportcheck.repro.mode_kind import MODE_MAIN
from pytest_exportcheck.repro.moved_kind import MOVED_MAIN
from pytest_exportcheck.spec import Case

# The capture calls written in plain torch (``capture/``), on a copy of the model.
CAPTURES = {
    "export": "torch.export.export(model, args, kwargs, strict=False{extra})",
    "export-strict": "torch.export.export(model, args, kwargs, strict=True{extra})",
    "dynamo-legacy": "torch._dynamo.export(model{dynamo_extra})(*args, **kwargs)",
    # It takes the constraints export derives from dynamic shapes, not the shapes.
    "dynamo": "torch._dynamo.functional_export.dynamo_graph_capture_for_export("
    "model{constraints})(*args, **kwargs)",
}
EXPORTS = ("export", "export-strict")
DYNAMOS = ("dynamo", "dynamo-legacy")
# The labels of a Dynamo capture's ways of running (capture/dynamo.py): the graph as the
# model is called, and the graph with the eager model's state fed to its placeholders.
GRAPH_MODULE, FED_GRAPH = "graph module", "graph fed eager state"


def kind_for(
    case: Case, capture: str, check: str, stage: str | None, findings: tuple[str, ...] = ()
) -> tuple[str | None, str]:
    """(the kind of reproduction, or None, and why none where None). ``findings``: the
    check's, where it ran; a finding that its comparison proves nothing (``vacuous:``)
    is about the case's inputs, not a divergence torch could show."""
    if findings and all(f.startswith("vacuous:") for f in findings):
        return None, "a vacuous verdict is about the case's signal, not a divergence"
    if check == "consistency" == stage:
        return None, CONSISTENCY_NOT_WRITTEN
    if capture not in CAPTURES:
        return None, f"the {capture} capture is not written yet"
    # moved: the CPU capture, then the move (a failure of either is the item's capture
    # stage); loaded: a stored program, loaded (``load``) and called (``run``).
    own_stages = {"moved": ("capture", "moved"), "loaded": ("loaded", "load", "run")}
    if capture in EXPORTS and stage in own_stages.get(check, ()):
        return check, ""
    if stage == "capture":
        return "capture", ""
    if check.startswith("lowered-") and capture in EXPORTS:
        target = check.removeprefix("lowered-")
        if stage == "lower":
            if target not in LOWERINGS:
                return None, f"the lowering to {target} is not written yet"
            return "lower", ""
        if stage in (check, "load", "run"):
            return lowered_kind(case, target, stage, findings)
    if capture in DYNAMOS and stage == check and check in ("parity", "shapes"):
        # The graph Dynamo captured, run as the model is (programs.GRAPH_PROGRAMS); its
        # other way of running, fed the eager model's state, is not written: a finding
        # of that one alone would read "not reproduced" of a true divergence.
        heads = [f.splitlines()[0] for f in findings if f]
        if any(FED_GRAPH in head and GRAPH_MODULE not in head for head in heads):
            fed = f"the {check} finding of a {capture} graph fed eager state"
            return None, f"{fed} is not written yet"
        why = shapes_kind.unwritten_on_graph(case, findings, capture) if check == "shapes" else None
        return (None, why) if why else (check, "")
    if capture == "dynamo":
        return None, f"the {stage or check} finding of a dynamo capture is not written yet"
    if stage == "hierarchy" == check and capture in EXPORTS:
        _, other = hierarchy_parts(findings)
        if other is not None:
            return None, f"the hierarchy finding {other[:80]!r} is not written yet"
        return "hierarchy", ""
    if stage == check and check in ("parity", "mutation", "mode") and capture in EXPORTS:
        return check, ""
    if stage == "shapes" == check and capture in EXPORTS:
        why = shapes_kind.unwritten(case, findings)
        return (None, why) if why else (check, "")
    if stage == "signature" == check and capture in EXPORTS:
        why = signature_kind.unwritten(findings)
        return (None, why) if why else (check, "")
    if stage == check and check in ("shapes", "signature"):  # Dynamo's graphs: another call
        return None, f"the {check} finding of a {capture} capture is not written yet"
    return None, f"the {stage or check} finding of {check} is not written yet"


# A finding that is an exception torch raised: the same call, the same exception type.
RAISED_MAIN = """
def main():
    model, inputs = built()
    {prepare}try:
        {call}
    except Exception as exc:
        raised = type(exc).__name__
        if EXPECTED_ERROR in (None, raised):
            print(f"reproduced: the {what} raised {{raised}}: {{exc}}")
            return 1
        print(f"not reproduced: the {what} raised {{raised}}, the item's raised {{EXPECTED_ERROR}}")
        print(exc)
        return 0
    print(f"not reproduced: the {what} succeeded (the item's raised {{EXPECTED_ERROR}})")
    return 0
"""
CAPTURE_MAIN = RAISED_MAIN.format(prepare="", call="capture(model, inputs)", what="capture")
LOWER_MAIN = RAISED_MAIN.format(
    prepare="ep = capture(model, inputs)\n    ", call="lower(ep)", what="lowering"
)

COMPARE = '''
def differs(want, got):
    """torch.testing.assert_close's message, or None when within the case's tolerance
    (a program called on another device is compared on the CPU, as the item compares it)."""
    try:
        torch.testing.assert_close(got, want, atol=ATOL, rtol=RTOL, equal_nan=True,
                                   check_device=False)
    except (AssertionError, TypeError, ValueError) as exc:
        return str(exc)
    return None
'''

PARITY_MAIN = """
def main():
    model, inputs = built()
    eager = calls(copy.deepcopy(model), inputs, STEPS, eager=True)
    ep = capture(model, inputs)
    found = []
    for label, make in PROGRAMS:
        try:  # a program that cannot be made or run is a finding, as the item says
            runs = calls(make(ep, inputs), inputs, STEPS, eager=False)
        except Exception as exc:
            found.append(f"{label} raised {type(exc).__name__}: {exc}")
            continue
        for step, ((want, _, _), (got, _, _)) in enumerate(zip(eager, runs), start=1):
            message = differs(want, got)
            if message is not None:
                found.append(f"{label}, step {step}/{STEPS}: the output differs from eager's:"
                             f"\\n{message}")
                break
    if found:
        print("reproduced: " + "\\n\\n".join(found))
        return 1
    print(f"not reproduced: every program matched eager over {STEPS} step(s)")
    return 0
"""

MUTATION_MAIN = '''
def changed(before, after):
    return before.shape != after.shape or not torch.equal(before, after)


def eager_mutations(model, inputs):
    """The parameters and buffers (every name of a shared one) and the tensor inputs
    one eager call changes, on copies of their own."""
    probe = copy.deepcopy(model)
    named = [*probe.named_parameters(remove_duplicate=False),
             *probe.named_buffers(remove_duplicate=False)]
    before = {name: t.detach().clone() for name, t in named}
    args, kwargs = cloned(inputs)
    given = [t.detach().clone() if isinstance(t, torch.Tensor) else t
             for t in pytree.tree_leaves((args, kwargs))]
    seed_everything(SEED)
    probe(*args, **kwargs)
    after = dict([*probe.named_parameters(remove_duplicate=False),
                  *probe.named_buffers(remove_duplicate=False)])
    state = {n for n, t in before.items() if n not in after or changed(t, after[n].detach())}
    leaves = pytree.tree_leaves((args, kwargs))
    inputs_changed = {i for i, (old, new) in enumerate(zip(given, leaves))
                      if isinstance(new, torch.Tensor) and changed(old, new.detach())}
    return state, inputs_changed


def aliases(model):
    """Every name of each parameter and buffer, by the tensor it names."""
    by_tensor = {}
    for name, t in [*model.named_parameters(remove_duplicate=False),
                    *model.named_buffers(remove_duplicate=False)]:
        by_tensor.setdefault(id(t), []).append(name)
    return {name: names for names in by_tensor.values() for name in names}


def main():
    model, inputs = built()
    found = []
    state, inputs_changed = eager_mutations(model, inputs)
    ep = capture(model, inputs)
    try:
        signature = copy.deepcopy(ep).run_decompositions().graph_signature
    except Exception as exc:
        found.append(f"cannot read mutation records: run_decompositions() raised "
                     f"{type(exc).__name__}: {exc}")
        return _stepped(model, ep, inputs, found)
    buffers = set(signature.buffers_to_mutate.values())
    parameters = set(getattr(signature, "parameters_to_mutate", {}).values())
    named = aliases(model)
    recorded = {alias for fqn in buffers | parameters for alias in named.get(fqn, [fqn])}
    if state - recorded:
        found.append(f"eager mutated {sorted(state - recorded)} but the decomposed program "
                     f"does not record it (buffers_to_mutate: {sorted(buffers)})")
    if recorded - state:
        found.append(f"the decomposed program records mutation of {sorted(recorded - state)} "
                     "but eager left it unchanged")
    users = list(signature.user_inputs)
    recorded_inputs = {users.index(n) for n in signature.user_inputs_to_mutate.values()}
    if recorded_inputs != inputs_changed:
        found.append(f"user-input mutations differ (flat input positions): eager mutated "
                     f"{sorted(inputs_changed)}, the decomposed program records "
                     f"{sorted(recorded_inputs)}")
    if EXPECTED_BUFFERS is not None and set(EXPECTED_BUFFERS) != buffers:
        found.append(f"expect.mutated_buffers is {sorted(EXPECTED_BUFFERS)}, the decomposed "
                     f"program records {sorted(buffers)}")
    return _stepped(model, ep, inputs, found)


def _stepped(model, ep, inputs, found):
    """Outputs, state and inputs of every stateful program after each step, against eager."""
    eager = calls(copy.deepcopy(model), inputs, STEPS, eager=True)
    for label, make in PROGRAMS:
        try:
            runs = calls(make(ep, inputs), inputs, STEPS, eager=False)
        except Exception as exc:
            found.append(f"running {label} raised {type(exc).__name__}: {exc}")
            continue
        for step, (want, got) in enumerate(zip(eager, runs), start=1):
            problems = [f"output: {m}" for m in [differs(want[0], got[0])] if m]
            for name, value in want[1].items():
                if name not in got[1]:
                    problems.append(f"{name}: {label} has no such parameter or buffer")
                elif (m := differs(value, got[1][name])) is not None:
                    problems.append(f"{name}: {m}")
            if (m := differs(want[2], got[2])) is not None:
                problems.append(f"inputs after the call: {m}")
            if problems:
                found.append(f"{label}, after step {step}/{STEPS}:\\n" + "\\n".join(problems))
                break
    if found:
        print("reproduced: " + "\\n\\n".join(found))
        return 1
    print(f"not reproduced: mutation records, and every program over {STEPS} step(s), "
          "agree with eager")
    return 0
'''

# The lowering calls of ``lowering/``, as the items make them.
LOWERINGS = {
    "aoti": '''
def lower(ep):
    """torch._inductor.aoti_compile_and_package, as the item calls it."""
    import torch._inductor

    with tempfile.TemporaryDirectory() as where:
        torch._inductor.aoti_compile_and_package(
            ep, package_path=os.path.join(where, "program.pt2"),
            inductor_configs={"fallback_random": True},
        )
''',
    "onnx": '''
def lower(ep):
    """torch.onnx.export of the program, as the item calls it."""
    torch.onnx.export(ep, dynamo=True)
''',
    "executorch": '''
def lower(ep):
    """ExecuTorch's Edge dialect, then its program, as the item makes them."""
    from executorch.exir import to_edge

    to_edge(ep).to_executorch()
''',
}

MAINS = {
    "capture": CAPTURE_MAIN,
    "parity": COMPARE + PARITY_MAIN,
    "shapes": "\n\n".join([COMPARE, shapes_kind.SIZE_HELPERS, shapes_kind.SHAPES_MAIN]),
    "signature": signature_kind.SIGNATURE_MAIN,
    "mutation": COMPARE + MUTATION_MAIN,
    "hierarchy": "\n\n".join([COMPARE, TREE, CALLS, OUTPUTS, ALONE, HIERARCHY_MAIN]),
    "mode": COMPARE + MODE_MAIN,
    "moved": COMPARE + MOVED_MAIN,
    "loaded": COMPARE + LOADED_MAIN,
    "lowered": "\n\n".join([COMPARE, shapes_kind.SIZE_HELPERS, LOWERED_SIZES, LOWERED_MAIN]),
    "lower": LOWER_MAIN,
}
# What consistency compares is the plugin's own table: each capture's lifted state, mutation
# records and inputs as its adapter normalizes them (Dynamo's placeholders and records
# included), side by side; no one plain-torch call shows a row.
CONSISTENCY_NOT_WRITTEN = (
    "consistency compares the plugin's normalized summaries of several captures "
    "(Dynamo's included) side by side: not written in plain torch yet"
)
