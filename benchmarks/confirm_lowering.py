"""Each expected failure of ``cases/lowering.yaml``, again outside the check.

The case's model and inputs as the plugin builds them, its ``export`` capture, then
the target's own calls (``aoti_compile_and_package`` / ``aoti_load_package``,
``to_edge(ep).to_executorch()`` and the portable runtime, ``torch.onnx.export`` and
ONNX Runtime), with no part of the check in between; each line says what plain torch
does (benchmarks/README.md, "Lowering targets"). Needs the ``lowering`` extra.

    PYTHONPATH=. python benchmarks/confirm_lowering.py [CASE ...]   # from the repository root
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
from torch.utils import _pytree as pytree

from pytest_exportcheck.capture import capture
from pytest_exportcheck.model.subject import Subject
from pytest_exportcheck.spec import load_case_file

# case -> the targets its xfails name
EXPECTED = {
    "lowering_batchnorm_train": ["executorch", "onnx"],
    "lowering_kv_cache": ["executorch"],
    "lowering_step_counter": ["aoti"],
    "lowering_dynamic_batch": ["aoti", "onnx"],
    "lowering_derived_dim": ["aoti", "onnx"],
    "lowering_dict_output": ["aoti", "onnx"],
    "lowering_custom_op": ["executorch", "onnx"],
    "lowering_scalar_output": ["aoti", "executorch", "onnx"],
}
# A size above each dynamic case's max: (the input's shape there)
ABOVE_MAX = {"lowering_dynamic_batch": (17, 4), "lowering_derived_dim": (2, 18)}


def aoti(ep: Any, directory: Path) -> Any:
    from torch._inductor import aoti_compile_and_package, aoti_load_package

    path = aoti_compile_and_package(ep, package_path=str(directory / "p.pt2"))
    return aoti_load_package(path)


def executorch(ep: Any, directory: Path) -> Any:
    from executorch.exir import to_edge
    from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer

    method = _load_for_executorch_from_buffer(to_edge(ep).to_executorch().buffer)
    return lambda *args: list(method.forward(tuple(pytree.tree_leaves(args))))


def onnx(ep: Any, directory: Path) -> Any:
    import onnxruntime

    path = directory / "p.onnx"
    torch.onnx.export(ep, f=str(path), dynamo=True)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    # ONNX keeps only the inputs the graph reads: the first ones, by name.
    return lambda *args: session.run(
        None, dict(zip(names, [a.numpy() for a in args][: len(names)], strict=True))
    )


TARGETS = {"aoti": aoti, "executorch": executorch, "onnx": onnx}


def main() -> None:
    wanted = set(sys.argv[1:])  # case names; none: every case with an expected failure
    for entry in load_case_file(Path("cases") / "lowering.yaml"):
        case = entry.case
        if wanted and case.name not in wanted:
            continue
        for target in EXPECTED.get(case.name, []):
            stage = "lower"
            try:
                subject = Subject(case, "cpu")
                ep = capture("export", subject).program
                with tempfile.TemporaryDirectory() as directory:
                    lowered = TARGETS[target](ep, Path(directory))
                    stage = "run"
                    calls = [lowered(*subject.inputs_copy()[0]) for _ in range(3)]
                    model = subject.model_copy()  # one model over three calls, as the target
                    with torch.no_grad():
                        eager = [model(*subject.inputs_copy()[0]) for _ in range(3)]
                    said = f"ran: call 1 {summary(calls[0])}; call 3 {summary(calls[2])}"
                    said += f"; eager's call 1 {summary(eager[0])}, call 3 {summary(eager[2])}"
                    if case.name in ABOVE_MAX:
                        big = torch.randn(ABOVE_MAX[case.name])
                        refused = refuses(ep.module(), big)
                        said += f"; above max: ep.module() {refused}, {target} "
                        said += f"{refuses(lowered, big)}"
                print(f"{case.name} {target}: {said}")
            except Exception as exc:
                first = (plain(str(exc)).splitlines() or [""])[0][:160]
                root = exc
                while root.__cause__ is not None:
                    root = root.__cause__
                cause = "" if root is exc else f" (cause {type(root).__name__}: "
                cause += "" if root is exc else f"{plain(str(root)).splitlines()[0][:160]})"
                print(f"{case.name} {target}: [{stage}] {type(exc).__name__}: {first}{cause}")


def plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text).strip()  # torch.onnx colors its messages


def summary(output: Any) -> str:
    leaves = pytree.tree_leaves(output)
    shown = []
    for leaf in leaves[:3]:
        if isinstance(leaf, torch.Tensor):
            shown.append(f"Tensor{tuple(leaf.shape)} sum {float(leaf.double().sum()):.4g}")
        elif hasattr(leaf, "shape"):  # numpy
            shown.append(f"array{tuple(leaf.shape)} sum {float(leaf.sum()):.4g}")
        else:
            shown.append(f"{type(leaf).__name__} {leaf!r}")
    return "[" + ", ".join(shown) + "]"


def refuses(call: Any, x: torch.Tensor) -> str:
    try:
        out = call(x)
    except Exception as exc:
        return f"refuses ({type(exc).__name__}: {str(exc).splitlines()[0][:80]})"
    return f"computes {summary(out)}"


if __name__ == "__main__":
    main()
