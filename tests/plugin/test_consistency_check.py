"""consistency: a case's captures compared with each other, differences declared or failing."""

from __future__ import annotations

import pytest
from casekit import inject, needs_dynamo, write_cases

TIED = """
cases:
  tied:
    description: head tied to the embedding
    model: {{target: models.py:Tied}}
    inputs: {{args: [{{shape: [2, 5], dtype: int64, low: 0, high: 16}}]}}
    captures: [export, export-strict, dynamo]
{extra}"""

COUNTER = """
cases:
  counter:
    description: a counter buffer
    model: {{target: models.py:Counter}}
    inputs: {{args: [{{shape: [2, 4]}}]}}
    captures: [{captures}]
"""


def run_consistency(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--exportcheck", "-k", "consistency", *args)


TIED_ACCEPT = (
    '{row: "lifted: emb.weight", reason: "a tied or aliased tensor: non-strict export lifts it '
    'once per name, the others once"}'
)


@needs_dynamo  # the message says how torch 2.13's three paths lift a tie
def test_a_tied_weight_row_fails_with_its_reason_and_the_accept_that_silences_it(
    project: pytest.Pytester, dist: list[str]
) -> None:
    # Issue 28: this row was a raw table, with no reason and no accept line (unlike
    # BatchNorm's num_batches_tracked rows).
    write_cases(project, TIED.format(extra=""))
    result = run_consistency(project, *dist)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*captures disagree on 1 row(s) not in expect.consistency.accept:",
            "*  known differences, each with the accept entry that silences it:",
            "*    lifted: emb.weight (1 row): one tensor named emb.weight and head.weight (tied "
            "or aliased), lifted by export once per name (2 placeholders), export-strict and "
            "dynamo once: non-strict export lifts such a tensor once per name, strict export "
            "and the Dynamo paths once *; accept with:",
            f"*        - {TIED_ACCEPT}",
        ]
    )
    result.stdout.no_fnmatch_line("*  row  *export*")  # no table: nothing unexplained


@needs_dynamo
def test_the_suggested_tie_accept_silences_it(project: pytest.Pytester) -> None:
    accept = f"    expect:\n      consistency:\n        accept:\n          - {TIED_ACCEPT}\n"
    write_cases(project, TIED.format(extra=accept))
    run_consistency(project).assert_outcomes(passed=1)


@needs_dynamo  # the table shows how torch 2.13's three paths lift a tie
def test_a_declared_difference_passes(project: pytest.Pytester) -> None:
    accept = """    expect:
      consistency:
        accept:
          - {row: "lifted: emb.weight", reason: non-strict lifts each name of a tied weight}
"""
    write_cases(project, TIED.format(extra=accept))
    run_consistency(project).assert_outcomes(passed=1)


@needs_dynamo  # the table shows how torch 2.13's three paths lift a tie
def test_a_declared_row_may_use_wildcards(project: pytest.Pytester) -> None:
    accept = """    expect:
      consistency:
        accept: [{row: "lifted: *", reason: ties}]
"""
    write_cases(project, TIED.format(extra=accept))
    run_consistency(project).assert_outcomes(passed=1)


def test_a_declared_difference_that_no_longer_occurs_is_a_warning(
    project: pytest.Pytester,
) -> None:
    write_cases(
        project,
        COUNTER.format(captures="export, export-strict")
        + "    expect:\n      consistency:\n        accept: [{row: 'lifted: lin.weight', reason: old}]\n",
    )
    result = run_consistency(project)
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*ExportCheckWarning: cases/main.yaml:8: accepted difference 'lifted: lin.weight' "
            "did not occur between export, export-strict: remove it from expect.consistency.accept"
        ]
    )


def test_differing_mutation_records_fail(project: pytest.Pytester) -> None:
    write_cases(project, COUNTER.format(captures="export, export-strict"))
    inject(
        project,
        """
        import dataclasses
        recorded = record.mutations()
        record.mutations = lambda: dataclasses.replace(recorded, buffers=frozenset())
        """,
        capture="export-strict",
    )
    result = run_consistency(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["  mutated: count  yes  *no"])


@needs_dynamo
def test_a_path_without_mutation_records_is_not_compared(project: pytest.Pytester) -> None:
    write_cases(project, COUNTER.format(captures="export, dynamo"))
    run_consistency(project).assert_outcomes(passed=1)


def test_differing_outputs_fail(project: pytest.Pytester) -> None:
    write_cases(project, COUNTER.format(captures="export, export-strict"))
    inject(
        project,
        """
        make = record.fresh_module
        def noisy():
            module = make()
            module.register_forward_hook(lambda m, a, out: out + 0.5)
            return module
        record.fresh_module = noisy
        """,
        capture="export-strict",
    )
    result = run_consistency(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["  outputs  reference  output: 8 / 8 elements outside tolerance*"])


def test_differing_user_inputs_fail(project: pytest.Pytester) -> None:
    write_cases(project, COUNTER.format(captures="export, export-strict"))
    inject(
        project,
        """
        import dataclasses
        record.placeholders[:] = [
            dataclasses.replace(p, target=None) if p.kind == "user_input" else p
            for p in record.placeholders
        ]
        """,
        capture="export-strict",
    )
    result = run_consistency(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["  user inputs  args[[]0[]]  ? (x)"])


def test_with_fewer_than_two_captures_left_it_skips_saying_why(
    project: pytest.Pytester,
) -> None:
    write_cases(
        project,
        COUNTER.format(captures="export, export-strict").replace("Counter", "DataDependent"),
    )
    result = run_consistency(project, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        [
            "SKIPPED * fewer than two captures to compare (export: [[]capture: data-dependent guard[]] *; export-strict: *"
        ]
    )


def test_a_case_with_one_capture_has_no_consistency_item(project: pytest.Pytester) -> None:
    write_cases(project, COUNTER.format(captures="export"))
    run_consistency(project).assert_outcomes()


HEADS = """
cases:
  heads:
    description: two heads forward never calls
    model: {target: models.py:UnusedHeads}
    inputs: {args: [{shape: [2, 4]}]}
    captures: [export, export-strict]
"""


def test_state_forward_never_reads_is_named_once_with_the_accept_that_silences_it(
    project: pytest.Pytester,
) -> None:
    write_cases(project, HEADS)
    result = run_consistency(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*captures disagree on 4 row(s) not in expect.consistency.accept:",
            "*  known differences, each with the accept entry that silences it:",
            "*    lifted: *.bias (2 tensors): forward never reads them: non-strict export lifts "
            "every parameter and buffer, strict export and the Dynamo paths only what forward "
            "reads *; accept with:",
            '*        - {row: "lifted: *.bias", reason: "state forward never reads: only non-strict '
            'export lifts it"}',
            "*    lifted: *.weight (2 tensors): *",
        ]
    )
    result.stdout.no_fnmatch_line("*  row  *export*")  # no table: nothing unexplained


def test_the_suggested_accept_entries_silence_it(project: pytest.Pytester) -> None:
    reason = "state forward never reads: only non-strict export lifts it"
    accept = (
        "    expect:\n      consistency:\n        accept:\n"
        f'          - {{row: "lifted: *.bias", reason: "{reason}"}}\n'
        f'          - {{row: "lifted: *.weight", reason: "{reason}"}}\n'
    )
    write_cases(project, HEADS + accept)
    run_consistency(project).assert_outcomes(passed=1)


@needs_dynamo
def test_an_input_dynamo_drops_because_forward_never_reads_it_is_no_disagreement(
    project: pytest.Pytester,
) -> None:
    write_cases(
        project,
        """
        cases:
          unread:
            description: forward never reads its second input
            model: {target: models.py:UnreadInput}
            inputs: {args: [{shape: [2, 4]}, {shape: [3]}]}
            captures: [export, dynamo]
        """,
    )
    run_consistency(project).assert_outcomes(passed=1)


HANDED_ON = """
from pathlib import Path


def pytest_sessionfinish(session):
    workerinput = getattr(session.config, "workerinput", None)
    if workerinput is not None:  # what this worker saw in the handoff directory at its end
        found = sorted(p.name for p in Path(workerinput["exportcheck_summaries"]).iterdir())
        Path(session.config.rootpath, "handed-" + workerinput["workerid"]).write_text(
            "\\n".join(found)
        )
"""


@needs_dynamo  # the message says how torch 2.13's three paths lift a tie
def test_captures_run_on_any_worker_and_the_table_is_the_same(
    project: pytest.Pytester, dist: list[str]
) -> None:
    """Under xdist each capture is a unit of its own; its worker hands the consistency
    item a summary, and the failure reads exactly as in one process."""
    write_cases(project, TIED.format(extra=""))
    (project.path / "conftest.py").write_text(HANDED_ON)
    workers = ["-n", "2"] if "-n" in dist else dist  # two: the captures spread out
    result = project.runpytest("--exportcheck", *workers)
    assert result.parseoutcomes()["failed"] == 1
    result.stdout.fnmatch_lines(
        [
            "*captures disagree on 1 row(s) not in expect.consistency.accept:",
            "*  known differences, each with the accept entry that silences it:",
            "*    lifted: emb.weight (1 row): one tensor named emb.weight and head.weight (tied "
            "or aliased), lifted by export once per name (2 placeholders), export-strict and "
            "dynamo once: *",
        ]
    )
    if "-n" in dist:  # every capture handed its summary on, one file each
        seen = {line for f in project.path.glob("handed-*") for line in f.read_text().split()}
        assert len(seen) == 3
