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
            ("at batch=9 (above batch's max 8): the program accepted a size",),
            'the lowered finding "at batch=9',
        ),
        ("lowered-onnx", "lowered-onnx", ("after call 1/1: output",), "onnx's values"),
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
