"""How the xdist controller judges a crash by the xfail its worker wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from pytest_exportcheck.items.expected_crashes import expected_crash_lines, for_breadcrumb, judge
from pytest_exportcheck.spec import compat
from pytest_exportcheck.spec.load import load_case_file

ROOT = Path(__file__).resolve().parents[2]

CRASH = (
    "[crashed] cases/l.yaml:12: worker gw3 died in the lowered-aoti stage of this item "
    "(killed by SIGSEGV); the process ended, so no traceback is left"
)


def written(**fields: Any) -> dict[str, Any]:
    return {"reason": "torch segfaults", "strict": True, "stages": None, "match": None,
            "at": "cases/l.yaml:20", **fields}  # fmt: skip


def test_a_crash_its_xfail_expects_is_an_xfail_with_the_crash_as_its_text() -> None:
    for match in (None, "died in the lowered-aoti stage .*SIGSEGV"):
        verdict = judge(written(stages=["crashed"], match=match), CRASH)
        assert (verdict.wasxfail, verdict.text) == ("torch segfaults", CRASH)


def test_another_crash_fails_naming_what_the_xfail_expected() -> None:
    verdict = judge(written(stages=["crashed"], match="SIGKILL"), CRASH)
    assert verdict.wasxfail is None
    assert verdict.text == (
        f"[crashed] expected xfail (stage crashed, match 'SIGKILL') at cases/l.yaml:20, "
        f"got: {CRASH}"
    )


def test_an_xfail_not_written_for_a_crash_never_hides_one() -> None:
    for fields, expected in (
        ({"stages": ["lowered-aoti"], "match": "SIGSEGV"}, "stage lowered-aoti, match 'SIGSEGV'"),
        ({}, "any failure"),
    ):
        verdict = judge(written(**fields), CRASH)
        assert verdict.wasxfail is None
        assert verdict.text.startswith(
            f"[crashed] expected xfail ({expected}; a crash is expected only by an xfail with "
            "stage crashed) at cases/l.yaml:20, got: [crashed] cases/l.yaml:12"
        )


def test_without_an_xfail_the_crash_stands() -> None:
    assert judge(None, CRASH).text == CRASH


def test_the_summary_names_each_expected_crash_by_its_first_clause() -> None:
    lines = expected_crash_lines([(f"l.yaml::c{i}", CRASH) for i in range(12)])
    assert lines[1] == (
        "  l.yaml::c0: [crashed] cases/l.yaml:12: worker gw3 died in the lowered-aoti stage "
        "of this item (killed by SIGSEGV)"
    )
    assert (len(lines), lines[-1]) == (12, "  and 2 more")
    assert expected_crash_lines([]) == []


def test_the_bundled_lowering_cases_expect_torch_2_11s_aoti_crash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The H100 record's crash (results/2026-11-27b-h100-16cores.md), as the controller
    # judges it: strict on cuda (plain torch showed it), not strict on cpu (plugin only).
    monkeypatch.setattr(compat, "torch_version", lambda: Version("2.11.0+cu130"))
    cases = [loaded.case for loaded in load_case_file(ROOT / "cases" / "lowering.yaml")]
    assert len(cases) == 13
    for case in cases:
        for device, strict in (("cuda:0", True), ("cpu", False)):
            xfail = case.xfail_for("export", "lowered-aoti", device)
            assert xfail is not None and (xfail.stages, xfail.strict) == (("crashed",), strict)
            assert judge(for_breadcrumb(xfail, case), CRASH).wasxfail == xfail.reason
    monkeypatch.setattr(compat, "torch_version", lambda: Version("2.12.0"))
    other = load_case_file(ROOT / "cases" / "lowering.yaml")[0].case  # lowering_mlp
    assert other.xfail_for("export", "lowered-aoti", "cuda:0") is None
