"""mutation: recorded mutations must be what eager did, and state must keep up over steps."""

from __future__ import annotations

import pytest
from casekit import MLP_CASE, inject, write_cases

COUNTER_CASE = MLP_CASE.replace("Mlp", "Counter")


def run_mutation(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--exportcheck", "-k", "mutation", *args)


def test_counter_buffer_passes_over_steps(project: pytest.Pytester) -> None:
    # The state-sharing trap: without a private copy per run, ep.module() and
    # unflatten(ep) would start from the count eager left behind.
    write_cases(
        project, COUNTER_CASE + "    expect: {mutated_buffers: [count], mutation: {steps: 4}}\n"
    )
    run_mutation(project).assert_outcomes(passed=1)


def test_user_input_mutation_passes(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE.replace("Mlp", "InputMutation"))
    run_mutation(project).assert_outcomes(passed=1)


def test_python_side_state_diverges_at_step_two(project: pytest.Pytester) -> None:
    # Export bakes `self.calls` (1 on the traced call) into the graph; eager keeps counting.
    write_cases(project, MLP_CASE.replace("Mlp", "PythonCounter"))
    result = run_mutation(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*after step 2/3: output: 8 / 8 elements outside tolerance*eager *, ep.module() *"]
    )
    result.stdout.no_fnmatch_line("*after step 1/3*")


def test_expected_mutated_buffers_mismatch(project: pytest.Pytester) -> None:
    write_cases(project, COUNTER_CASE + "    expect: {mutated_buffers: []}\n")
    result = run_mutation(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*expect.mutated_buffers (cases/main.yaml:6) is {}, the decomposed program "
            "(ep.run_decompositions()) records {count}"
        ]
    )


def test_recorded_mutation_missing(project: pytest.Pytester) -> None:
    write_cases(project, COUNTER_CASE)
    inject(
        project,
        """
        from torch.export.graph_signature import OutputKind
        decomposed = record.decomposed
        for spec in decomposed.graph_signature.output_specs:
            if spec.kind == OutputKind.BUFFER_MUTATION:
                spec.kind = OutputKind.USER_OUTPUT
        """,
    )
    result = run_mutation(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*eager mutated count but the decomposed program (ep.run_decompositions()) does not record it*"
        ]
    )


def test_recorded_mutation_that_eager_did_not_do(project: pytest.Pytester) -> None:
    write_cases(project, COUNTER_CASE)
    inject(
        project,
        """
        import dataclasses
        observed = record.subject.eager
        record.subject.__dict__["eager"] = dataclasses.replace(observed, mutated_state=frozenset())
        """,
    )
    result = run_mutation(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*records mutation of count but eager left it unchanged"])


def test_user_input_mutation_not_recorded(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE.replace("Mlp", "InputMutation"))
    inject(
        project,
        """
        from torch.export.graph_signature import OutputKind
        for spec in record.decomposed.graph_signature.output_specs:
            if spec.kind == OutputKind.USER_INPUT_MUTATION:
                spec.kind = OutputKind.USER_OUTPUT
        """,
    )
    result = run_mutation(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*user-input mutations differ: eager mutated {args[[]0[]]}, the decomposed program*records {}*"
        ]
    )


def test_state_drift_in_the_exported_module(project: pytest.Pytester) -> None:
    write_cases(project, COUNTER_CASE)
    inject(
        project,
        """
        make = record.fresh_module
        def drifting():
            module = make()
            module.register_forward_hook(lambda m, a, out: m.count.add_(1))
            return module
        record.fresh_module = drifting
        """,
    )
    result = run_mutation(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*after step 1/3: state 'count': 1 / 1 elements outside tolerance*eager 1, ep.module() 2;*"
        ]
    )


def test_decomposition_failure_is_reported(project: pytest.Pytester) -> None:
    write_cases(project, COUNTER_CASE)
    inject(
        project,
        """
        from pytest_exportcheck.capture.record import DecompositionError

        class Undecomposable(type(record)):
            @property
            def decomposed(self):
                raise DecompositionError("run_decompositions() raised: AssertionError: nope")

        record.__class__ = Undecomposable
        """,
    )
    result = run_mutation(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*cannot read mutation records: run_decompositions() raised: AssertionError: nope"]
    )


def test_an_in_place_write_of_equal_values_is_still_a_mutation(project: pytest.Pytester) -> None:
    # zero_() on a zero buffer changes no value, but export records it: so must eager.
    write_cases(
        project,
        MLP_CASE.replace("Mlp", "ZeroScratch") + "    expect: {mutated_buffers: [scratch]}\n",
    )
    result = run_mutation(project)
    result.assert_outcomes(passed=1)
    # The records show the update kept, the stepped runs its values: no gap (it was one,
    # its whole text the "what", with no why).
    result.stdout.no_fnmatch_line("*passing item* with *gap*")


def test_an_update_that_changes_no_value_is_vacuous_without_records(
    project: pytest.Pytester,
) -> None:
    # The stepped runs cannot tell a program that drops `zero_()` on a zero buffer. Export's
    # records show the mutation (passes above); Dynamo keeps none, so nothing shows it.
    case = MLP_CASE.replace("Mlp", "ZeroScratch") + "    captures: [export, dynamo-legacy]\n"
    write_cases(project, case)
    result = run_mutation(project)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*mutation[[]dynamo-legacy-cpu[]]*",
            "*vacuous: eager's update of scratch leaves the values as they were over 3 step(s), "
            "so the stepped runs cannot tell a program that drops it, and dynamo-legacy keeps no "
            "mutation records.*",
        ]
    )
