"""The ``lowered`` reproduction: a lowered program that loads and runs, against eager.

As ``checks/lowered.py`` at the case's own inputs: the program is lowered as the
item lowers it, loaded (the script is a fresh interpreter: the item's in-process
load and its fresh-process load are the same load here), and called over
``expect.parity.steps`` calls (two at least where forward changes state), each on
fresh copies of the inputs after seeding; its outputs, and the inputs as the calls
left them, are compared with eager's under the case's tolerance. A load or call that
raises is the finding too. Written for AOTInductor; the check's findings at other
sizes of a ``dynamic:`` case are not (``lowered_sizes.py``).
"""

from __future__ import annotations

# The lowerings whose values a script compares: ``packaged(ep, where)`` and
# ``opened(path)``, as the item makes and loads the artifact, and whether it carries
# state between calls (``Lowered.keeps_state``).
LOADERS = {
    "aoti": (
        '''
def packaged(ep, where):
    """torch._inductor.aoti_compile_and_package, as the item compiles the program."""
    import torch._inductor

    path = os.path.join(where, "program.pt2")
    torch._inductor.aoti_compile_and_package(
        ep, package_path=path, inductor_configs={"fallback_random": True})
    return path


def opened(path):
    """torch._inductor.aoti_load_package: the callable a server calls."""
    import torch._inductor

    return torch._inductor.aoti_load_package(path)
''',
        True,
    ),
}
# The finding heads (``checks/lowered.py``) a script shows: a step's comparison, the
# fresh process's load, call or comparison.
WRITTEN_HEADS = ("after call ", "[load] ", "[run] ")


def lowered_kind(target: str, stage: str, findings: tuple[str, ...]) -> tuple[str | None, str]:
    """("lowered", "") where a script shows ``findings`` of the lowering to ``target``."""
    if target not in LOADERS:
        return None, f"the lowering to {target}'s values are not written yet"
    if stage in ("load", "run"):
        return "lowered", ""
    for finding in findings:
        head = (finding.splitlines() or [""])[0]
        if not head.startswith(WRITTEN_HEADS):
            return None, f"the lowered finding {head[:80]!r} is not written yet"
    return "lowered", ""


LOWERED_MAIN = """
def changed_by_forward(model, inputs):
    probe = copy.deepcopy(model)
    named = dict([*probe.named_parameters(), *probe.named_buffers()])
    before = {n: t.detach().clone() for n, t in named.items()}
    args, kwargs = cloned(inputs)
    seed_everything(SEED)
    probe(*args, **kwargs)
    return [n for n, t in before.items() if not torch.equal(t, named[n].detach())]


def main():
    model, inputs = built()
    mutated = changed_by_forward(model, inputs)
    steps = max(STEPS, 2 if mutated else 1)
    if mutated and not KEEPS_STATE:
        steps = 1  # the artifact carries no state between calls: its first call is judged
    eager = calls(copy.deepcopy(model), inputs, steps, eager=True)
    ep = capture(model, inputs)
    label = f"the program lowered to {TARGET}"
    with tempfile.TemporaryDirectory() as where:
        try:
            path = packaged(ep, where)
        except Exception as exc:  # the item's lowering did not raise: its finding is later
            print(f"not reproduced: lowering {label} raised {type(exc).__name__}: {exc}")
            return 0
        try:
            program = opened(path)
        except Exception as exc:
            print(f"reproduced: loading {label} raised {type(exc).__name__}: {exc}")
            return 1
        try:
            runs = calls(program, inputs, steps, eager=False)
        except Exception as exc:
            print(f"reproduced: calling {label} raised {type(exc).__name__}: {exc}")
            return 1
    for step, (want, got) in enumerate(zip(eager, runs), start=1):
        problems = [f"output: {m}" for m in [differs(want[0], got[0])] if m]
        if (m := differs(want[2], got[2])) is not None:
            problems.append(f"inputs after the call: {m}")
        if problems:
            print(f"reproduced: {label}, after call {step}/{steps}:\\n" + "\\n".join(problems))
            return 1
    print(f"not reproduced: {label} agrees with eager over {steps} call(s)")
    return 0
"""
