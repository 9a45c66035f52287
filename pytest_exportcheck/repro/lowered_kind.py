"""The ``lowered`` reproduction: a lowered program that loads and runs, against eager.

As ``checks/lowered.py`` at the case's own inputs: the program is lowered as the
item lowers it, loaded (the script is a fresh interpreter: the item's in-process
load and its fresh-process load are the same load here), and called over
``expect.parity.steps`` calls (two at least where forward changes state), each on
fresh copies of the inputs after seeding; its outputs, and the inputs as the calls
left them, are compared with eager's under the case's tolerance. A load or call that
raises is the finding too. Written for AOTInductor and ONNX (exported and saved as
the item does, run by ONNX Runtime's CPU provider, called as ``lowering/onnx.py``'s
``_Named`` calls it); a ``dynamic:`` case's findings at other sizes are the same
program called there (``lowered_sizes.py``).
"""

from __future__ import annotations

from pytest_exportcheck.repro.lowered_sizes import at_sizes
from pytest_exportcheck.spec import Case

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
    "onnx": (
        '''
SPECS = {}  # the program's call specs, by the path of its ONNX model


def packaged(ep, where):
    """torch.onnx.export of the program, saved, as the item exports it; its call specs
    read first (the exporter changes the program it is given)."""
    specs = (ep.call_spec.in_spec, ep.call_spec.out_spec)
    path = os.path.join(where, "model.onnx")
    torch.onnx.export(ep, dynamo=True).save(path)
    SPECS[path] = specs
    return path


class Named:
    """An ONNX Runtime session called as the program is: tree inputs in, in the order of
    the program's user inputs, by the model's input names; flat outputs into the
    program's output structure."""

    def __init__(self, session, in_spec, out_spec):
        self.session, self.in_spec, self.out_spec = session, in_spec, out_spec

    def __call__(self, *args, **kwargs):
        from torch.export._tree_utils import reorder_kwargs

        flat, _ = pytree.tree_flatten((args, reorder_kwargs(kwargs, self.in_spec)))
        tensors = [leaf for leaf in flat if isinstance(leaf, torch.Tensor)]
        names = [model_input.name for model_input in self.session.get_inputs()]
        if len(names) != len(tensors):
            raise RuntimeError(f"the ONNX model takes {len(names)} inputs ({', '.join(names)}); "
                               f"the program was given {len(tensors)} tensors")
        feed = dict(zip(names, [t.detach().cpu().numpy() for t in tensors]))
        outputs = [torch.from_numpy(value) for value in self.session.run(None, feed)]
        return pytree.tree_unflatten(outputs, self.out_spec)


def opened(path):
    """onnxruntime.InferenceSession with the CPU provider, as the item loads the model."""
    import onnxruntime

    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    return Named(session, *SPECS[path])
''',
        False,
    ),
}
# The finding heads (``checks/lowered.py``) a script shows: a step's comparison, the
# fresh process's load, call or comparison; findings at sizes are ``lowered_sizes.py``'s.
WRITTEN_HEADS = ("after call ", "[load] ", "[run] ")


def lowered_kind(
    case: Case, target: str, stage: str, findings: tuple[str, ...]
) -> tuple[str | None, str]:
    """("lowered", "") where a script shows ``findings`` of the lowering to ``target``."""
    if target not in LOADERS:
        return None, f"the lowering to {target}'s values are not written yet"
    if stage in ("load", "run"):
        return "lowered", ""
    sized, why = at_sizes(case, findings)
    if why is not None:
        return None, why
    for finding in findings:
        head = (finding.splitlines() or [""])[0]
        if finding not in sized and not head.startswith(WRITTEN_HEADS):
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
        # after the steps, as the item: each size another call of the same program
        sized = [(entry, lowered_at(model, program, label, entry)) for entry in SIZED]
    found, gone = [], []
    for step, (want, got) in enumerate(zip(eager, runs), start=1):
        problems = [f"output: {m}" for m in [differs(want[0], got[0])] if m]
        if (m := differs(want[2], got[2])) is not None:
            problems.append(f"inputs after the call: {m}")
        if problems:
            found.append(f"{label}, after call {step}/{steps}:\\n" + "\\n".join(problems))
            break
    for entry, (shown, told) in sized:
        (found if shown else gone).append(f"{entry['finding']}\\n{told}")
    for text in gone:
        print(f"not shown in plain torch: {text}\\n")
    if found:
        print("reproduced: " + "\\n\\n".join(found))
        return 1
    print(f"not reproduced: {label} agrees with eager over {steps} call(s)"
          + (f", and at none of the {len(gone)} size(s) does what the item saw" if gone else ""))
    return 0
"""
