"""On a parity failure, the report says where eager and the export start to differ."""

from __future__ import annotations

import pytest
from casekit import MLP_CASE, inject, write_cases


def run_parity(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--exportcheck", "-k", "parity", *args)


def test_the_first_diverging_submodule_is_named(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE.replace("Mlp", "OneBlockPerturbed"))
    result = run_parity(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*parity check failed (4 findings):",
            "  where: first diverging: blocks.1.act (Perturbed) — max abs err 0.1; inputs agree",
        ]
    )


def test_a_module_called_twice_is_compared_call_by_call(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE.replace("Mlp", "SecondCallPerturbed"))
    result = run_parity(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "  where: first diverging: act (LargeValuesPerturbed, call 2) — max abs err 0.1; "
            "inputs agree"
        ]
    )


def test_when_unflatten_fails_it_says_so(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE.replace("Mlp", "OneBlockPerturbed"))
    inject(
        project,
        """
        def broken():
            raise RuntimeError("no unflatten today")
        record.fresh_unflattened = broken
        """,
    )
    result = run_parity(project)
    result.assert_outcomes(failed=1)
    # ep.module() and unflatten(ep) cannot be walked; the decomposed program still is.
    result.stdout.fnmatch_lines(
        [
            "  where (unflatten(ep)): not localized: torch.export.unflatten raised RuntimeError",
            "  where (decomposed): first diverging: blocks.1.act (Perturbed)*",
        ]
    )


def test_a_flat_graph_cannot_be_localized_and_says_why(project: pytest.Pytester) -> None:
    write_cases(
        project,
        MLP_CASE.replace("Mlp", "OneBlockPerturbed").replace(
            "inputs:", "captures: [dynamo-legacy]\n    inputs:"
        ),
    )
    result = run_parity(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["  where: not localized: dynamo-legacy has no module hierarchy to compare call by call"]
    )


def test_a_difference_in_the_roots_own_ops_is_said_to_be_there(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    inject(
        project,
        """
        make = record.fresh_unflattened
        def noisy():
            module = make()
            module.register_forward_hook(lambda m, a, out: out + 1.0)
            return module
        record.fresh_unflattened = noisy
        """,
    )
    result = run_parity(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "  where: not localized: every submodule call agrees; the difference is in the root's own ops"
        ]
    )


BLOCKS = """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x)) + 1.0


class Blocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block(), Block())

    def forward(self, x):
        return self.blocks(x)
"""

# The decomposed program alone goes wrong, inside blocks.1: its relu becomes a neg.
BREAK_DECOMPOSED = """
import torch
program = record.decomposed
for node in program.graph.nodes:
    stack = node.meta.get("nn_module_stack") or {}
    in_block = any(str(path).endswith("blocks.1") for path, _ in stack.values())
    if node.op == "call_function" and node.target == torch.ops.aten.relu.default and in_block:
        node.target = torch.ops.aten.neg.default
program.graph_module.recompile()
"""


def test_the_program_that_failed_is_the_one_walked(project: pytest.Pytester) -> None:
    (project.path / "cases" / "blocks.py").write_text(BLOCKS)
    write_cases(
        project,
        """
        cases:
          blocks:
            description: three blocks
            model: {target: blocks.py:Blocks}
            inputs: {args: [{shape: [2, 4]}]}
            checks: [parity]
        """,
    )
    inject(project, BREAK_DECOMPOSED)
    result = run_parity(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*parity check failed (1 finding):", "*decomposed*"])
    result.stdout.fnmatch_lines(
        ["  where: first diverging: blocks.1 (Block) — max abs err *; inputs agree"]
    )
