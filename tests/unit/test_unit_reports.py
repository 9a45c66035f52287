"""The reports' pure parts: outcomes from reports, the matrix, observation diffs, the compare."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import childkit
import pytest

from pytest_exportcheck.reports import json_report
from pytest_exportcheck.reports.compare_runs import RunScope, compare, observation_diff, render
from pytest_exportcheck.reports.hooks import regression_exit
from pytest_exportcheck.reports.matrix import build, check_letters, md_text, render_text
from pytest_exportcheck.reports.results import (
    ItemResult,
    ResultCollector,
    classify,
    describe_totals,
    failure_text,
    headline,
    item_result,
    totals,
    where_line,
)

PROPS = [("exportcheck_case", "mlp"), ("exportcheck_check", "parity")]


def rep(outcome: str = "passed", when: str = "call", longrepr: Any = None, **extra: Any) -> Any:
    return SimpleNamespace(
        nodeid="cases/a.yaml::mlp::parity[export-cpu]",
        when=when,
        outcome=outcome,
        passed=outcome == "passed",
        failed=outcome == "failed",
        skipped=outcome == "skipped",
        longrepr=longrepr,
        user_properties=extra.pop("user_properties", PROPS),
        duration=0.5,
        location=("cases/a.yaml", 2, "mlp::parity[export-cpu]"),
        **extra,
    )


# -- results -----------------------------------------------------------------------------------


def test_headline_of_each_longrepr_form() -> None:
    assert headline(None) is None
    assert headline(("a.yaml", 3, "Skipped: not applicable: meta")) == "not applicable: meta"
    crash = SimpleNamespace(reprcrash=SimpleNamespace(message="AssertionError: x\nmore"))
    assert headline(crash) == "AssertionError: x"
    assert headline("\n[parity] step 2: differs\ncases/a.yaml:3: ...") == "[parity] step 2: differs"
    assert len(headline("x" * 2000) or "") == 500


def test_a_failure_keeps_its_whole_text_bounded_and_its_where_line() -> None:
    text = (
        "[parity] step 1: output: 3 / 8 elements outside tolerance\n"
        "cases/a.yaml:2: case mlp, export on cpu\n"
        "  where: first diverging: act (Perturbed) — max abs err 0.1; inputs agree\n"
    )
    failed = item_result(
        "cases/a.yaml::mlp::parity[export-cpu]",
        {"call": rep("failed", longrepr=text, user_properties=[
            *PROPS, ("exportcheck_tolerance", "atol=1e-05, rtol=1.3e-06 (float32 default)"),
            ("exportcheck_xfail_line", 9),
        ])},
    )  # fmt: skip
    assert failed is not None and failed.text == text.strip()
    assert failed.where == "first diverging: act (Perturbed) — max abs err 0.1; inputs agree"
    assert failed.tolerance == "atol=1e-05, rtol=1.3e-06 (float32 default)"
    assert failed.xfail_line == 9
    assert where_line("[parity] differs\nno where here") is None
    assert failure_text(("a.yaml", 3, "Skipped: no GPU")) is None  # a skip has a reason
    long = failure_text("x" * 20_000) or ""
    assert len(long) == 8000 and long.endswith("…")
    passed = item_result("cases/a.yaml::mlp::parity[export-cpu]", {"call": rep()})
    assert passed is not None and passed.text is None and passed.where is None


@pytest.mark.parametrize(
    ("phases", "outcome"),
    [
        ({"setup": rep(when="setup"), "call": rep()}, "passed"),
        ({"setup": rep("failed", when="setup")}, "error"),
        ({"call": rep(), "teardown": rep("failed", when="teardown")}, "error"),
        ({"call": rep("failed"), "teardown": rep("failed", when="teardown")}, "failed"),
        ({"call": rep("skipped", wasxfail="known")}, "xfailed"),
        ({"call": rep("passed", wasxfail="known")}, "xpassed"),
        (
            {"call": rep("skipped", longrepr=("a", 1, "Skipped: not applicable: x"))},
            "not_applicable",
        ),
        ({"call": rep("skipped", longrepr=("a", 1, "Skipped: no GPU"))}, "skipped"),
        ({"setup": rep("skipped", when="setup", longrepr=("a", 1, "Skipped"))}, "skipped"),
        ({"???": rep("failed", when="???")}, "failed"),  # a crashed xdist worker
    ],
)
def test_an_item_outcome_combines_its_phases(phases: dict, outcome: str) -> None:
    decided = classify(phases)
    assert decided is not None and decided[0] == outcome


def test_an_item_that_never_got_past_setup_has_no_result() -> None:
    assert classify({"setup": rep(when="setup")}) is None


def test_the_collector_keeps_exportcheck_items_only_and_merges_properties() -> None:
    collector = ResultCollector()
    collector.add(rep(user_properties=[("something_else", 1)]))
    collector.add(rep(when="setup"))
    collector.add(rep(user_properties=[*PROPS, ("exportcheck_max_abs_err", 0.25),
                                       ("exportcheck_observation", '{"modules": ["a"]}')]))  # fmt: skip
    (result,) = collector.results()
    assert (result.case, result.check, result.line, result.duration) == ("mlp", "parity", 3, 1.0)
    assert (result.max_abs_err, result.observation) == (0.25, {"modules": ["a"]})


def test_totals_count_every_outcome() -> None:
    counts = totals(["passed", "passed", "not_applicable"])
    assert counts["items"] == 3 and counts["error"] == 0
    assert describe_totals(counts) == "3 items: 2 passed, 1 not applicable"


# -- the matrix --------------------------------------------------------------------------------


def result(nodeid: str, outcome: str = "passed", **fields: Any) -> ItemResult:
    file, case, name = [*nodeid.split("::"), ""][:3]
    check, _, rest = name.partition("[")
    capture, _, device = rest.rstrip("]").rpartition("-")
    values: dict[str, Any] = dict(
        nodeid=nodeid, case=case, file=file, line=1, capture=capture or None,
        check=check or None, device=device or None, outcome=outcome,
    )  # fmt: skip
    values.update(fields)
    return ItemResult(**values)


def test_check_letters_are_distinct_for_unknown_checks() -> None:
    assert check_letters(["signature", "shape", "moved", "sync"]) == {
        "signature": "S", "shape": "H", "moved": "V", "sync": "Y",
    }  # fmt: skip


def test_no_check_letter_is_an_outcome_symbol() -> None:
    # "mode" once read E, the error symbol; a check named after one falls to a free letter.
    assert check_letters(["mode", "fixed", "export", "xla"]) == {
        "mode": "N", "fixed": "I", "export": "P", "xla": "L",
    }  # fmt: skip


def test_the_text_matrix_groups_devices_and_shows_broken_cases() -> None:
    results = [
        result("a.yaml::m::signature[export-cpu]"),
        result("a.yaml::m::signature[export-cuda:0]", "skipped"),
        result("a.yaml::m::parity[export-cuda:0]", "failed"),
        result("a.yaml::m::consistency[cuda:0]", "xfailed", capture="export+dynamo"),
        result("a.yaml::bad", "failed", line=9, message="[case] a.yaml:9: nope " + "x" * 80),
    ]
    lines = render_text(build(results), width=60)
    assert lines[2:] == [
        "                export",
        "case    device  SP      C",
        "a.yaml",
        "  m     cpu     .",
        "  m     cuda:0  sF      x",
        "  bad           broken: [case] a.yaml:9: nope " + "x" * 13 + "…",
    ]
    assert len(lines[-1]) == 60


def test_markdown_cells_escape_pipes() -> None:
    assert md_text("a | b\n  c") == "a \\| b c"


# -- observations and the compare --------------------------------------------------------------


def test_an_observation_diff_names_what_changed() -> None:
    before = {
        "placeholders": [["p_a", "parameter", "a"], ["x", "user_input", "args[0]"]],
        "modules": None,
        "mutations": {"buffers": ["count"], "parameters": [], "user_inputs": []},
    }
    after = {
        "placeholders": [["x", "user_input", "args[0]"], ["p_a", "parameter", "a"]],
        "modules": ["lin"],
        "mutations": {"buffers": [], "parameters": [], "user_inputs": ["args[0]"]},
    }
    assert observation_diff(before, after) == [
        "placeholders: same entries, order changed from #1: p_a (parameter a) now x (user_input args[0])",
        'modules: null -> ["lin"]',
        "mutations.buffers: -count",
        "mutations.user_inputs: +args[0]",
    ]
    assert observation_diff(before, before) == []
    assert observation_diff(None, after) == []  # nothing observed in one run: nothing to say


def item(nodeid: str, outcome: str, message: str | None = None, **extra: Any) -> dict:
    return {"nodeid": nodeid, "outcome": outcome, "message": message, **extra}


def test_compare_sorts_every_change_into_one_kind() -> None:
    baseline = {
        "run": {"torch": "2.13.0"},
        "items": [
            item("a", "passed"), item("b", "xfailed", "[capture] old"), item("c", "failed", "[p] x"),
            item("d", "passed"), item("e", "xfailed", "[capture] same"), item("gone", "passed"),
            item("f", "failed", "[p] was"),
        ],
    }  # fmt: skip
    current = [
        item("a", "failed", "[parity] now"), item("b", "failed", "[capture] new"),
        item("c", "passed"), item("d", "skipped", "no GPU"), item("e", "xfailed", "[capture] same"),
        item("f", "failed", "[p] now"), item("new", "error", "[internal] boom"),
    ]  # fmt: skip
    found = compare(baseline, current, source="base.json")
    assert [c.nodeid for c in found.regressions] == ["a", "b"]
    assert found.regressions[0].lines == ["[parity] now"]
    assert [(c.nodeid, c.lines) for c in found.fixes] == [("c", ["was: [p] x"])]
    assert [(c.nodeid, c.before, c.after) for c in found.other] == [("d", "passed", "skipped")]
    assert [(c.nodeid, c.lines) for c in found.failing_differently] == [
        ("f", ["was: [p] was", "now: [p] now"])
    ]
    assert [(c.nodeid, c.lines) for c in found.new] == [("new", ["[internal] boom"])]
    assert [c.nodeid for c in found.removed] == ["gone"]
    assert found.unchanged == 1
    assert found.counts() == (
        "2 regressions, 1 fix, 1 failing differently, 1 other outcome change, 1 new item, "
        "1 removed item; 1 unchanged"
    )
    assert found.summary()["regressions"] == ["a", "b"]


def test_a_baseline_item_outside_the_run_s_scope_is_not_run_not_removed() -> None:
    baseline = {
        "run": {},
        "items": [item("a.yaml::m::p", "passed"), item("a.yaml::m::q", "passed"),
                  item("b.yaml::m::p", "passed"), item("a.yaml::gone::p", "passed")],
    }  # fmt: skip
    scope = RunScope(files=frozenset({"a.yaml"}), deselected=frozenset({"a.yaml::m::q"}))
    found = compare(baseline, [item("a.yaml::m::p", "passed")], source="b.json", scope=scope)
    assert [c.nodeid for c in found.removed] == ["a.yaml::gone::p"]
    assert found.not_run == 2
    assert found.counts().endswith(
        "; 2 baseline items not run here (deselected, or outside the paths given)"
    )


def test_the_compare_lists_at_most_limit_items_per_kind() -> None:
    baseline = {"run": {}, "items": [item(f"n{i}", "passed") for i in range(5)]}
    current = [item(f"n{i}", "failed", "[p] x") for i in range(5)]
    lines = render(compare(baseline, current, source="b.json"), {"torch": "2.14.0"}, limit=2)
    assert lines[2:] == [
        "5 regressions; 0 unchanged",
        "regressions (5):",
        "  n0  passed -> failed",
        "      [p] x",
        "  n1  passed -> failed",
        "      [p] x",
        "  … and 3 more (-v lists them all)",
    ]
    assert lines[1] == "this run: torch 2.14.0, Python ?"


def test_fail_on_regression_makes_the_baseline_a_ratchet() -> None:
    ok, failed = pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED
    assert regression_exit(ok, 1, fail_on_regression=True) == failed
    assert regression_exit(failed, 1, fail_on_regression=True) == failed
    # only failures the baseline already had: the run passes
    assert regression_exit(failed, 0, fail_on_regression=True) == ok
    assert regression_exit(ok, 0, fail_on_regression=True) == ok
    # without the flag pytest's status stands
    assert regression_exit(failed, 0, fail_on_regression=False) == failed
    assert regression_exit(ok, 1, fail_on_regression=False) == ok
    interrupted = pytest.ExitCode.INTERRUPTED
    assert regression_exit(interrupted, 1, fail_on_regression=True) == interrupted


# -- the JSON file -----------------------------------------------------------------------------


def test_a_report_is_written_atomically_with_ordinary_permissions(tmp_path: Path) -> None:
    path = tmp_path / "new" / "r.json"
    json_report.write_atomically(path, "{}\n")
    assert os.listdir(path.parent) == ["r.json"]
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
    assert json_report.markdown_path(path).name == "r.md"


def test_a_written_report_loads_back_as_a_baseline(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    doc = json_report.document([result("a.yaml::m::signature[export-cpu]")], {"torch": "x"}, None)
    path.write_text(json_report.dumps(doc))
    assert (
        json_report.load_baseline(path)["items"][0]["nodeid"] == "a.yaml::m::signature[export-cpu]"
    )


@pytest.mark.parametrize(
    ("doc", "problem"),
    [
        ([], "expected a report written by --exportcheck-report"),
        ({"format": 1, "items": [{"outcome": "passed"}]}, "items\\[0\\]: 'nodeid' is a required"),
        ({"format": 1, "items": [{"nodeid": "a"}]}, "items\\[0\\]: 'outcome' is a required"),
        ({"format": 1, "items": [], "run": []}, "run: \\[\\] is not of type 'object'"),
        (
            {"format": 1, "items": [{"nodeid": "a", "outcome": {"passed": True}}]},
            "items\\[0\\].outcome: {'passed': True} is not one of",
        ),
        (
            {"format": 1, "items": [{"nodeid": "a", "outcome": "failed", "message": ["x"]}]},
            "items\\[0\\].message: \\['x'\\] is not of type 'string', 'null'",
        ),
    ],
    ids=[
        "not an object",
        "no nodeid",
        "no outcome",
        "run a list",
        "outcome a dict",
        "message a list",
    ],
)
def test_a_malformed_baseline_says_what_is_wrong(tmp_path: Path, doc: Any, problem: str) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(json_report.BaselineError, match=problem):
        json_report.load_baseline(path)


def test_the_reports_import_no_torch() -> None:
    """The xdist controller renders and compares without ever loading torch."""
    code = (
        "import sys, pytest_exportcheck.reports, pytest_exportcheck.reports.markdown; "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    childkit.run([sys.executable, "-c", code], check=True, timeout=60)
