"""lowered-<target> across a ``dynamic:`` case's sizes, the way ``shapes`` runs the program.

A lowered program is compiled for the declared range, and is where a size can go
wrong silently: pytorch/pytorch#151925, an AOTInductor package ran a size that
broke the program's guard "without errors"; #153756, runtime assertions "could
just get dropped" on the way down. So at each size ``shapes`` checks (min, max, a
seeded size inside, 0 and 1 where allowed, the case's sizes; ``checked_sizes``)
the lowered program must compute what eager computes, and above each named dim's
max (below its min where the min is over 2: torch enforces no lower bound of 0-2
at run time) it must refuse: a result there is a finding, whatever its values.

The sizes are the ones ``shapes`` runs (``size_plan``): an input factory that takes
``dims`` is asked for them, and a marker (``Dim.AUTO``, ``DYNAMIC``) torch kept
dynamic is run across the range the capture recorded, or the case's; outside it
only where the case gave the marker a max (else the range is torch's to choose).
Each size is a fresh call of the same lowered program, after the stepped
comparison: its state has been stepped, which outputs of a stateless program do
not see, and a stateful one's are judged at the example size only (said).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_exportcheck.capture.record import CaptureRecord
from pytest_exportcheck.capture.symbolic import kept_dims
from pytest_exportcheck.checks.shape_runs import inputs_at, run_once, show_sizes
from pytest_exportcheck.checks.shapes import checked_sizes
from pytest_exportcheck.checks.size_plan import one_size, size_plan
from pytest_exportcheck.checks.size_specs import refused
from pytest_exportcheck.comparison.compare_values import Tolerance, compare_trees
from pytest_exportcheck.containment.failures import Note
from pytest_exportcheck.model.build import BuildError
from pytest_exportcheck.spec import Case


def lowered_across_sizes(
    case: Case, record: CaptureRecord, call: Callable[..., Any], label: str, stateful: bool
) -> list[str]:
    """Findings of ``call`` (the program ``label``) at the case's checked sizes and outside."""
    if case.dynamic is None:
        return []
    why = one_size(case)
    if why is not None:
        return [Note(f"sizes not run for the program {label}: the inputs come in one size ({why})")]
    if stateful:
        return [Note(f"sizes not run for the program {label}: its state changes each call")]
    plan = size_plan(case, record, kept_dims(record, case.dynamic))
    spec = plan.sized
    findings: list[str] = []
    tolerance = Tolerance.of_case(case)
    device = record.subject.device
    example = {name: spec.example.get(name, dim.min) for name, dim in spec.named.items()}

    def runs(sizes: dict[str, int]) -> tuple[Any, str | None, Any, str | None] | str:
        inputs = inputs_at(case, spec, sizes, device)
        if isinstance(inputs, BuildError):
            return f"the inputs cannot be made at this size: {inputs}"
        eager, eager_error = run_once(lambda: record.subject.model_copy(), inputs, case.seed)
        got, error = run_once(lambda: call, inputs, case.seed)
        return eager, eager_error, got, error

    for size_label, sizes in checked_sizes(case, spec):
        if sizes == example:
            continue  # the stepped comparison judged it
        where = f"at {show_sizes(sizes)} ({size_label})"
        ran = runs(sizes)
        if isinstance(ran, str):
            findings.append(f"{where}: {ran}")
            continue
        eager, eager_error, got, error = ran
        if eager_error is None and error is not None:
            findings.append(
                f"{where}: the program {label} {refused(sizes, plan.undeclared)}: {error}"
            )
        elif eager_error is not None and error is None:
            findings.append(f"{where}: eager raised {eager_error}, the program {label} computed")
        elif eager_error is None:
            problems = compare_trees(eager, got, tolerance=tolerance, names=("eager", label))
            findings += [f"{where}: {problem}" for problem in problems[:1]]
    for name, dim in spec.named.items():
        if name in plan.unbounded:
            continue  # a marker the case gave no max: its range is torch's to choose
        tries = [(dim.max + 1, f"above {name}'s max {dim.max}")]
        if dim.min > 2:
            tries.append((dim.min - 1, f"below {name}'s min {dim.min}"))
        for size, why in tries:
            ran = runs({**example, name: size})
            if isinstance(ran, str) or ran[3] is not None:
                continue  # no inputs there, or refused: as it should be
            findings.append(
                f"at {show_sizes({**example, name: size})} ({why}): the program {label} "
                f"accepted a size outside the declared range [{dim.min}, {dim.max}] and "
                "computed a result"
            )
    return findings
