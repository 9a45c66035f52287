"""Gaps' pure parts: a note as a gap, the property that carries it, the summary, the compare."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from pytest_exportcheck.containment.failures import CheckFailure, Info, Note
from pytest_exportcheck.items.gaps import Gap, as_property, from_property, gaps_of, strict_findings
from pytest_exportcheck.reports.compare_runs import compare, gap_diff
from pytest_exportcheck.reports.gap_summary import render_text, summarize
from pytest_exportcheck.reports.matrix import build
from pytest_exportcheck.reports.results import ResultCollector

NODE = "cases/a.yaml::m::hierarchy[export-cpu]"
MUTATES = "submodules not run alone: forward mutates state (count)"


def item(outcome: str = "passed", gaps: Any = None, nodeid: str = NODE, **extra: Any) -> dict:
    return {"nodeid": nodeid, "check": "hierarchy", "outcome": outcome, "gaps": gaps, **extra}


def gap_json(text: str) -> dict[str, str]:
    return Gap.from_note("hierarchy", text).to_json()


def test_a_note_reads_as_what_was_not_verified_and_why() -> None:
    assert Gap.from_note("hierarchy", Note(MUTATES)) == Gap(
        "hierarchy", "submodules not run alone", "forward mutates state (count)"
    )
    # shapes' notes start with "note: "; a wrapped note is one line; no ": " is all `what`.
    assert Gap.from_note("shapes", "note: sizes not run: the inputs come in one size") == Gap(
        "shapes", "sizes not run", "the inputs come in one size"
    )
    assert Gap.from_note("x", "a\n  b: c\nd").text() == "a b: c d"
    assert Gap.from_note("x", "nothing to split").why == ""


def test_gaps_are_the_notes_of_a_pass_each_once_and_never_an_info() -> None:
    notes = [Note(MUTATES), Info("note: at batch=1: programs agree with eager"), Note(MUTATES)]
    assert gaps_of("hierarchy", notes) == [Gap.from_note("hierarchy", MUTATES)]


def test_the_property_round_trips_and_tolerates_what_it_cannot_read() -> None:
    gaps = [Gap("hierarchy", "a", "b"), Gap("shapes", "c")]
    assert from_property(as_property(gaps)) == gaps
    assert from_property(None) is None
    assert from_property("not json") is None
    assert from_property('[{"why": "no what"}, 3]') == []


def test_a_strict_gap_is_a_finding_of_the_check() -> None:
    failure = CheckFailure("hierarchy", strict_findings(gaps_of("hierarchy", [MUTATES]), "opt"))
    assert failure.findings == [f"not verified (opt): {MUTATES}"]
    assert failure.headline == f"[hierarchy] not verified (opt): {MUTATES}"


def test_only_a_passing_items_gaps_reach_its_result() -> None:
    props = [
        ("exportcheck_case", "m"),
        ("exportcheck_check", "hierarchy"),
        ("exportcheck_gaps", as_property([Gap.from_note("hierarchy", MUTATES)])),
    ]
    for outcome, expected in (("passed", [gap_json(MUTATES)]), ("failed", None)):
        collector = ResultCollector()
        collector.add(
            SimpleNamespace(
                nodeid=NODE, when="call", outcome=outcome, passed=outcome == "passed",
                failed=outcome == "failed", skipped=False, longrepr=None,
                user_properties=props, location=("cases/a.yaml", 0, "m"), duration=0.1,
            )
        )  # fmt: skip
        (result,) = collector.results()
        assert result.gaps == expected
        assert result.with_gaps is (outcome == "passed")


def test_the_matrix_marks_a_pass_with_gaps_g() -> None:
    collector = ResultCollector()
    for name, gaps in (("gappy", as_property([Gap("hierarchy", "a")])), ("clean", None)):
        props = [("exportcheck_case", name), ("exportcheck_check", "hierarchy")]
        props += [("exportcheck_capture", "export"), ("exportcheck_device", "cpu")]
        props += [("exportcheck_gaps", gaps)] if gaps else []
        collector.add(
            SimpleNamespace(
                nodeid=f"cases/a.yaml::{name}::hierarchy[export-cpu]", when="call",
                outcome="passed", passed=True, failed=False, skipped=False, longrepr=None,
                user_properties=props, location=("cases/a.yaml", 0, name), duration=0.1,
            )
        )  # fmt: skip
    rows = {row.case: row.symbol("export", "hierarchy") for row in build(collector.results()).rows}
    assert rows == {"gappy": "g", "clean": "."}


def test_the_summary_counts_gaps_per_check_and_limits_what_it_lists() -> None:
    items = [
        item(gaps=[gap_json(MUTATES), gap_json("inner not run alone: keywords")]),
        item(nodeid="cases/a.yaml::n::hierarchy[export-cpu]", gaps=[gap_json(MUTATES)]),
        item(outcome="failed", nodeid="cases/a.yaml::o::hierarchy[export-cpu]", gaps=None),
        item(nodeid="cases/a.yaml::p::hierarchy[export-cpu]", gaps=None),
    ]
    summary = summarize(items)
    assert summary.to_json() == {"items": 2, "gaps": 3, "by_check": {"hierarchy": 3}}
    lines = render_text(summary, limit=1)
    assert lines[0].startswith("2 passing items with 3 gaps (hierarchy 3); ")
    assert lines[1:] == [
        "hierarchy (2 items):",
        f"  {NODE}",
        f"      {MUTATES}",
        "      inner not run alone: keywords",
        "  … and 1 more (-v lists them all)",
    ]


def test_a_gap_that_appears_or_goes_is_a_change_and_an_old_baseline_says_nothing() -> None:
    with_gap = item(gaps=[gap_json(MUTATES)])
    assert gap_diff(item(), with_gap) == [f"+gap: {MUTATES}"]
    assert gap_diff(with_gap, item()) == [f"-gap: {MUTATES}"]
    assert gap_diff(with_gap, with_gap) == []
    old = {k: v for k, v in item().items() if k != "gaps"}  # a report from before gaps
    assert gap_diff(old, with_gap) == []
    assert gap_diff(item(outcome="failed"), with_gap) == []  # the outcome change says it
    comparison = compare({"items": [item()]}, [with_gap], source="base.json")
    assert [c.nodeid for c in comparison.gaps] == [NODE]
    assert comparison.unchanged == 0
    assert comparison.summary()["gaps"] == [NODE]
    assert comparison.counts() == "1 gaps changed; 0 unchanged"
    # A new item that passes with gaps lists them; a skipped item that now passes too.
    fresh = compare({"items": []}, [with_gap], source="base.json")
    assert fresh.new[0].lines == [f"+gap: {MUTATES}"]
    moved = compare({"items": [item(outcome="skipped")]}, [with_gap], source="base.json")
    assert moved.other[0].lines == [f"+gap: {MUTATES}"]


def test_this_torchs_eager_raising_on_a_loaded_programs_inputs_is_a_gap_with_its_why() -> None:
    # It read "this torch's eager raised on them: ...": the raise as what, not verified.
    from pytest_exportcheck.checks.loaded import _against_this_eager
    from pytest_exportcheck.comparison.compare_values import Tolerance

    def run(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    subject = SimpleNamespace(run=run, model_copy=lambda: None)
    (note,) = _against_this_eager(subject, None, ((), {}), [], Tolerance(), "loaded", 1)  # type: ignore[arg-type]
    gap = Gap.from_note("loaded", note)
    assert gap.what == "this torch's eager not compared"
    assert gap.why.startswith("it raised on the saved inputs: RuntimeError: boom")
