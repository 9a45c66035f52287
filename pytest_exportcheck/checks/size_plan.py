"""Which sizes a ``dynamic:`` case's programs are run at: one plan for ``shapes`` and
``lowered-<target>``, so a size one of them runs the other runs too.

Sizes are made from the case's tensor specs, or by an input factory that takes
``dims`` (its example sizes read from the inputs the capture was made from); a
factory without ``dims`` and the Python API's inputs come in one size. Markers torch
kept dynamic are run as named dims (``shape_markers.marker_ranges``): a factory is
asked for a named marker's size, and an unnamed one's tensor is cut or repeated from
the factory's (``shape_runs.inputs_at``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pytest_exportcheck.capture.record import CaptureRecord
from pytest_exportcheck.capture.symbolic import KeptDim
from pytest_exportcheck.checks.shape_markers import marker_examples, marker_ranges, sizing_spec
from pytest_exportcheck.checks.shape_runs import Sizes, built_sizes
from pytest_exportcheck.checks.size_specs import undeclared_bounds
from pytest_exportcheck.model.build import factory_takes_dims
from pytest_exportcheck.spec import Case
from pytest_exportcheck.spec.dynamic import DynamicSpec, Placement


@dataclass(frozen=True)
class SizePlan:
    spec: DynamicSpec  # the case's, with the example sizes of a factory's inputs
    examples: Sizes  # each marker's size in the example inputs
    sized: DynamicSpec  # ``spec`` with the markers torch kept dynamic as named dims
    unbounded: frozenset[str]  # markers the case gave no max: their range is torch's
    # Markers that leave a bound to torch, by size key: what they declare and torch
    # recorded, so a refusal there names the spec it breaks (``size_specs.refused``).
    undeclared: dict[str, str]


def one_size(case: Case) -> str | None:
    """Why the programs can be run at the example inputs only, or None where other
    sizes can be made."""
    if not case.inputs:
        return "inputs given"
    if "factory" in case.inputs and not factory_takes_dims(case):
        return "the input factory takes no dims argument"
    return None


def size_plan(case: Case, record: CaptureRecord, kept: dict[Placement, KeptDim]) -> SizePlan:
    """The sizes of a case :func:`one_size` finds sizable."""
    spec = case.dynamic
    assert spec is not None
    if "factory" in case.inputs:
        spec = dataclasses.replace(spec, example=built_sizes(spec, record))
    examples = marker_examples(spec, record.subject.pristine_inputs)
    ranges = marker_ranges(spec, kept, examples)
    unbounded = {p.key() for p in spec.markers() if p.marker and p.marker.max is None}
    sized = sizing_spec(spec, ranges, examples)
    undeclared = undeclared_bounds(spec, kept, ranges)
    return SizePlan(spec, examples, sized, frozenset(unbounded), undeclared)
