"""shapes for the markers (``auto``, ``dynamic``): what torch chose, and other sizes run.

A marker declares no range of its own (unless the case gives it one): torch picks
one, or makes the dim static. The rule, per torch's own semantics
(``torch/export/dynamic_shapes.py``: AUTO "automatic inference of shape (static or
dynamic)", DYNAMIC "will error out if specialized"):

    auto      static: run at the next size, a note (torch may choose) where eager
              computes it and a program refuses, except a dim made static at an
              example size of 0 or 1 (torch's 0/1 specialization: the example chose
              it, not the model): a finding; a narrowed range: a note
    dynamic   static: a finding; a range narrower than the case's min/max: a finding;
              narrowed where the case gave no range: a note
    both      run at other sizes like a named dim: inside the case's range or the
              recorded one (an unbounded max tried at twice the example), and
              outside the case's range where it gave one; the range recorded, where
              sizes ran inside it, and a static dim eager refuses to vary too, are
              context (``Info``), not gaps

For that a dynamic marker becomes, for the size checks, a named dim keyed by its
name (``{dynamic: {name: rows}}``) or its place (``args[0] dim 0``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from pytest_exportcheck.capture.record import CaptureRecord
from pytest_exportcheck.capture.symbolic import KeptDim
from pytest_exportcheck.checks.narrowed import narrowed
from pytest_exportcheck.checks.shape_runs import Sizes, inputs_at, programs_at, run_once
from pytest_exportcheck.comparison.compare_values import Tolerance, compare_trees
from pytest_exportcheck.containment.failures import Info, Note
from pytest_exportcheck.model.build import BuildError
from pytest_exportcheck.model.isolation import flat_inputs
from pytest_exportcheck.spec import Case
from pytest_exportcheck.spec.dynamic import DynamicSpec, Marker, NamedDim, Placement


def marker_examples(spec: DynamicSpec, inputs: tuple[Any, dict[str, Any]]) -> dict[str, int]:
    """Each marker's size in the inputs the capture was made from."""
    shapes = dict(flat_inputs(*inputs))
    found: dict[str, int] = {}
    for placement in spec.markers():
        tensor = shapes.get(placement.path)
        if isinstance(tensor, torch.Tensor) and placement.index < tensor.dim():
            found.setdefault(placement.key(), int(tensor.shape[placement.index]))
    return found


def marker_ranges(
    spec: DynamicSpec, kept: dict[Placement, KeptDim], examples: dict[str, int]
) -> dict[str, NamedDim]:
    """The range each marker is run across: the case's min/max where given, else what
    the capture recorded (an unbounded max: twice the example). Markers torch kept
    static, and ``static`` itself, are left at their example size."""
    ranges: dict[str, NamedDim] = {}
    for placement in spec.markers():
        marker, dim, key = placement.marker, kept.get(placement), placement.key()
        assert marker is not None
        if placement.dim == "static" or dim is None or dim.kind != "symbolic" or key in ranges:
            continue
        if key not in examples:
            continue
        example = examples[key]
        low, high = dim.range if dim.range is not None else (example, "inf")
        low = marker.min if marker.min is not None else low
        if marker.max is not None:
            high = marker.max
        elif high == "inf":
            high = max(2 * example, low + 1)
        ranges[key] = NamedDim(key, min(low, example), max(int(high), example))
    return ranges


def sizing_spec(spec: DynamicSpec, ranges: dict[str, NamedDim], examples: dict[str, int]) -> Any:
    """``spec`` with each marker in ``ranges`` as a named dim, so the size checks run it."""
    placements = tuple(
        dataclasses.replace(p, dim=p.key(), marker=None) if p.key() in ranges else p
        for p in spec.placements
    )
    example = {**spec.example, **{k: examples[k] for k in ranges}}
    return dataclasses.replace(
        spec, named={**spec.named, **ranges}, placements=placements, example=example
    )


def bounded_spec(spec: DynamicSpec, ranges: dict[str, NamedDim]) -> DynamicSpec:
    """Only the markers the case gave a max: the sizes outside them must be refused."""
    keep = {
        p.key()
        for p in spec.placements
        if p.marker is not None and p.marker.max is not None and p.key() in ranges
    }
    named = {n: d for n, d in spec.named.items() if n not in ranges or n in keep}
    return dataclasses.replace(spec, named=named)


def marker_verdicts(spec: DynamicSpec, kept: dict[Placement, KeptDim], capture: str) -> list[str]:
    """What torch chose for each marker, by the rule above (static markers run at
    another size are judged in :func:`specialized_at_another_size`)."""
    findings: list[str] = []
    for placement in spec.markers():
        dim, marker = kept.get(placement), placement.marker
        assert marker is not None
        if dim is None or placement.dim == "static":
            continue
        what = f"{placement.label()} ({placement.describe()})"
        if dim.kind == "static":
            if placement.dim == "dynamic":
                findings.append(
                    f"{what} was specialized to {dim.size}: {capture} made it static, but "
                    "Dim.DYNAMIC demands a dynamic dim"
                )
            else:  # torch may: the next size says whether eager takes more (specialized_markers)
                findings.append(Info(f"note: {what} was made static at {dim.size}"))
            continue
        if dim.kind != "symbolic" or dim.range is None:
            continue
        low, high = dim.range
        if placement.dim == "dynamic" and (marker.min is not None or marker.max is not None):
            # Torch records a hint's lower bound as at least 2 (0/1 specialization) and
            # does not enforce 0-2 at run time: a declared min below 2 is kept.
            want_low = 2 if marker.min is None else marker.min
            narrowed_low = isinstance(low, int) and low > max(want_low, 2)
            # A wider range is no narrowing: a Dynamo graph's ShapeEnv never sees the
            # hint's max ([2, inf]); a program that accepts sizes above it is outside_range's.
            narrowed_high = marker.max is not None and high != "inf" and int(high) < marker.max
            if narrowed_low or narrowed_high:
                head = f"{what} is declared {marker.describe()}, but {capture} narrowed it to "
                head += f"[{low}, {high}]"  # a finding unless eager refuses the cut sizes too
                declared = (want_low, marker.max)
                findings.append(narrowed(head, placement.key(), declared, (low, high)))
                continue
        findings.append(_recorded(what, marker, low, high, capture))
    return findings


def _recorded(what: str, marker: Marker, low: Any, high: Any, capture: str) -> Note:
    """The range torch recorded for a marker it kept dynamic. Sizes are run inside it
    (or inside the case's min/max, where given: :func:`marker_ranges`), so it is context,
    except where torch narrowed a marker the case gave no range: the sizes it cut off
    are never run, and the marker lets torch cut them."""
    recorded = f"note: {what} recorded as [{low}, {high}]"
    own_range = marker.min is not None or marker.max is not None
    # Torch records a marker's lower bound as 2 (0/1 specialization) and no upper one.
    if own_range or ((not isinstance(low, int) or low <= 2) and high == "inf"):
        return Info(recorded)
    return Note(
        f"{recorded}: {capture} narrowed it, as {marker.describe()} lets it do, and the "
        "sizes outside were not run (give the marker a min and max to have them run)"
    )


def specialized_sizes(
    spec: DynamicSpec, kept: dict[Placement, KeptDim], examples: dict[str, int]
) -> list[tuple[Placement, int, DynamicSpec]]:
    """``(placement, other size, spec that sizes it)`` for each ``auto``/``dynamic``
    marker torch made static: the next size up (within the case's max, else down)."""
    tries = []
    for placement in spec.markers():
        dim, marker = kept.get(placement), placement.marker
        assert marker is not None
        if dim is None or dim.kind != "static" or placement.dim == "static":
            continue
        size = dim.size if dim.size is not None else examples.get(placement.key())
        if size is None:
            continue
        other = size + 1 if marker.max is None or size + 1 <= marker.max else size - 1
        if other < (marker.min or 0) or other == size:
            continue
        key = placement.key()
        named = NamedDim(key, min(size, other), max(size, other))
        sized = sizing_spec(spec, {key: named}, {key: size})
        tries.append((placement, other, sized))
    return tries


def specialized_verdict(
    placement: Placement, size: int, other: int, refused: list[str], error: str
) -> str:
    """A finding, or a note for an ``auto`` the model's code specialized."""
    what = (
        f"{placement.label()} ({placement.describe()}) was made static {size}: at {other} "
        f"eager computes, but {', '.join(refused)} refuse it: {error}"
    )
    if placement.dim == "dynamic":
        return what
    if size in (0, 1):
        return (
            f"{what} (torch specializes a Dim.AUTO whose example size is 0 or 1: an example "
            "of 2 or more keeps it dynamic)"
        )
    return Note(f"note: {what} (Dim.AUTO lets torch specialize it)")


def specialized_markers(
    case: Case,
    record: CaptureRecord,
    spec: DynamicSpec,
    kept: dict[Placement, KeptDim],
    examples: Sizes,
) -> list[str]:
    """An ``auto``/``dynamic`` marker torch made static, run at the next size: where
    eager computes it and a program refuses, the dim the user expected to vary does not."""
    findings: list[str] = []
    for placement, other, sized in specialized_sizes(spec, kept, examples):
        roots = {n: sized.example.get(n, d.min) for n, d in sized.named.items()}
        roots[placement.key()] = other
        inputs = inputs_at(case, sized, roots, record.subject.device)
        what = f"{placement.label()} ({placement.describe()})"
        if isinstance(inputs, BuildError):
            findings.append(Note(f"note: {what} not run at {other}: {inputs}"))
            continue
        eager, eager_error = run_once(lambda: record.subject.model_copy(), inputs, case.seed)
        if eager_error is not None:
            # Verified, not a gap: the model itself admits no other size there.
            findings.append(Info(f"note: {what} is static; eager refuses {other} too"))
            continue
        refused, differing = [], []
        tolerance = Tolerance.of_case(case)
        for program, got, error in programs_at(record, inputs, case.seed):
            if error is not None:
                refused.append((program, error))
                continue
            # A graph that checks no size (Dynamo's) computes: with the static size baked in?
            problems = compare_trees(eager, got, tolerance=tolerance, names=("eager", program))
            if problems:
                differing.append(f"{what} is static, and at {other} {problems[0]}")
        if refused:
            size = kept[placement].size
            labels = [p for p, _ in refused]
            findings.append(specialized_verdict(placement, size or 0, other, labels, refused[0][1]))
        findings += differing
    return findings
