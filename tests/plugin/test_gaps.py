"""Gaps: a passing item whose check verified less than it says is visible and countable.

Issue 28 measured hierarchy items whose submodule replay was skipped (here: a child
called with several positional tensors) and shapes items whose marker
torch specialized passing with a note printed nowhere: not with -rA, not in the
JSON report. Each surface below shows such a pass, under xdist too.
"""

from __future__ import annotations

import json

import pytest
from casekit import write_api_test, write_cases

# pair: its child takes two positional tensors, which its graph orders its own way;
# attn: its MultiheadAttention takes three: neither child is replayed alone;
# mlp: every submodule replayed, no gap.
GAPPY = """
cases:
  pair:
    description: a child of two positional tensors
    model: {target: models.py:PairChild}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [hierarchy, parity]
  attn:
    description: a child of three positional tensors
    model: {target: models.py:SelfAttention}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [hierarchy]
  mlp:
    description: a plain MLP
    model: {target: models.py:Mlp}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [hierarchy, parity]
"""
ORDERED_BY_GRAPH = (
    "which a child's graph orders its own way unless export preserved its call signature "
    "(preserve_module_call_signature)"
)
COUNTER_GAP = f"inner not run alone: it takes 2 positional tensors, {ORDERED_BY_GRAPH}"
KEYWORD_GAP = f"attn not run alone: it takes 3 positional tensors, {ORDERED_BY_GRAPH}"
COUNTER_ITEM = "cases/main.yaml::pair::hierarchy[[]export-cpu[]]"
KEYWORD_ITEM = "cases/main.yaml::attn::hierarchy[[]export-cpu[]]"

OFF = ["-p", "no:cacheprovider"]


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--exportcheck", *OFF, *args)


def items(pytester: pytest.Pytester, name: str = "report.json") -> dict[str, dict]:
    doc = json.loads((pytester.path / name).read_text())
    return {item["nodeid"]: item for item in doc["items"]}


def test_a_pass_with_gaps_is_counted_in_the_terminal_and_marked_in_the_matrix(
    project: pytest.Pytester, dist: list[str]
) -> None:
    write_cases(project, GAPPY)
    result = run(project, *dist)
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(
        [
            "legend: . passed  g passed with gaps  F failed  *",
            "case*HP",
            "  pair*g.",
            "  attn*g",
            "  mlp*..",
            "5 items: 5 passed",
            "*= exportcheck gaps =*",
            "2 passing items with 2 gaps (hierarchy 2); --exportcheck-strict-gaps *",
            "hierarchy (2 items):",
            f"  {KEYWORD_ITEM}",
            f"      {KEYWORD_GAP}",
            f"  {COUNTER_ITEM}",
            f"      {COUNTER_GAP}",
        ]
    )


def test_no_gaps_section_when_every_pass_verified_everything(project: pytest.Pytester) -> None:
    write_cases(project, GAPPY)
    result = run(project, "-k", "mlp")
    result.assert_outcomes(passed=2)
    assert "exportcheck gaps" not in result.stdout.str()


def test_minus_r_a_shows_an_items_gaps_under_its_pass(
    project: pytest.Pytester, dist: list[str]
) -> None:
    write_cases(project, GAPPY)
    result = run(project, *dist, "-rA", "-k", "pair")
    result.stdout.fnmatch_lines(
        [
            "*= PASSES =*",
            "*_ pair::hierarchy[[]export-cpu[]] _*",
            "*- Captured exportcheck gaps call -*",
            f"hierarchy: {COUNTER_GAP}",
        ]
    )


def test_the_json_and_markdown_reports_carry_each_gap_and_their_count(
    project: pytest.Pytester, dist: list[str]
) -> None:
    write_cases(project, GAPPY)
    run(project, *dist, "--exportcheck-report", "report.json")
    doc = json.loads((project.path / "report.json").read_text())
    assert doc["gaps"] == {"items": 2, "gaps": 2, "by_check": {"hierarchy": 2}}
    found = {item["nodeid"]: item["gaps"] for item in doc["items"]}
    assert found["cases/main.yaml::pair::hierarchy[export-cpu]"] == [
        {"check": "hierarchy", "what": "inner not run alone", "why": COUNTER_GAP[21:]}
    ]
    assert found["cases/main.yaml::attn::hierarchy[export-cpu]"] == [
        {
            "check": "hierarchy",
            "what": "attn not run alone",
            "why": KEYWORD_GAP[20:],
        }
    ]
    assert found["cases/main.yaml::mlp::hierarchy[export-cpu]"] is None
    assert found["cases/main.yaml::pair::parity[export-cpu]"] is None
    markdown = (project.path / "report.md").read_text()
    assert "### Passed with gaps: 2 passing items with 2 gaps (hierarchy 2)" in markdown
    assert f"| `cases/main.yaml::attn::hierarchy[export-cpu]` | {KEYWORD_GAP} |" in markdown
    assert "`g·`" in markdown  # pair's HP cells in the Markdown matrix


def test_a_report_with_gaps_is_a_valid_baseline(project: pytest.Pytester) -> None:
    write_cases(project, GAPPY)
    run(project, "--exportcheck-report", "report.json", "-k", "pair")
    result = run(project, "--exportcheck-compare=report.json", "-k", "pair")
    result.stdout.fnmatch_lines(["*= exportcheck compare =*", "no changes; 2 unchanged"])


def test_a_gap_that_appears_or_goes_between_runs_is_a_change(
    project: pytest.Pytester, dist: list[str]
) -> None:
    # The same case name, first on a model every submodule of which is replayed,
    # then on one that mutates a buffer: both runs pass; only the gap tells them apart.
    write_cases(project, GAPPY.replace("models.py:PairChild", "models.py:Mlp"))
    run(project, "--exportcheck-report", "before.json", "-k", "pair")
    write_cases(project, GAPPY)
    result = run(
        project, *dist, "--exportcheck-compare=before.json", "--exportcheck-report", "after.json",
        "-k", "pair",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "1 gaps changed; 1 unchanged",
            "gaps changed (1):",
            f"  {COUNTER_ITEM}  passed",
            f"      +gap: {COUNTER_GAP}",
        ]
    )
    doc = json.loads((project.path / "after.json").read_text())
    assert doc["comparison"]["gaps"] == ["cases/main.yaml::pair::hierarchy[export-cpu]"]
    # ... and back: the gap that went is a change too.
    result = run(project, "--exportcheck-compare=after.json", "-k", "mlp or pair")
    assert "gaps changed" not in result.stdout.str()  # same runs: no change
    write_cases(project, GAPPY.replace("models.py:PairChild", "models.py:Mlp"))
    result = run(project, "--exportcheck-compare=after.json", "-k", "pair")
    result.stdout.fnmatch_lines([f"  {COUNTER_ITEM}  passed", f"      -gap: {COUNTER_GAP}"])


def test_strict_gaps_fails_a_pass_with_gaps_naming_them(
    project: pytest.Pytester, dist: list[str]
) -> None:
    write_cases(project, GAPPY)
    result = run(project, *dist, "--exportcheck-strict-gaps")
    result.assert_outcomes(passed=3, failed=2)
    result.stdout.fnmatch_lines(
        [
            f"- not verified (--exportcheck-strict-gaps): {COUNTER_GAP}",
            "  pair*F.",
            "  attn*F",
            "  mlp*..",
        ]
    )
    result.stdout.fnmatch_lines([f"FAILED {KEYWORD_ITEM} - [[]hierarchy[]] not veri*"])


def test_the_strict_gaps_ini_option_does_the_same(project: pytest.Pytester) -> None:
    write_cases(project, GAPPY)
    project.makeini("[pytest]\nexportcheck_strict_gaps = true\n")
    result = run(project, "-k", "attn")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"- not verified (exportcheck_strict_gaps): {KEYWORD_GAP}"])
    project.makeini("[pytest]\nexportcheck_strict_gaps = false\n")
    run(project, "-k", "attn").assert_outcomes(passed=1)


def test_a_strict_gaps_failure_is_the_checks_own_so_an_xfail_of_it_applies(
    project: pytest.Pytester,
) -> None:
    write_cases(
        project,
        """
        cases:
          attn:
            description: a child of three positional tensors
            model: {target: models.py:SelfAttention}
            inputs: {args: [{shape: [2, 4]}]}
            checks: [hierarchy]
            xfail: {reason: three positional tensors are not replayed, match: not verified}
        """,
    )
    run(project, "--exportcheck-strict-gaps").assert_outcomes(xfailed=1)


def test_a_shapes_marker_torch_made_static_is_a_gap_and_a_verified_size_is_not(
    project: pytest.Pytester,
) -> None:
    write_cases(
        project,
        """
        cases:
          marker:
            description: an auto marker beside a named dim
            model: {target: models.py:Mlp}
            inputs: {args: [{shape: [3, 4]}]}
            checks: [shapes]
            dynamic:
              dims:
                batch: {min: 2, max: 8}
              shapes:
                args[0]: {0: batch, 1: auto}
        """,
    )
    result = run(project)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "  marker*g",
            "1 passing item with 1 gap (shapes 1); *",
            "      auto (args[[]0[]] dim 1) was made static: 4",
        ]
    )
    # Below the min, every program accepts batch 1 and agrees with eager: verified,
    # so said with the findings of a failing item only, never counted as a gap.
    assert "accept it and agree with eager" not in result.stdout.str()


def test_the_exportcheck_fixtures_items_carry_their_gaps_too(
    project: pytest.Pytester, dist: list[str]
) -> None:
    write_api_test(
        project,
        """
        def test_counter(exportcheck):
            exportcheck(model("PairChild"), args=(torch.randn(2, 4),), checks=["hierarchy"],
                        name="pair")
        """,
    )
    result = run(project, *dist, "test_model.py", "--exportcheck-report", "report.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "  test_counter::pair*g",
            "1 passing item with 1 gap (hierarchy 1); *",
            "  test_model.py::test_counter::pair::hierarchy[[]export-cpu[]]",
            f"      {COUNTER_GAP}",
        ]
    )
    doc = json.loads((project.path / "report.json").read_text())
    assert doc["gaps"] == {"items": 1, "gaps": 1, "by_check": {"hierarchy": 1}}


def test_a_model_without_submodules_has_none_to_run_alone_and_no_gap(
    project: pytest.Pytester,
) -> None:
    # BatchNorm1d in training mode mutates its state; with no children, nothing was skipped.
    write_cases(
        project,
        """
cases:
  norm:
    description: a root module and nothing under it
    model: {target: "torch.nn:BatchNorm1d", args: [4], mode: train}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [hierarchy]
""",
    )
    result = run(project)
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*exportcheck gaps*")
    result.stdout.no_fnmatch_line("*not run alone*")
