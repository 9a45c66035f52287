"""hierarchy: unflatten must give back the eager tree; each part fails on purpose."""

from __future__ import annotations

import pytest
from casekit import MLP_CASE, inject, write_cases
from replaykit import break_unflatten
from replaykit import hierarchy as run_hierarchy

SHARED_CASE = """
cases:
  shared:
    description: one submodule reached by two names
    model: {target: models.py:Shared}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [hierarchy]
"""


def test_lost_sharing_is_reported_exactly_when_unflatten_loses_it(
    project: pytest.Pytester,
) -> None:
    import torch
    from casekit import load_models

    model = load_models(project).Shared()
    # strict=False as the `export` capture (before 2.8 export defaulted to strict)
    unflat = torch.export.unflatten(torch.export.export(model, (torch.randn(2, 4),), strict=False))
    write_cases(project, SHARED_CASE)
    result = run_hierarchy(project)
    if unflat.a is unflat.b:
        result.assert_outcomes(passed=1)
    else:  # torch 2.13: unflatten gives `a` and `b` one InterpreterModule each
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            ["*'a' and 'b' are one module in eager but two after unflatten"]
        )
        result.stdout.no_fnmatch_line("*eager called it*")


def test_expected_modules_mismatch_shows_a_diff(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE + "    expect: {modules: [fc1, act, fc2]}\n")
    result = run_hierarchy(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*module FQNs after unflatten differ from expect.modules (cases/main.yaml:6) "
            "(1 missing; 2 matching):",
            "*  expected | unflattened",
            "*  fc1      | fc1",
            "*- act      |",
            "*  fc2      | fc2",
        ]
    )


def test_modules_merged_after_unflatten(project: pytest.Pytester) -> None:
    write_cases(
        project, MLP_CASE.replace("Mlp}", "Mlp, kwargs: {dim: 8}}").replace("[2, 4]", "[2, 8]")
    )
    break_unflatten(project, "u.fc2 = u.fc1")
    result = run_hierarchy(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*'fc1' and 'fc2' are two modules in eager but one after unflatten"]
    )


def test_missing_submodule_and_state(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    break_unflatten(project, "del u._modules['fc2']")
    result = run_hierarchy(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*module FQNs after unflatten differ from the eager module tree (1 missing; 1 "
            "matching):",
            "*- fc2      |",
            "*state_dict keys missing after unflatten: fc2.weight, fc2.bias",
        ]
    )


def test_state_values_differ(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    break_unflatten(project, "u.fc1.bias.data.add_(1.0)")
    result = run_hierarchy(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*state_dict[[]'fc1.bias'[]]: 8 / 8 elements outside tolerance (atol=0, rtol=0, exact)*"]
    )


def test_non_persistent_buffer_must_stay_a_buffer(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE.replace("Mlp", "NonPersistent"))
    break_unflatten(
        project, "u._buffers.pop('scale'); u.scale = u.get_parameter('lin.weight') * 0 + 2"
    )
    result = run_hierarchy(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*non-persistent buffer 'scale' is not a buffer after unflatten"])


def test_call_counts_must_match_eager(project: pytest.Pytester) -> None:
    # The model calls `lin` twice; unflatten records two call_module nodes. The
    # injection makes eager's hook count say three, so the counts disagree.
    write_cases(project, MLP_CASE.replace("Mlp", "CalledTwice"))
    inject(
        project,
        """
        from pytest_exportcheck.model.call_counts import CallCounts
        counted = record.subject.call_counts
        record.subject.__dict__["call_counts"] = CallCounts({**counted.calls, "lin": 3})
        """,
    )
    result = run_hierarchy(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*'lin': eager called it 3 time(s), the unflattened module calls it 2 time(s) per "
            "forward (call_module nodes)"
        ]
    )


def test_unflattened_outputs_must_match_eager(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    break_unflatten(project, "u.register_forward_hook(lambda m, a, out: out + 1)")
    result = run_hierarchy(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*output: 8 / 8 elements outside tolerance*max abs err 1*eager *, unflattened *"]
    )


def test_unflatten_that_raises_is_reported(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    inject(
        project,
        """
        def boom():
            raise RuntimeError("unflatten exploded")
        record.fresh_unflattened = boom
        """,
    )
    result = run_hierarchy(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*torch.export.unflatten raised: RuntimeError: unflatten exploded"]
    )


def hierarchy_of(target: str, name: str = "depth", expect: str = "") -> str:
    """A case running only the hierarchy check of ``models.py:<target>`` under export."""
    return f"""
cases:
  {name}:
    description: {target} under the hierarchy check
    model: {{target: models.py:{target}}}
    inputs: {{args: [{{shape: [2, 4]}}]}}
    captures: [export]
    checks: [hierarchy]
{expect}"""


def test_a_module_that_is_a_no_op_in_this_mode_is_a_note_not_a_failure(
    project: pytest.Pytester,
) -> None:
    write_cases(project, hierarchy_of("DepthBlocks"))  # stochastic depth in eval
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(passed=1)
    # Verified (eager returned its input; export rightly records no call), so no gap; and
    # nothing to replay alone: unflatten keeps no graph for it. The field corpus had 4,271
    # such gaps (Identity, eval drop_path) in 4,489 before.
    assert "exportcheck gaps" not in result.stdout.str()
    assert "drop_path not run alone" not in result.stdout.str()


def test_the_no_op_note_shows_beside_a_real_finding(project: pytest.Pytester) -> None:
    write_cases(project, hierarchy_of("DepthBlocks", expect="    expect: {modules: [lin]}\n"))
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*'drop_path' (StochasticDepth) is a no-op in this mode: eager's 1 call(s) returned "
            "the input unchanged, so export records 0 call_module node(s) for it; not compared"
        ]
    )


def test_a_submodule_wrong_when_run_alone_is_named(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    break_unflatten(
        project,
        """if not getattr(u, "broken_once", False):
                u.fc1.register_forward_hook(lambda m, a, out: out + 1.0)
                u.broken_once = True""",
    )
    result = run_hierarchy(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- fc1 (Linear) run alone on eager's inputs differs: fc1 output: "
            "* elements outside tolerance*"
        ]
    )


def test_a_submodule_called_with_keywords_is_called_with_them(project: pytest.Pytester) -> None:
    # Was a gap, "inner not run alone: eager called it with keyword arguments (scale)";
    # u.inner(x, scale=2.0) raises in plain torch (torch 2.13).
    write_cases(project, hierarchy_of("KeywordChild", "kw"))
    result = run_hierarchy(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- inner (ScaledLinear): u.inner(float32[[]2, 4[]], scale=2.0) raises "
            "AssertionError: kwarg_names length 0 does not match kwargs length 1; *"
        ]
    )
