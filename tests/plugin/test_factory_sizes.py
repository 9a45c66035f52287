"""An input factory's inputs are run at other sizes, by ``shapes`` and ``lowered-<target>`` alike.

A factory that takes ``dims`` is asked for each named dim's size; an unnamed marker
gives it no name to be asked by, so that tensor is cut from the factory's or repeated
along the dim. Before, ``lowered[saved]`` ran no size of any factory case (a gap, "the
inputs come in one size", while ``shapes`` ran them all), and an unnamed marker on a
factory's input was run by neither: the item passed with "recorded as [2, inf]".
"""

from __future__ import annotations

import pytest
from casekit import write_cases

ODD = '''
import torch
from torch import nn


class Odd(nn.Module):
    """Exported at 3 rows with Dim.AUTO, the program guards the batch's parity: torch
    records [2, inf] and refuses 2, 4 and 6 rows, which eager computes."""

    def forward(self, x):
        if x.shape[0] % 2 == 1:
            return x * 2
        return x * 3


def three_rows(dims=None):
    """Takes dims, but an unnamed marker's size is not in them."""
    return (torch.randn(3, 4),), {}
'''

CASES = """
cases:
  batch_one:
    description: a branch on batch 1, inputs from a factory that takes dims
    model: {target: models.py:BatchOne}
    inputs: {factory: models.py:make_sized_inputs}
    checks: [shapes]
    dynamic:
      dims: {batch: {min: 1, max: 8}}
      shapes: {"args[0]": {0: batch}}
    lower: [saved]
  odd:
    description: an unnamed auto marker on a factory's input
    model: {target: odd.py:Odd}
    inputs: {factory: odd.py:three_rows}
    checks: [shapes]
    dynamic:
      shapes: {"args[0]": {0: auto}}
    lower: [saved]
"""


def test_a_factorys_sizes_are_run_by_shapes_and_the_lowered_program(
    project: pytest.Pytester,
) -> None:
    (project.path / "cases" / "odd.py").write_text(ODD)
    write_cases(project, CASES)
    result = project.runpytest("--exportcheck", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=4)
    for item in ("shapes[[]export-cpu[]]", "lowered[[]saved-export-cpu[]]"):
        # The batch-1 branch: dims={"batch": 1} asked of the factory, for both items.
        result.stdout.fnmatch_lines(
            [f"*batch_one::{item}*", "- at batch=1 (min): output: 4 / 4 elements outside *"]
        )
    guard = "AssertionError: Guard failed: x.size()[[]0[]] % 2 == 1"
    result.stdout.fnmatch_lines(
        [
            "*odd::shapes[[]export-cpu[]]*",
            "- at args[[]0[]] dim 0=2 (min): ep.module(), decomposed, saved and loaded refused "
            "args[[]0[]] dim 0=2, which the dim's spec allows (no range declared: Dim.AUTO, "
            f"torch recorded [[]2, inf[]]): {guard}",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*odd::lowered[[]saved-export-cpu[]]*",
            "- at args[[]0[]] dim 0=2 (min): the program lowered to saved refused args[[]0[]] "
            "dim 0=2, which the dim's spec allows (no range declared: Dim.AUTO, torch recorded "
            f"[[]2, inf[]]): {guard}",
        ]
    )
    result.stdout.no_fnmatch_line("*come in one size*")
