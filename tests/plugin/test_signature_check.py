"""signature: each invariant fails on purpose, and the message says what and where."""

from __future__ import annotations

import pytest
from casekit import MLP_CASE, inject, write_cases

TIED_CASE = """
cases:
  tied:
    description: LM head tied to the embedding
    model: {target: models.py:Tied}
    inputs: {args: [{shape: [2, 5], dtype: int64, high: 16}]}
    captures: [export, export-strict]
    checks: [signature]
"""


def run_signature(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--exportcheck", "-k", "signature", *args)


def test_tied_weights_pass_in_both_modes(project: pytest.Pytester) -> None:
    # non-strict lifts the tie twice, strict once: both are correct by identity.
    write_cases(project, TIED_CASE)
    run_signature(project).assert_outcomes(passed=2)


def test_expected_placeholders_mismatch_shows_a_diff(
    project: pytest.Pytester, dist: list[str]
) -> None:
    write_cases(
        project,
        MLP_CASE
        + """    expect:
      placeholders:
        - {name: p_fc1_weight, kind: parameter, target: fc1.weight}
        - {name: p_fc2_weight, kind: parameter, target: fc2.weight}
        - {name: x, kind: user_input, target: "args[0]"}
""",
    )
    result = run_signature(project, *dist)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*placeholders differ from expect.placeholders (cases/main.yaml:7):",
            "*  expected * | actual [[]export[]]",
            "*  p_fc1_weight: parameter -> fc1.weight | p_fc1_weight: parameter -> fc1.weight",
            "*+ * | p_fc1_bias: parameter -> fc1.bias",
            "*+ * | p_fc2_bias: parameter -> fc2.bias",
        ]
    )


def test_expected_placeholders_without_targets_compare_names_and_kinds(
    project: pytest.Pytester,
) -> None:
    write_cases(
        project,
        MLP_CASE
        + """    expect:
      placeholders:
        - {name: p_fc1_weight, kind: parameter}
        - {name: p_fc1_bias, kind: parameter}
        - {name: p_fc2_weight, kind: parameter}
        - {name: p_fc2_bias, kind: parameter}
        - {name: x, kind: user_input}
""",
    )
    run_signature(project).assert_outcomes(passed=1)


def test_placeholder_pointing_at_the_wrong_tensor(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    inject(
        project,
        """
        import dataclasses
        p = record.placeholders
        p[0], p[2] = dataclasses.replace(p[0], target=p[2].target), dataclasses.replace(p[2], target=p[0].target)
        """,
    )
    result = run_signature(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*p_fc1_weight: parameter -> fc2.weight: graph expects float32[[]8, 4[]], eager*"]
    )


def test_eager_parameter_that_is_not_lifted(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    inject(
        project,
        """
        record.placeholders[:] = [p for p in record.placeholders if p.name != "p_fc2_bias"]
        del record.program.state_dict["fc2.bias"]
        """,
    )
    result = run_signature(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*eager parameter 'fc2.bias' is neither lifted, an alias of a lifted one, "
            "nor held by the program"
        ]
    )


def test_unused_state_held_but_not_lifted_is_accounted_for(project: pytest.Pytester) -> None:
    # Strict export lifts only what forward reads; the program still holds the rest.
    write_cases(
        project,
        MLP_CASE.replace("Mlp", "UnusedParameter").replace(
            "inputs:", "captures: [export-strict]\n    inputs:"
        ),
    )
    run_signature(project).assert_outcomes(passed=1)


def test_tie_broken_in_the_program(project: pytest.Pytester) -> None:
    write_cases(project, TIED_CASE.replace("captures: [export, export-strict]", ""))
    inject(
        project,
        """
        sd = record.program.state_dict
        sd["head.weight"] = torch.nn.Parameter(sd["head.weight"].detach().clone())
        """,
    )
    result = run_signature(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*'emb.weight' and 'head.weight' are one tensor in eager (tied) but two in the program"]
    )


def test_distinct_tensors_merged_in_the_program(project: pytest.Pytester) -> None:
    write_cases(
        project, MLP_CASE.replace("Mlp}", "Mlp, kwargs: {dim: 8}}").replace("[2, 4]", "[2, 8]")
    )
    inject(
        project, 'record.program.state_dict["fc2.weight"] = record.program.state_dict["fc1.weight"]'
    )
    result = run_signature(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*'fc1.weight' and 'fc2.weight' are two tensors in eager but one in the program"]
    )


def test_program_state_with_different_values(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    inject(project, 'record.program.state_dict["fc1.bias"].data.add_(1.0)')
    result = run_signature(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*p_fc1_bias: parameter -> fc1.bias: program tensor values differ*"]
    )


def test_wrong_kind(project: pytest.Pytester) -> None:
    write_cases(
        project,
        MLP_CASE.replace("models.py:Mlp", "models.py:Counter"),
    )
    inject(
        project,
        """
        import dataclasses
        record.placeholders[:] = [
            dataclasses.replace(p, kind="parameter") if p.name == "b_count" else p
            for p in record.placeholders
        ]
        """,
    )
    result = run_signature(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*b_count: parameter -> count: in eager, 'count' is a buffer"])


def test_unknown_kind(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    inject(
        project,
        """
        import dataclasses
        record.placeholders[-1] = dataclasses.replace(record.placeholders[-1], kind="mystery")
        """,
    )
    result = run_signature(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*placeholder 'x' has kind 'mystery', not one of parameter*"])


def test_user_inputs_not_matching_the_case_inputs(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    inject(project, "record.placeholders.pop()")
    result = run_signature(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*case inputs without a user-input placeholder: args[[]0[]] (placeholders: none)"]
    )


def test_a_user_input_mapped_to_an_input_the_case_does_not_give(
    project: pytest.Pytester,
) -> None:
    write_cases(project, MLP_CASE)
    inject(
        project,
        """
        import dataclasses
        record.placeholders[-1] = dataclasses.replace(record.placeholders[-1], target="args[1]")
        """,
    )
    result = run_signature(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*- x: maps to args[[]1[]], which the case does not give"])


def test_two_user_inputs_mapped_to_one_case_input(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    inject(
        project,
        """
        import dataclasses
        record.placeholders.append(dataclasses.replace(record.placeholders[-1], name="x_again"))
        """,
    )
    result = run_signature(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*- x_again and x both map to input args[[]0[]]"])


def test_a_tensor_created_in_forward_is_a_traced_constant(project: pytest.Pytester) -> None:
    write_cases(
        project,
        MLP_CASE.replace("Mlp", "TracedConstant").replace(
            "inputs:", "captures: [export, export-strict]\n    inputs:"
        ),
    )
    run_signature(project).assert_outcomes(passed=2)
