"""How the xdist controller judges a crash by the xfail its worker wrote."""

from __future__ import annotations

from typing import Any

from pytest_exportcheck.items.expected_crashes import expected_crash_lines, judge

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
