"""Capture paths beside torch.export: dynamo, dynamo-legacy and aot-joint, through the plugin."""

from __future__ import annotations

import pytest
from casekit import capture_params, inject, needs_dynamo, write_cases

ALL_PATHS = capture_params("export", "export-strict", "dynamo", "dynamo-legacy", "aot-joint")

TWIN = """
cases:
  twin:
    description: two same-shaped layers and a loss output
    model: {{target: models.py:Twin}}
    inputs: {{args: [{{shape: [2, 4]}}]}}
    captures: [{captures}]
    loss_output: 1
"""

COUNTING = """
cases:
  counting:
    description: a counter buffer and a loss output
    model: {{target: models.py:CountingLoss}}
    inputs: {{args: [{{shape: [2, 4]}}]}}
    captures: [{captures}]
    loss_output: 1
"""

OPTIONS = """
cases:
  options:
    description: non-tensor inputs beside the tensor
    model: {{target: models.py:Options}}
    inputs:
      args: [{{shape: [2, 4]}}, 2]
      kwargs: {{scale: null, negate: true}}
    captures: [{captures}]
    loss_output: 1
"""

SWAP_MAPPINGS = """
import dataclasses
placeholders = record.placeholders
a = next(i for i, p in enumerate(placeholders) if p.target == "a.weight")
b = next(i for i, p in enumerate(placeholders) if p.target == "b.weight")
placeholders[a] = dataclasses.replace(placeholders[a], target="b.weight")
placeholders[b] = dataclasses.replace(placeholders[b], target="a.weight")
"""


@pytest.mark.parametrize("path", ALL_PATHS)
def test_a_path_passes_the_checks_it_supports(project: pytest.Pytester, path: str) -> None:
    write_cases(project, TWIN.format(captures=path))
    result = project.runpytest("--exportcheck", "-rA")
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] == (5 if path.startswith("export") else 4)
    assert "failed" not in outcomes


@pytest.mark.parametrize("path", ALL_PATHS)
def test_non_tensor_inputs_pass_through_every_path(project: pytest.Pytester, path: str) -> None:
    # aot_export_module traces tensors only: an int, None or bool input once crashed the
    # joint capture ('bool' object has no attribute 'requires_grad').
    write_cases(project, OPTIONS.format(captures=path))
    result = project.runpytest("--exportcheck", "-k", "not recorded")
    assert "failed" not in result.parseoutcomes(), result.stdout.str()
    assert result.parseoutcomes()["passed"] >= 3


@pytest.mark.parametrize("path", capture_params("dynamo", "dynamo-legacy", "aot-joint"))
def test_a_wrong_mapping_is_caught_by_what_the_path_feeds(
    project: pytest.Pytester, path: str
) -> None:
    # These paths bind tensors by their own convention (Dynamo's bytecode,
    # get_attr, position): a target that is not what they feed is caught by identity.
    write_cases(project, TWIN.format(captures=path))
    inject(project, SWAP_MAPPINGS, capture=path)
    result = project.runpytest("--exportcheck", "-k", "signature")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [f"*-> b.weight: {path} feeds this placeholder the tensor at a.weight, not 'b.weight'*"]
    )


@pytest.mark.parametrize(
    "path", capture_params("export", "export-strict", "dynamo", "dynamo-legacy")
)
def test_a_wrong_mapping_is_caught_by_where_the_graph_reads_it(
    project: pytest.Pytester, path: str
) -> None:
    # On export the signature's target *is* the binding, so identity cannot
    # disagree with it; the graph's module stacks still show the swap.
    write_cases(project, TWIN.format(captures=path))
    inject(project, SWAP_MAPPINGS, capture=path)
    result = project.runpytest("--exportcheck", "-k", "signature")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*-> b.weight: the graph reads it only inside module(s) 'a', which neither own "
            "'b.weight' nor contain or sit inside its owner"
        ]
    )


@needs_dynamo
def test_a_wrong_mapping_also_shows_as_wrong_numbers_when_dynamo_graphs_are_fed(
    project: pytest.Pytester,
) -> None:
    write_cases(project, TWIN.format(captures="dynamo"))
    inject(project, SWAP_MAPPINGS, capture="dynamo")
    result = project.runpytest("--exportcheck", "-k", "parity")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*output[[]0[]]: * elements outside tolerance*eager *, graph fed eager state *"]
    )


@pytest.mark.parametrize("path", capture_params("dynamo", "dynamo-legacy", "aot-joint"))
def test_hierarchy_is_not_applicable_to_flat_graphs(project: pytest.Pytester, path: str) -> None:
    write_cases(project, TWIN.format(captures=path))
    result = project.runpytest("--exportcheck", "-k", "hierarchy", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED * not applicable: *hierarch*"])


def test_a_path_the_installed_torch_lacks_skips_naming_the_version(
    project: pytest.Pytester,
) -> None:
    write_cases(project, TWIN.format(captures="export, dynamo"))
    project.makeconftest(
        """
        import dataclasses
        from pytest_exportcheck import capture as registry

        def pytest_configure(config):
            config.saved = registry.PATHS["dynamo"]
            registry.PATHS["dynamo"] = dataclasses.replace(
                config.saved, unavailable=lambda: "torch 0.0 has no dynamo_graph_capture_for_export"
            )

        def pytest_unconfigure(config):
            registry.PATHS["dynamo"] = config.saved
        """
    )
    result = project.runpytest("--exportcheck", "-rs", "-k", "dynamo or consistency")
    result.assert_outcomes(skipped=6)  # hierarchy is not applicable to dynamo anyway
    result.stdout.fnmatch_lines(
        [
            "SKIPPED [[]4[]] * torch 0.0 has no dynamo_graph_capture_for_export",
            "SKIPPED [[]1[]] * fewer than two captures to compare "
            "(dynamo: torch 0.0 has no dynamo_graph_capture_for_export)",
        ]
    )


def test_the_joint_graph_needs_the_loss_output(project: pytest.Pytester) -> None:
    write_cases(project, TWIN.format(captures="aot-joint").replace("    loss_output: 1\n", ""))
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*[[]case[]] cases/main.yaml:6: capture 'aot-joint' needs `loss_output`*"]  # captures:
    )


def test_joint_graph_gradients_are_compared_with_eager_autograd(
    project: pytest.Pytester,
) -> None:
    write_cases(project, TWIN.format(captures="aot-joint"))
    inject(
        project,
        """
        gradients = record.gradients
        def skewed(args, kwargs):
            found = gradients(args, kwargs)
            found["a.weight"] = found["a.weight"] * 1.5
            return found
        record.gradients = skewed
        """,
        capture="aot-joint",
    )
    result = project.runpytest("--exportcheck", "-k", "parity")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*grad a.weight: * elements outside tolerance*eager autograd *, joint graph *"]
    )


def test_joint_graph_mutation_records_are_checked(project: pytest.Pytester) -> None:
    write_cases(project, COUNTING.format(captures="aot-joint"))
    inject(project, "record.signature.buffers_to_mutate.clear()", capture="aot-joint")
    result = project.runpytest("--exportcheck", "-k", "mutation")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*eager mutated count but the joint graph's GraphSignature does not record it*"]
    )


def test_the_joint_graph_carries_state_over_calls(project: pytest.Pytester) -> None:
    write_cases(project, COUNTING.format(captures="aot-joint"))
    result = project.runpytest("--exportcheck", "-k", "mutation or parity")
    result.assert_outcomes(passed=2)


@needs_dynamo
def test_state_drift_in_a_dynamo_graph_module_is_caught(project: pytest.Pytester) -> None:
    write_cases(project, COUNTING.format(captures="dynamo"))
    inject(
        project,
        "record.graph_module.register_forward_hook(lambda m, a, out: m.count.add_(1))",
        capture="dynamo",
    )
    result = project.runpytest("--exportcheck", "-k", "mutation")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*after step 1/3: state 'count': 1 / 1 elements outside tolerance*eager 1, graph module 2;*"
        ]
    )


@needs_dynamo
def test_a_dynamo_placeholder_nothing_explains_is_reported(project: pytest.Pytester) -> None:
    write_cases(project, TWIN.format(captures="dynamo"))
    inject(
        project,
        """
        import dataclasses
        record.placeholders[0] = dataclasses.replace(
            record.placeholders[0], kind="unknown", target=None, mapped_by="nothing matched"
        )
        """,
        capture="dynamo",
    )
    result = project.runpytest("--exportcheck", "-k", "signature")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*placeholder 'L_self_modules_a_parameters_weight_' has kind 'unknown'*"]
    )


@pytest.mark.quick
def test_very_verbose_shows_the_graph_around_a_wrong_mapping(project: pytest.Pytester) -> None:
    write_cases(project, TWIN.format(captures="export"))
    inject(project, SWAP_MAPPINGS, capture="export")
    result = project.runpytest("--exportcheck", "-k", "signature", "-vv")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "graph excerpt (export: the nodes named above and their users):",
            "%p_a_weight : * = placeholder[[]target=p_a_weight[]]",
            "    %linear : * = call_function[[]target=torch.ops.aten.linear.default[]]*",
        ]
    )
    quiet = project.runpytest("--exportcheck", "-k", "signature")
    assert "graph excerpt" not in quiet.stdout.str()
