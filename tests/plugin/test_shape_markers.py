"""shapes for the markers: ``auto`` and ``dynamic`` are read, run at other sizes, and judged
by their semantics (torch may specialize an ``auto``; a ``dynamic`` it may not).

Each finding comes from a model that really does it, on torch's real export.
"""

from __future__ import annotations

import pytest
from casekit import REEXPORTED_STATIC, inject, write_cases

AUTO = """
cases:
  mlp:
    description: an MLP whose batch torch chooses
    model: {target: models.py:Mlp}
    inputs: {args: [{shape: [3, 4]}]}
    captures: [export]
    dynamic:
      shapes:
        args[0]: {0: auto}
"""

BREAKS_AT_FIVE = '''
import torch
from torch import nn


class BreaksAtFive(nn.Module):
    """Exported at 3, every program keeps the other branch at 5."""

    def forward(self, x):
        if x.shape[0] == 5:
            return x * 3
        return x * 2
'''


def run_shapes(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--exportcheck", "-k", "shapes", "-p", "no:logging", *args)


def test_an_auto_marker_with_an_unbounded_range_is_read(project: pytest.Pytester) -> None:
    # The README's own {0: auto}: export records [2, int_oo], whose int() raised
    # "AttributeError: 'Infinity' object has no attribute '_mpf_'" as an [internal] error.
    # No dims: the case places only a marker.
    write_cases(project, AUTO)
    result = run_shapes(project)
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*internal*")
    # Sizes ran inside the range torch recorded: told, not a gap (it was one, with no why).
    result.stdout.no_fnmatch_line("*passing item* with *gap*")


def test_an_auto_batch_specialized_at_one_is_run_at_two(project: pytest.Pytester) -> None:
    # Exported at batch 1, Dim.AUTO is 0/1-specialized: the programs take only batch 1,
    # eager takes 2. The example chose it, so it is a finding.
    write_cases(project, AUTO.replace("[3, 4]", "[1, 4]"))
    result = run_shapes(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "- auto (args[[]0[]] dim 0) was made static 1: at 2 eager computes, but ep.module(), "
            "unflatten(ep), decomposed, saved and loaded refuse it: *(torch specializes a "
            "Dim.AUTO whose example size is 0 or 1: an example of 2 or more keeps it dynamic)",
        ]
    )


def test_an_auto_marker_is_run_across_its_range(project: pytest.Pytester) -> None:
    # Before, markers were never run at another size: the branch on batch 1 passed.
    case = AUTO.replace("Mlp", "BatchOne").replace("[3, 4]", "[4, 4]")
    write_cases(project, case.replace("{0: auto}", "{0: {auto: {min: 1, max: 8}}}"))
    result = run_shapes(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["- at args[[]0[]] dim 0=1 (min): output: 4 / 4 elements outside tolerance *"]
    )


def test_an_auto_marker_a_guard_narrows_is_a_note(project: pytest.Pytester) -> None:
    # Dim.AUTO lets torch choose: [5, inf] is said, not failed.
    case = AUTO.replace("Mlp", "NarrowsAboveFour").replace("[3, 4]", "[6, 4]")
    write_cases(project, case)
    result = run_shapes(project)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "      auto (args[[]0[]] dim 0) recorded as [[]5, inf[]]: export narrowed it, as "
            "Dim.AUTO lets it do, and the sizes outside were not run (give the marker a min "
            "and max to have them run)"
        ]
    )


def test_a_dynamic_markers_range_narrowed_is_a_finding(project: pytest.Pytester) -> None:
    # Dim.DYNAMIC(min=2, max=8) reaches torch; the guard narrows it to [5, 8].
    case = AUTO.replace("Mlp", "NarrowsAboveFour").replace("[3, 4]", "[6, 4]")
    write_cases(project, case.replace("{0: auto}", "{0: {dynamic: {min: 2, max: 8}}}"))
    result = run_shapes(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "- dynamic (args[[]0[]] dim 0) is declared Dim.DYNAMIC(min=2, max=8), but export "
            "narrowed it to [[]5, 8[]]: the program refuses sizes the case allows",
            "- at args[[]0[]] dim 0=2 (min): *refused a size inside the declared range: *",
        ]
    )


def test_a_dynamic_marker_made_static_is_a_finding(project: pytest.Pytester) -> None:
    # Export itself refuses a DYNAMIC it would specialize; a program that is static anyway
    # (here: re-exported without dynamic_shapes) must not pass.
    write_cases(project, AUTO.replace("{0: auto}", "{0: dynamic}"))
    inject(
        project,
        REEXPORTED_STATIC,
    )
    result = run_shapes(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "- dynamic (args[[]0[]] dim 0) was specialized to 3: export made it static, but "
            "Dim.DYNAMIC demands a dynamic dim",
            "- dynamic (args[[]0[]] dim 0) was made static 3: at 4 eager computes, but "
            "ep.module(), *refuse it: *",
        ]
    )


def test_a_named_marker_is_run_at_the_sizes_the_case_names(project: pytest.Pytester) -> None:
    (project.path / "cases" / "five.py").write_text(BREAKS_AT_FIVE)
    case = AUTO.replace("models.py:Mlp", "five.py:BreaksAtFive")
    case = case.replace("{0: auto}", "{0: {dynamic: {min: 2, max: 64, name: rows}}}")
    write_cases(project, case + "      sizes: [{rows: 5}]\n")
    result = run_shapes(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["- at rows=5 (sizes[[]0[]]): output: * elements outside *"])


def test_a_ranged_dynamic_marker_holds_on_every_capture(project: pytest.Pytester) -> None:
    # A Dynamo graph's ShapeEnv never sees the hint's max ([2, inf]): wider is not narrowed.
    case = AUTO.replace("{0: auto}", "{0: {dynamic: {min: 1, max: 64}}}")
    write_cases(project, case.replace("[export]", "[export, export-strict, dynamo-legacy]"))
    run_shapes(project).assert_outcomes(passed=3)


def test_a_static_marker_graph_that_computes_another_size_is_judged_by_its_result(
    project: pytest.Pytester,
) -> None:
    # torch._dynamo.export's graph checks no size: exported at batch 1 it keeps the
    # batch-1 branch (x * 2) and computes it at batch 2, where eager takes the other.
    case = AUTO.replace("Mlp", "BatchOne").replace("[3, 4]", "[1, 4]")
    write_cases(project, case.replace("[export]", "[dynamo-legacy]"))
    result = run_shapes(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["- auto (args[[]0[]] dim 0) is static, and at 2 output: * elements outside tolerance *"]
    )
