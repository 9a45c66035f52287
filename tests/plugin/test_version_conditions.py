"""A torch: condition whose boundary looks wrong is named by the failure it would explain.

Conditions are written against the real torch here: ">=99" never takes it in,
"<99" always does, so each test reads the note a misplaced boundary gets.
"""

from __future__ import annotations

import pytest
from casekit import write_cases

from pytest_exportcheck.spec import compat

MLP_EXPORT = """
          - {name: p_fc1_weight, kind: parameter, target: fc1.weight}
          - {name: p_fc1_bias, kind: parameter, target: fc1.bias}
          - {name: p_fc2_weight, kind: parameter, target: fc2.weight}
          - {name: p_fc2_bias, kind: parameter, target: fc2.bias}
          - {name: x, kind: user_input, target: "args[0]"}"""
MLP_WRONG = """
          - {name: p_fc1_weight, kind: parameter, target: fc1.weight}
          - {name: x, kind: user_input, target: "args[0]"}"""


def installed() -> str:
    return str(compat.torch_version())


def mlp_case(expect: str, extra: str = "") -> str:
    return f"""
cases:
  mlp:
    description: a plain MLP
    model: {{target: models.py:Mlp}}
    inputs: {{args: [{{shape: [2, 4]}}]}}
    checks: [signature]
    expect:
      placeholders:{expect}
{extra}"""


def test_a_failure_an_xfail_for_other_versions_covers_names_it(project: pytest.Pytester) -> None:
    xfail = """    xfail:
      reason: measured on 99.0 only, a renamed placeholder
      torch: ">=99"
      checks: [signature]"""
    write_cases(project, mlp_case(MLP_WRONG, xfail))
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"version condition: the xfail at cases/main.yaml:12 covers this item for torch >=99 "
            f"only, and torch {installed()} fails it too; if this is the behaviour it names "
            f"(measured on 99.0 only, a renamed placeholder), move its boundary to take "
            f"{compat.torch_minor()} in"
        ]
    )


def test_an_xfail_for_other_versions_written_for_another_stage_is_not_named(
    project: pytest.Pytester,
) -> None:
    # A crash expected on another torch says nothing of this signature finding.
    xfail = """    xfail:
      reason: measured on 99.0 only, a segfault
      torch: ">=99"
      checks: [signature]
      stage: crashed"""
    write_cases(project, mlp_case(MLP_WRONG, xfail))
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(failed=1)
    assert "version condition" not in result.stdout.str()


def test_an_xfail_a_condition_applies_that_passes_names_the_condition(
    project: pytest.Pytester,
) -> None:
    xfail = """    xfail:
      reason: measured on 2.6 only
      torch: "<99"
      checks: [signature]"""
    write_cases(project, mlp_case(MLP_EXPORT, xfail))
    result = project.runpytest("--exportcheck", "-rf")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*[[]XPASS(strict)[]] measured on 2.6 only",
            f"version condition: the xfail at cases/main.yaml:15 is for torch <99, which takes "
            f"torch {installed()} in, but this torch does not fail: move its boundary to leave "
            f"{compat.torch_minor()} out (its reason names the versions it was measured on)",
        ]
    )


def test_an_unconditioned_xpass_has_no_note(project: pytest.Pytester) -> None:
    xfail = """    xfail:
      reason: nothing to do with versions
      checks: [signature]"""
    write_cases(project, mlp_case(MLP_EXPORT, xfail))
    result = project.runpytest("--exportcheck", "-rf")
    result.assert_outcomes(failed=1)
    result.stdout.no_fnmatch_line("*version condition*")


def test_placeholders_a_when_entry_for_other_versions_expects_name_it(
    project: pytest.Pytester,
) -> None:
    when = f"""    when:
      - torch: ">=99"
        expect:
          placeholders:{MLP_EXPORT}"""
    write_cases(project, mlp_case(MLP_WRONG, when))
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*placeholders differ from expect.placeholders (cases/main.yaml:8):",
            "*version condition: these placeholders are what `when: torch >=99` expects "
            f"(cases/main.yaml:14), which leaves torch {installed()} out: if this torch "
            f"behaves like those, move that boundary to take {compat.torch_minor()} in",
        ]
    )


def test_a_when_entry_that_replaced_the_right_placeholders_is_named(
    project: pytest.Pytester,
) -> None:
    when = f"""    when:
      - torch: "<99"
        expect:
          placeholders:{MLP_WRONG}"""
    write_cases(project, mlp_case(MLP_EXPORT, when))
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*placeholders differ from expect.placeholders (cases/main.yaml:17):",
            "*version condition: these placeholders are what the case's own "
            "expect.placeholders says (cases/main.yaml:8); the `when: torch <99` entry that "
            f"replaces it takes torch {installed()} in: move its boundary to leave "
            f"{compat.torch_minor()} out",
        ]
    )


def test_a_mismatch_no_other_expectation_explains_has_no_note(project: pytest.Pytester) -> None:
    when = f"""    when:
      - torch: ">=99"
        expect:
          placeholders:{MLP_WRONG}"""
    write_cases(project, mlp_case(MLP_WRONG, when))
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(failed=1)
    result.stdout.no_fnmatch_line("*version condition*")


def test_a_consistency_row_accepted_for_other_versions_is_named(project: pytest.Pytester) -> None:
    write_cases(
        project,
        """
cases:
  tied:
    description: tied weights, lifted twice by non-strict export and once by strict
    model: {target: models.py:Tied}
    inputs: {args: [{shape: [2, 3], dtype: int64, high: 16}]}
    captures: [export, export-strict]
    checks: [consistency]
    expect:
      consistency:
        accept:
          - row: "lifted: *"
            torch: ">=99"
            reason: strict export dedupes a tied weight (measured on 99.0)
""",
    )
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*captures disagree on 1 row(s) not in expect.consistency.accept:",
            "*version condition: row 'lifted: *' is accepted at cases/main.yaml:11 for torch "
            f">=99 only, and torch {installed()} shows it too: if it is the same difference "
            "(strict export dedupes a tied weight (measured on 99.0)), move that boundary to "
            f"take {compat.torch_minor()} in",
        ]
    )
