"""shapes: each declared dim stays dynamic with its range, and every program holds across it.

Each finding is made to happen on purpose — by a model that really does it (a branch
on batch 1, a size export refuses) or by corrupting what the capture returns — and
its message is read.
"""

from __future__ import annotations

import json

import pytest
from casekit import REEXPORTED_STATIC, inject, needs_dynamo, write_cases

BATCH = """
cases:
  mlp:
    description: an MLP with a dynamic batch
    model: {target: models.py:Mlp}
    inputs: {args: [{shape: [3, 4]}]}
    dynamic:
      dims: {batch: {min: 2, max: 8}}
      shapes:
        args[0]: {0: batch}
"""


def run_shapes(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--exportcheck", "-k", "shapes", *args)


def test_a_dynamic_batch_holds_across_its_range(project: pytest.Pytester) -> None:
    write_cases(project, BATCH)
    result = run_shapes(project)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["checks: D shapes"])


def test_every_capture_but_aot_joint_gets_the_dims(project: pytest.Pytester) -> None:
    case = BATCH.replace("Mlp", "Twin") + "    loss_output: 1\n"
    write_cases(project, case + "    captures: [export, export-strict, dynamo-legacy, aot-joint]\n")
    result = project.runpytest("--exportcheck", "-rs", "-k", "parity or shapes")
    # The Dynamo graph runs across the sizes too; aot_export_module cannot be given dims.
    result.assert_outcomes(passed=6, skipped=2)
    result.stdout.fnmatch_lines(
        [
            "SKIPPED [[]1[]] *: not applicable: aot_export_module takes no "
            "dynamic_shapes, so it cannot honour the case's dynamic dims",
        ]
    )


@needs_dynamo
def test_a_guard_that_narrows_a_dynamo_graphs_range_is_named_with_its_frame(
    project: pytest.Pytester,
) -> None:
    # dynamo_graph_capture_for_export takes the dims as constraints but solves none:
    # the branch narrows batch to [5, 8] without a word. The graph's ShapeEnv keeps the
    # range and the guard's frame; at the declared min the graph takes the wrong branch.
    case = BATCH.replace("Mlp", "NarrowsAboveFour").replace("[3, 4]", "[6, 4]")
    write_cases(project, case + "    captures: [dynamo]\n")
    result = run_shapes(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "- declared dim batch (args[[]0[]] dim 0) is [[]2, 8[]], but dynamo narrowed it to "
            "[[]5, 8[]] (the graph's ShapeEnv), by the guard at *models.py:* in forward "
            "(if x.shape[[]0[]] > 4:): the graph holds only for sizes in that range",
            "- at batch=2 (min): output: * elements outside tolerance*",
        ]
    )


def test_a_dynamo_graph_is_judged_by_what_it_computes_outside_the_range(
    project: pytest.Pytester,
) -> None:
    # A Dynamo graph checks no input size (its guards live outside it): at batch 1,
    # below the declared min 2, it computes the batch > 1 branch where eager doubles x.
    case = BATCH.replace("Mlp", "BatchOne")
    write_cases(project, case + "    captures: [dynamo-legacy]\n")
    result = run_shapes(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "- at batch=1 (below batch's min 2): graph module accepted it and output: *",
            "  note: at batch=9 (above batch's max 8): graph module accept it and agree with eager",
        ]
    )


def test_an_input_factory_that_takes_dims_is_run_at_every_size(project: pytest.Pytester) -> None:
    case = BATCH.replace("Mlp", "BatchOne").replace("min: 2", "min: 1")
    case = case.replace(
        "inputs: {args: [{shape: [3, 4]}]}", "inputs: {factory: models.py:make_sized_inputs}"
    )
    write_cases(project, case)
    result = run_shapes(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["- at batch=1 (min): output: 4 / 4 elements outside tolerance *"])


def test_an_input_factorys_mark_dynamic_reaches_the_capture(project: pytest.Pytester) -> None:
    case = """
cases:
  marked:
    description: the factory marks dim 0 dynamic
    model: {target: models.py:Mlp}
    inputs: {factory: models.py:make_marked_inputs}
    captures: [export]
"""
    write_cases(project, case)
    inject(
        project,
        """
        (x,) = record.program.graph_module.graph.find_nodes(op="placeholder")[-1:]
        assert isinstance(x.meta["val"].shape[0], torch.SymInt), x.meta["val"].shape
        """,
    )
    project.runpytest("--exportcheck", "-k", "parity").assert_outcomes(passed=1)


def test_a_branch_on_batch_one_is_found_at_the_declared_min(project: pytest.Pytester) -> None:
    # Exported at batch 4 with min 1: the programs keep the batch > 1 branch and at batch 1
    # compute x - mean (zeros) where eager doubles x. Nothing raises; only running shows it.
    case = BATCH.replace("Mlp", "BatchOne").replace("min: 2", "min: 1")
    write_cases(project, case)
    result = run_shapes(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "- at batch=1 (min): output: 4 / 4 elements outside tolerance *eager *, "
            "ep.module(), unflatten(ep), decomposed, saved and loaded 0*"
        ]
    )


def test_a_specialized_dim_is_named_with_its_value(project: pytest.Pytester) -> None:
    write_cases(project, BATCH)
    inject(
        project,
        REEXPORTED_STATIC,
    )
    result = run_shapes(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "- declared dim batch (args[0] dim 0) was specialized to 3: export made it static, "
            "so the program takes only that size",
            # 2.6-2.8 refuse in an input check, later torch in a guard function: either way.
            "- at batch=2 (min): ep.module(), *decomposed, saved and loaded refused a size "
            "inside the declared range: *",
        ]
    )


@pytest.mark.quick
def test_a_narrowed_range_constraint_is_a_finding(project: pytest.Pytester) -> None:
    write_cases(project, BATCH)
    inject(
        project,
        """
        from torch.utils._sympy.value_ranges import ValueRanges
        for symbol in list(record.program.range_constraints):
            record.program.range_constraints[symbol] = ValueRanges(4, 8)
        """,
    )
    result = run_shapes(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "- declared dim batch (args[0] dim 0) is [2, 8], but export narrowed it to [4, 8] "
            "(ep.range_constraints): the program refuses sizes the case allows"
        ]
    )


def test_a_program_that_accepts_a_size_above_max_is_a_finding(
    project: pytest.Pytester,
) -> None:
    write_cases(project, BATCH)
    # ep.module() replaced by the eager model: it computes whatever size it is given.
    inject(
        project,
        """
        import copy
        record.fresh_module = lambda: copy.deepcopy(record.subject.pristine_model)
        """,
    )
    result = run_shapes(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "- at batch=9 (above batch's max 8): ep.module() accepted a size outside the declared "
            "range [2, 8] and computed a result"
        ]
    )
    result.stdout.no_fnmatch_line("*unflatten(ep) accepted*")


def test_a_size_export_refuses_is_a_constraint_violation_with_torchs_reasons(
    project: pytest.Pytester,
) -> None:
    case = BATCH.replace("Mlp", "HalfRows").replace("[3, 4]", "[4, 3]")
    write_cases(project, case)
    result = run_shapes(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "[[]capture: constraint violation[]] cases/main.yaml:*: torch.export.export "
            "(non-strict) raised: UserError: Constraints violated (batch)!*",
            "- batch: not all values of batch in the specified range batch <= 8 satisfy the "
            "generated guard *",
        ]
    )


def test_a_shapes_path_the_built_inputs_lack_is_the_cases_error(project: pytest.Pytester) -> None:
    case = """
cases:
  mlp:
    description: factory inputs
    model: {target: models.py:Mlp}
    inputs: {factory: models.py:make_inputs}
    dynamic:
      dims: {batch: {min: 2, max: 8}}
      shapes:
        kwargs['x']: {0: batch}
"""
    write_cases(project, case)
    result = run_shapes(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "[[]case[]] cases/main.yaml:6: dynamic: kwargs[[]'x'[]] is not an input of the built inputs"
        ]
    )


def test_consistency_compares_which_dims_each_capture_keeps_symbolic(
    project: pytest.Pytester,
) -> None:
    write_cases(project, BATCH + "    captures: [export, export-strict]\n")
    inject(
        project,
        """
        import copy
        static = torch.export.export(copy.deepcopy(record.captured_model), record.subject.inputs_copy()[0])
        record.program = static
        record.graph_module = static.graph_module
        """,
        capture="export-strict",
    )
    result = project.runpytest("--exportcheck", "-k", "consistency")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*dynamic: args[[]0[]] dim 0 (batch)*symbolic*static 3*"])


def test_state_that_falls_behind_at_another_size_is_a_finding(project: pytest.Pytester) -> None:
    write_cases(project, BATCH.replace("Mlp", "Counter"))
    # ep.module() drops the count update at every batch but the example's 3 (the
    # mutation check, at 3, cannot see it). Stepped here at the first other size, min.
    inject(
        project,
        """
        make = record.fresh_module
        def forgetful():
            module = make()
            def undo(m, args, out):
                if args[0].shape[0] != 3:
                    m.count.sub_(1)
            module.register_forward_hook(undo)
            return module
        record.fresh_module = forgetful
        """,
    )
    result = run_shapes(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["- at batch=2 (min), over 3 steps: after step 1: state 'count': *eager 1, ep.module() *"]
    )


def test_the_recorded_observation_keeps_each_dims_range(project: pytest.Pytester) -> None:
    # A later torch that narrows or specializes the dim fails `recorded` with the change.
    write_cases(project, BATCH)
    project.runpytest("--exportcheck", "--exportcheck-update").assert_outcomes(passed=7)
    recorded = json.loads((project.path / "cases" / "main.recorded.json").read_text())
    (section,) = recorded["torch"].values()
    assert section["mlp"]["export"]["dims"] == {"args[0] dim 0 (batch)": "symbolic [2, 8]"}
    inject(
        project,
        """
        from torch.utils._sympy.value_ranges import ValueRanges
        for symbol in list(record.program.range_constraints):
            record.program.range_constraints[symbol] = ValueRanges(4, 8)
        """,
    )
    result = project.runpytest("--exportcheck", "-k", "recorded")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*args[[]0[]] dim 0 (batch)*symbolic [[]2, 8[]]*symbolic [[]4, 8[]]*"]
    )


TRAIN_BATCHNORM = """
import torch
from torch import nn


class TrainBatchNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 6)
        self.bn = nn.BatchNorm1d(6)

    def forward(self, x):
        return torch.relu(self.bn(self.lin(x)))
"""


def test_a_train_batchnorm_run_below_its_min_says_it_left_running_var_nan(
    project: pytest.Pytester,
) -> None:
    # Batch 1 is below min 2, which torch does not enforce at run time: eager raises,
    # every program computes, and the unbiased variance of one value leaves running_var NaN.
    (project.path / "cases" / "bn.py").write_text(TRAIN_BATCHNORM)
    case = BATCH.replace("models.py:Mlp}", "bn.py:TrainBatchNorm, mode: train}")
    write_cases(project, case + "    captures: [export]\n")
    result = run_shapes(project, "-p", "no:logging")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "- at batch=1 (below batch's min 2): ep.module(), unflatten(ep), decomposed, saved "
            "and loaded computed a result where eager raised ValueError: Expected more than 1 "
            "value per channel when training, * (torch does not enforce lower bounds of 0-2 at "
            "run time), and left bn.running_var NaN"
        ]
    )
