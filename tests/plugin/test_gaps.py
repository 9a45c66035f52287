"""Gaps: a passing item whose check verified less than it says is visible and countable.

Issue 28 measured hierarchy items whose submodule replay was skipped (here: a child
that works only inside its parent's forward, which eager cannot call alone either)
and shapes items whose marker torch specialized passing with a note printed
nowhere: not with -rA, not in the JSON report. Each surface below shows such a pass,
under xdist too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from casekit import write_api_test, write_cases

# setup, attn: each child reads a factor its parent's forward sets and is called with a
# keyword; the unflattened child's call raises, and so does eager's child called alone,
# so neither is judged alone; mlp: every submodule replayed, no gap.
GAPPY = """
cases:
  setup:
    description: a child set up by its parent's forward
    model: {target: models.py:SetsUpChild}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [hierarchy, parity]
  attn:
    description: the same, its child named attn
    model: {target: models.py:SetsUpAttention}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [hierarchy]
  mlp:
    description: a plain MLP
    model: {target: models.py:Mlp}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [hierarchy, parity]
"""


def _set_up_gap(fqn: str) -> str:
    return (
        f"{fqn} not run alone: u.{fqn}(float32[2, 4], scale=3.0) raises on eager's {fqn} too, "
        "outside its parent's forward (AttributeError: 'NeedsParent' object has no attribute "
        "'factor')"
    )


INNER_GAP = _set_up_gap("inner")
ATTN_GAP = _set_up_gap("attn")
INNER_ITEM = "cases/main.yaml::setup::hierarchy[[]export-cpu[]]"
ATTN_ITEM = "cases/main.yaml::attn::hierarchy[[]export-cpu[]]"

OFF = ["-p", "no:cacheprovider"]


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--exportcheck", *OFF, *args)


def items(pytester: pytest.Pytester, name: str = "report.json") -> dict[str, dict]:
    doc = json.loads((pytester.path / name).read_text())
    return {item["nodeid"]: item for item in doc["items"]}


def test_a_pass_with_gaps_is_counted_in_the_terminal_and_marked_in_the_matrix(
    project: pytest.Pytester,
) -> None:
    write_cases(project, GAPPY)
    result = run(project)
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(
        [
            "legend: . passed  g passed with gaps  F failed  *",
            "case*HP",
            "  setup*g.",
            "  attn*g",
            "  mlp*..",
            "5 items: 5 passed",
            "*= exportcheck gaps =*",
            "2 passing items with 2 gaps (hierarchy 2); --exportcheck-strict-gaps *",
            "hierarchy (2 items):",
            f"  {ATTN_ITEM}",
            f"      {ATTN_GAP}",
            f"  {INNER_ITEM}",
            f"      {INNER_GAP}",
        ]
    )
    # docs/reports.md shows this very section: it must be what the run printed
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if " exportcheck gaps " in line)
    after = range(start + 1, len(lines))
    end = next(i for i in after if not lines[i].strip() or lines[i].startswith("="))
    assert lines[start:end] == documented_gaps(), (
        "docs/reports.md's gaps example is not this run's section"
    )


def documented_gaps() -> list[str]:
    """The lines of docs/reports.md's example of the gaps section."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "reports.md").read_text("utf-8")
    blocks = re.findall(r"^```\n(.*?)^```", page, re.S | re.M)
    (block,) = [b for b in blocks if " exportcheck gaps " in b.splitlines()[0]]
    return block.splitlines()


def test_no_gaps_section_when_every_pass_verified_everything(project: pytest.Pytester) -> None:
    write_cases(project, GAPPY)
    result = run(project, "-k", "mlp")
    result.assert_outcomes(passed=2)
    assert "exportcheck gaps" not in result.stdout.str()


def test_minus_r_a_shows_an_items_gaps_under_its_pass(project: pytest.Pytester) -> None:
    write_cases(project, GAPPY)
    result = run(project, "-rA", "-k", "setup")
    result.stdout.fnmatch_lines(
        [
            "*= PASSES =*",
            "*_ setup::hierarchy[[]export-cpu[]] _*",
            "*- Captured exportcheck gaps call -*",
            f"hierarchy: {INNER_GAP}",
        ]
    )


def test_the_json_and_markdown_reports_carry_each_gap_and_their_count(
    project: pytest.Pytester,
) -> None:
    write_cases(project, GAPPY)
    run(project, "--exportcheck-report", "report.json")
    doc = json.loads((project.path / "report.json").read_text())
    assert doc["gaps"] == {"items": 2, "gaps": 2, "by_check": {"hierarchy": 2}}
    found = {item["nodeid"]: item["gaps"] for item in doc["items"]}
    assert found["cases/main.yaml::setup::hierarchy[export-cpu]"] == [
        {"check": "hierarchy", "what": "inner not run alone", "why": INNER_GAP[21:]}
    ]
    assert found["cases/main.yaml::attn::hierarchy[export-cpu]"] == [
        {
            "check": "hierarchy",
            "what": "attn not run alone",
            "why": ATTN_GAP[20:],
        }
    ]
    assert found["cases/main.yaml::mlp::hierarchy[export-cpu]"] is None
    assert found["cases/main.yaml::setup::parity[export-cpu]"] is None
    markdown = (project.path / "report.md").read_text()
    assert "### Passed with gaps: 2 passing items with 2 gaps (hierarchy 2)" in markdown
    assert f"| `cases/main.yaml::attn::hierarchy[export-cpu]` | {ATTN_GAP} |" in markdown
    assert "`g·`" in markdown  # setup's HP cells in the Markdown matrix


def test_a_report_with_gaps_is_a_valid_baseline(project: pytest.Pytester) -> None:
    write_cases(project, GAPPY)
    run(project, "--exportcheck-report", "report.json", "-k", "setup")
    result = run(project, "--exportcheck-compare=report.json", "-k", "setup")
    result.stdout.fnmatch_lines(["*= exportcheck compare =*", "no changes; 2 unchanged"])


def test_a_gap_that_appears_or_goes_between_runs_is_a_change(project: pytest.Pytester) -> None:
    # The same case name, first on a model every submodule of which is replayed,
    # then on one whose child eager cannot call alone: both runs pass; only the gap tells
    # them apart.
    write_cases(project, GAPPY.replace("models.py:SetsUpChild", "models.py:Mlp"))
    run(project, "--exportcheck-report", "before.json", "-k", "setup")
    write_cases(project, GAPPY)
    result = run(
        project, "--exportcheck-compare=before.json", "--exportcheck-report", "after.json",
        "-k", "setup",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "1 gaps changed; 1 unchanged",
            "gaps changed (1):",
            f"  {INNER_ITEM}  passed",
            f"      +gap: {INNER_GAP}",
        ]
    )
    doc = json.loads((project.path / "after.json").read_text())
    assert doc["comparison"]["gaps"] == ["cases/main.yaml::setup::hierarchy[export-cpu]"]
    # ... and back: the gap that went is a change too.
    result = run(project, "--exportcheck-compare=after.json", "-k", "mlp or setup")
    assert "gaps changed" not in result.stdout.str()  # same runs: no change
    write_cases(project, GAPPY.replace("models.py:SetsUpChild", "models.py:Mlp"))
    result = run(project, "--exportcheck-compare=after.json", "-k", "setup")
    result.stdout.fnmatch_lines([f"  {INNER_ITEM}  passed", f"      -gap: {INNER_GAP}"])


def test_strict_gaps_fails_a_pass_with_gaps_naming_them(project: pytest.Pytester) -> None:
    write_cases(project, GAPPY)
    result = run(project, "--exportcheck-strict-gaps")
    result.assert_outcomes(passed=3, failed=2)
    result.stdout.fnmatch_lines(
        [
            f"- not verified (--exportcheck-strict-gaps): {INNER_GAP}",
            "  setup*F.",
            "  attn*F",
            "  mlp*..",
        ]
    )
    result.stdout.fnmatch_lines([f"FAILED {ATTN_ITEM} - [[]hierarchy[]] not veri*"])


def test_the_strict_gaps_ini_option_does_the_same(project: pytest.Pytester) -> None:
    write_cases(project, GAPPY)
    project.makeini("[pytest]\nexportcheck_strict_gaps = true\n")
    result = run(project, "-k", "attn")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"- not verified (exportcheck_strict_gaps): {ATTN_GAP}"])
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
            description: a child set up by its parent's forward
            model: {target: models.py:SetsUpAttention}
            inputs: {args: [{shape: [2, 4]}]}
            checks: [hierarchy]
            xfail: {reason: eager cannot call its child alone either, match: not verified}
        """,
    )
    run(project, "--exportcheck-strict-gaps").assert_outcomes(xfailed=1)


IS_THREE = '''
from torch import nn


class IsThree(nn.Module):
    """Exported at 3 rows, a Dim.AUTO batch is specialized to 3; eager takes 4."""

    def forward(self, x):
        return x * 2 if x.shape[0] == 3 else x * 3
'''


def test_a_shapes_marker_torch_made_static_is_a_gap_only_where_eager_takes_another_size(
    project: pytest.Pytester,
) -> None:
    # mlp: the auto feature dim is static (Linear(4, 8) reads it) and eager refuses 5
    # too: verified, no gap (it read "auto (args[0] dim 1) was made static: 4", a gap
    # whose why was the size). three: the program refuses 4 rows, eager computes them.
    (project.path / "cases" / "three.py").write_text(IS_THREE)
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
          three:
            description: an auto batch torch specializes
            model: {target: three.py:IsThree}
            inputs: {args: [{shape: [3, 4]}]}
            checks: [shapes]
            dynamic:
              shapes:
                args[0]: {0: auto}
        """,
    )
    result = run(project)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "  marker*.",
            "  three*g",
            "1 passing item with 1 gap (shapes 1); *",
            "      auto (args[[]0[]] dim 0) was made static 3: at 4 eager computes, but "
            "ep.module(), * refuse it: AssertionError: Guard failed: x.size()[[]0[]] == 3 "
            "(Dim.AUTO lets torch specialize it)",
        ]
    )
    result.stdout.no_fnmatch_line("*was made static: 4*")
    # Below the min, every program accepts batch 1 and agrees with eager: verified,
    # so said with the findings of a failing item only, never counted as a gap.
    assert "accept it and agree with eager" not in result.stdout.str()


def test_the_exportcheck_fixtures_items_carry_their_gaps_too(project: pytest.Pytester) -> None:
    write_api_test(
        project,
        """
        def test_counter(exportcheck):
            exportcheck(model("SetsUpChild"), args=(torch.randn(2, 4),), checks=["hierarchy"],
                        name="setup")
        """,
    )
    result = run(project, "test_model.py", "--exportcheck-report", "report.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "  test_counter::setup*g",
            "1 passing item with 1 gap (hierarchy 1); *",
            "  test_model.py::test_counter::setup::hierarchy[[]export-cpu[]]",
            f"      {INNER_GAP}",
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


def _gap_lines(lines: list[str]) -> list[str]:
    """The gaps section, then every gap -rA shows under a pass."""
    start = next(i for i, line in enumerate(lines) if "= exportcheck gaps =" in line)
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("="))
    # -rA's order is the order items ended in: under xdist, not the collection's.
    return lines[start:end] + sorted(line for line in lines if line.startswith("hierarchy: "))


@pytest.mark.parametrize("strict", [False, True], ids=["gaps", "strict-gaps"])
def test_under_xdist_every_surface_shows_the_gaps_one_process_shows(
    project: pytest.Pytester, strict: bool
) -> None:
    """What xdist adds is the hand-over of gaps from worker to controller: the terminal
    section, -rA, the reports and a comparison's changed gaps, the case items' and the
    fixture's, each as one process gives them."""
    # The baseline: the same cases on models whose every child is replayed, no gaps.
    unset = GAPPY.replace("SetsUpChild", "Mlp").replace("SetsUpAttention", "Mlp")
    write_cases(project, unset)
    run(project, "cases", "-p", "no:xdist", "--exportcheck-report", "before.json")
    write_cases(project, GAPPY)
    write_api_test(
        project,
        """
        def test_counter(exportcheck):
            exportcheck(model("SetsUpChild"), args=(torch.randn(2, 4),), checks=["hierarchy"],
                        name="setup")
        """,
    )
    strict_args = ["--exportcheck-strict-gaps"] if strict else []
    seen = {}
    for label, args in [("one", ["-p", "no:xdist"]), ("xdist", ["-n", "1"])]:
        result = run(
            project, "cases", "test_model.py", *args, *strict_args, "-rA",
            f"--exportcheck-report={label}.json",
            "--exportcheck-compare=before.json",
        )  # fmt: skip
        doc = json.loads((project.path / f"{label}.json").read_text())
        markdown = (project.path / f"{label}.md").read_text()
        seen[label] = (
            [] if strict else _gap_lines(result.stdout.lines),
            result.parseoutcomes(),
            doc["gaps"],
            {i["nodeid"]: (i["outcome"], i["gaps"], i["message"]) for i in doc["items"]},
            doc["comparison"]["gaps"],
            markdown[markdown.find("### Passed with gaps") :].split("\n\n")[0],
        )
    assert seen["xdist"] == seen["one"]
    lines, outcomes, gaps, items, changed, markdown = seen["one"]
    fixture_item = "test_model.py::test_counter::setup::hierarchy[export-cpu]"
    if strict:
        assert outcomes == {"passed": 3, "failed": 3}  # the three with a gap fail
        assert items[fixture_item][0] == "failed"
        assert "not verified (--exportcheck-strict-gaps)" in items[fixture_item][2]
        return
    assert gaps == {"items": 3, "gaps": 3, "by_check": {"hierarchy": 3}}
    assert items[fixture_item][1] == [
        {"check": "hierarchy", "what": "inner not run alone", "why": INNER_GAP[21:]}
    ]
    assert f"      {ATTN_GAP}" in lines and f"hierarchy: {INNER_GAP}" in lines
    assert "3 passing items with 3 gaps (hierarchy 3); " in "\n".join(lines)
    # The fixture's item is new to the baseline: not a change of gaps.
    assert sorted(changed) == [
        "cases/main.yaml::attn::hierarchy[export-cpu]",
        "cases/main.yaml::setup::hierarchy[export-cpu]",
    ]
    assert markdown.startswith("### Passed with gaps: 3 passing items with 3 gaps")
