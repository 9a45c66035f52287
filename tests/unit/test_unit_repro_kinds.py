"""Which reproduction a finding gets (``repro/kinds.py``), and that each kind's script is
Python: mode, the hierarchy's parts, moved, loaded, and a lowered program's values."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_exportcheck.repro.hierarchy_kind import PARTS, hierarchy_parts
from pytest_exportcheck.repro.kinds import kind_for
from pytest_exportcheck.repro.script import Finding, script_text
from pytest_exportcheck.spec import load_case_file

CALLS = (
    "'aux': eager called it 1 time(s), the unflattened module calls it 0 time(s) per "
    "forward (call_module nodes)"
)
ALONE = "head (Head): the return type changed: u.head(float32[2, 4]) returns Tensor"
SHARED = "'enc' and 'dec' are one module in eager but two after unflatten"
OUTPUT = "output: 8 / 8 elements outside tolerance"


def _cases() -> list:
    return [c.case for c in load_case_file(Path("cases/dynamic.yaml")) if c.case is not None]


def test_a_hierarchy_script_runs_the_parts_its_findings_come_from() -> None:
    assert hierarchy_parts(()) == (PARTS, None)  # an XPASS: every part
    assert hierarchy_parts((CALLS, ALONE + "\nmore")) == (("calls", "alone"), None)
    assert hierarchy_parts((OUTPUT, SHARED)) == (("tree", "outputs"), None)
    assert hierarchy_parts((SHARED, "something torch never said")) == (
        (),
        "something torch never said",
    )


@pytest.mark.parametrize(
    ("check", "stage", "findings", "kind"),
    [
        ("mode", "mode", (), "mode"),
        ("hierarchy", "hierarchy", (CALLS,), "hierarchy"),
        ("moved", "moved", (), "moved"),
        ("moved", "capture", (), "moved"),  # the CPU capture or the move raised
        ("loaded", "loaded", (), "loaded"),
        ("loaded", "load", (), "loaded"),
        ("lowered-aoti", "lowered-aoti", ("after call 2/3: output: differs",), "lowered"),
        ("lowered-aoti", "run", (), "lowered"),
        ("lowered-aoti", "lower", (), "lower"),
        ("parity", "parity", (), "parity"),
    ],
)
def test_each_written_finding_gets_its_kind(
    check: str, stage: str, findings: tuple[str, ...], kind: str
) -> None:
    assert kind_for(_cases()[0], "export", check, stage, findings) == (kind, "")


@pytest.mark.parametrize(
    ("check", "stage", "findings", "why"),
    [
        ("hierarchy", "hierarchy", ("new words",), "the hierarchy finding 'new words'"),
        (
            "lowered-aoti",
            "lowered-aoti",
            ("at nodim=9 (above nodim's max 8): the program accepted a size",),
            'the lowered finding "at nodim=9',
        ),
        ("lowered-executorch", "lowered-executorch", ("after call 1/1: output",), "values"),
        ("mode", "mode", (), "dynamo capture"),
    ],
)
def test_an_unwritten_finding_says_why(
    check: str, stage: str, findings: tuple[str, ...], why: str
) -> None:
    capture = "dynamo" if check == "mode" else "export"
    kind, reason = kind_for(_cases()[0], capture, check, stage, findings)
    assert kind is None and why in reason, reason


@pytest.mark.parametrize("kind", ["mode", "hierarchy", "moved", "loaded", "lowered"])
def test_every_new_kind_writes_a_script_python_reads(kind: str, tmp_path: Path) -> None:
    check = {"lowered": "lowered-aoti"}.get(kind, kind)
    for case in _cases()[:2]:
        finding = Finding(
            nodeid="n", case=case, capture="export", check=check, device="cpu", kind=kind,
            message="m", findings=(CALLS,), saved=tmp_path,
        )  # fmt: skip
        text = script_text(finding)
        compile(text, "repro.py", "exec")
        assert "import pytest" not in text and "pytest_exportcheck" not in text


ABOVE = (
    "at batch=17 (above batch's max 16): the program lowered to {target} accepted a size "
    "outside the declared range [1, 16] and computed a result"
)


def _lowering(name: str):
    cases = [c.case for c in load_case_file(Path("cases/lowering.yaml")) if c.case is not None]
    return next(case for case in cases if case.name == name)


@pytest.mark.parametrize("target", ["aoti", "onnx"])
@pytest.mark.parametrize(
    ("name", "findings"),
    [
        ("lowering_batchnorm_train", ("after call 1/1: output: 8 / 8 elements outside tolerance",)),
        ("lowering_dynamic_batch", (ABOVE,)),
        (
            "lowering_scalar_output",
            (
                "after call 1/1: output: eager gives int, lowered to {target} gives Tensor",
                "at dim1_x=1 (min): output: eager gives int, lowered to {target} gives Tensor",
            ),
        ),
    ],
)
def test_a_lowered_program_at_its_sizes_and_in_onnx_gets_a_script(
    name: str, findings: tuple[str, ...], target: str
) -> None:
    case = _lowering(name)
    findings = tuple(f.format(target=target) for f in findings)
    check = f"lowered-{target}"
    assert kind_for(case, "export", check, check, findings) == ("lowered", "")
    finding = Finding(
        nodeid="n", case=case, capture="export", check=check, device="cpu", kind="lowered",
        message="m", findings=findings,
    )  # fmt: skip
    text = script_text(finding)
    compile(text, "repro.py", "exec")
    assert "import pytest" not in text and "pytest_exportcheck" not in text
    sized = [f for f in findings if f.startswith("at ")]
    assert ("def inputs_at_0():" in text) == bool(sized)
    for f in sized:
        assert repr(f) in text
    if target == "onnx":
        assert "onnxruntime.InferenceSession(path" in text and "KEEPS_STATE = False" in text


def test_a_lowered_finding_at_sizes_it_cannot_draw_says_why() -> None:
    case = _lowering("lowering_dynamic_batch")
    cannot = "at batch=17 (above batch's max 16): the inputs cannot be made at this size: x"
    kind, why = kind_for(case, "export", "lowered-onnx", "lowered-onnx", (cannot,))
    assert kind is None and "at batch=17" in why, why
