"""``dynamic:``: the dimensions a case declares dynamic, and the rules the schema cannot say.

A case names its dimensions once and places them on inputs by input path::

    dynamic:
      dims:
        batch: {min: 1, max: 64}
        seq: {min: 2, max: 512}
        seq2: {expr: 2*seq}              # derived: A*dim + B of a named dim
      shapes:
        args[0]: {0: batch, 1: seq}
        "kwargs['mask']": {0: batch, 1: seq}
        args[1]: {0: auto}               # Dim.AUTO; also static, dynamic
        args[2]: {0: {dynamic: {min: 1, max: 64, name: rows}}}  # Dim.DYNAMIC(min=1, max=64)
      sizes: [{batch: 1, seq: 2, rows: 3}]  # checked besides the defaults

``dims:`` may be left out where every placement is a marker.

Pure (no torch): the capture turns a :class:`DynamicSpec` into torch's
``dynamic_shapes`` (``capture/dynamic_shapes.py``); the ``shapes`` check reads
it to know what to hold the programs to (``checks/shapes.py``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

Problem = tuple[str, list[Any]]
# Placements that are not a named dim: torch.export.Dim.AUTO / STATIC / DYNAMIC.
MARKERS = ("auto", "static", "dynamic")
_EXPR = re.compile(r"^\s*(?:(\d+)\s*\*\s*)?([A-Za-z_]\w*)(?:\s*([-+])\s*(\d+))?\s*$")


@dataclass(frozen=True)
class NamedDim:
    """``torch.export.Dim(name, min=, max=)``."""

    name: str
    min: int
    max: int

    def describe(self) -> str:
        return f"{self.name} [{self.min}, {self.max}]"


@dataclass(frozen=True)
class DerivedDim:
    """``scale * base + offset`` of a named dim (``2*seq``, ``seq+1``)."""

    name: str
    base: str
    scale: int = 1
    offset: int = 0

    def value(self, base_size: int) -> int:
        return self.scale * base_size + self.offset

    def describe(self) -> str:
        scaled = f"{self.scale}*{self.base}" if self.scale != 1 else self.base
        sign = "+" if self.offset > 0 else "-"
        return f"{self.name} = {scaled}" + (f" {sign} {abs(self.offset)}" if self.offset else "")


@dataclass(frozen=True)
class Marker:
    """``Dim.AUTO`` / ``STATIC`` / ``DYNAMIC``, with the range and name a case may give
    it (``{dynamic: {min: 1, max: 64, name: rows}}``). Torch ties no two markers, so a
    name only lets ``sizes:`` set the size of the placements that carry it."""

    kind: str  # one of MARKERS
    min: int | None = None
    max: int | None = None
    name: str | None = None

    def describe(self) -> str:
        bounds = [f"{k}={v}" for k, v in (("min", self.min), ("max", self.max)) if v is not None]
        return f"Dim.{self.kind.upper()}" + (f"({', '.join(bounds)})" if bounds else "")


@dataclass(frozen=True)
class Placement:
    """One dynamic dimension of one input: ``args[0]`` dim 1 is ``seq``."""

    path: str
    index: int
    dim: str  # a named or derived dim, or one of MARKERS
    marker: Marker | None = None  # where ``dim`` is a marker

    def describe(self) -> str:
        return f"{self.path} dim {self.index}"

    def key(self) -> str:
        """The name a marker's size goes by: its own, or its place (``args[0] dim 0``)."""
        if self.marker is not None and self.marker.name:
            return self.marker.name
        return self.dim if self.marker is None else self.describe()

    def by_place(self) -> bool:
        """An unnamed marker, or one run as a dim keyed by its place: no name for a factory."""
        return self.key() == self.describe()

    def label(self) -> str:
        """``batch``, ``auto``, ``rows (dynamic)``: the dim as a finding names it."""
        if self.marker is not None and self.marker.name:
            return f"{self.marker.name} ({self.dim})"
        return self.dim


@dataclass(frozen=True)
class DynamicSpec:
    """A case's ``dynamic:``, validated."""

    named: dict[str, NamedDim]
    derived: dict[str, DerivedDim]
    placements: tuple[Placement, ...]
    sizes: tuple[dict[str, int], ...] = ()
    line: int | None = None
    # The example input's size of each named dim (from the case's tensor specs; none
    # for input factories, read from the built inputs instead).
    example: dict[str, int] = field(default_factory=dict)

    def size(self, dim: str, roots: dict[str, int]) -> int:
        """The size ``dim`` has when the named dims have the sizes ``roots``."""
        if dim in self.derived:
            derived = self.derived[dim]
            return derived.value(roots[derived.base])
        return roots[dim]

    def declared(self) -> list[Placement]:
        """Placements of named and derived dims (the markers declare no range)."""
        return [p for p in self.placements if p.dim not in MARKERS]

    def markers(self) -> list[Placement]:
        """Placements of ``auto``, ``static`` and ``dynamic``."""
        return [p for p in self.placements if p.marker is not None]


def parse_dynamic(raw: dict[str, Any], line: int | None = None) -> DynamicSpec:
    """The spec of a ``dynamic:`` mapping that passed the schema and :func:`dynamic_problems`."""
    named, derived = {}, {}
    for name, spec in raw.get("dims", {}).items():
        if "expr" in spec:
            derived[name] = _derived(name, spec["expr"])
        else:
            named[name] = NamedDim(name, spec["min"], spec["max"])
    placements = tuple(
        _placement(path, int(index), dim)
        for path, dims in raw["shapes"].items()
        for index, dim in dims.items()
    )
    sizes = tuple(dict(s) for s in raw.get("sizes", ()))
    return DynamicSpec(named, derived, placements, sizes, line)


def _placement(path: str, index: int, dim: str | dict[str, Any]) -> Placement:
    if isinstance(dim, dict):  # {dynamic: {min: 1, max: 64, name: rows}}
        ((kind, options),) = dim.items()
        marker = Marker(kind, options.get("min"), options.get("max"), options.get("name"))
        return Placement(path, index, kind, marker)
    return Placement(path, index, dim, Marker(dim) if dim in MARKERS else None)


def _derived(name: str, expr: str) -> DerivedDim:
    match = _EXPR.match(expr)
    assert match is not None  # the schema's pattern
    scale, base, sign, offset = match.groups()
    signed = int(offset or 0) * (-1 if sign == "-" else 1)
    return DerivedDim(name, base, int(scale or 1), signed)


def dynamic_problems(case: dict[str, Any]) -> Iterator[Problem]:
    """Cross-field rules: dims that exist, paths that are tensor inputs, indices in range,
    ranges that hold the example input."""
    raw = case.get("dynamic")
    if raw is None:
        return
    dims = raw.get("dims", {})
    named = {n: s for n, s in dims.items() if "expr" not in s}
    markers: dict[str, tuple[int | None, int | None]] = {}  # a named marker's range
    for name, spec in dims.items():
        where = ["dynamic", "dims", name]
        if "expr" in spec:
            base = _derived(name, spec["expr"]).base
            if base not in named:
                known = sorted(named)
                yield (
                    f"derived dim {name!r} is of {base!r}, which is not a named dim"
                    f"{_did_you_mean(base, known)} (named: {', '.join(known) or 'none'})",
                    [*where, "expr"],
                )
        elif spec["min"] > spec["max"]:
            yield (f"dim {name!r}: min {spec['min']} is above max {spec['max']}", where)
    # Inputs a factory makes, or a Python caller gives (``inputs: {}``), are not known
    # here: the capture checks their paths against the built inputs.
    given = "factory" in case["inputs"] or not case["inputs"]
    tensors = None if given else dict(tensor_paths(case["inputs"]))
    examples: dict[str, tuple[int, str]] = {}
    for path, placed in raw["shapes"].items():
        where = ["dynamic", "shapes", path]
        if tensors is not None and path not in tensors:
            known = sorted(tensors)
            yield (
                f"{path!r} is not a tensor input of this case{_did_you_mean(path, known)} "
                f"(tensor inputs: {', '.join(known) or 'none'})",
                where,
            )
            continue
        shape = tensors[path] if tensors is not None else None
        for index_text, dim in placed.items():
            index = int(index_text)
            if isinstance(dim, dict):
                problem = _marker_problem(_placement(path, index, dim), dims, markers, shape)
                if problem:
                    yield (problem, [*where, index_text])
                continue
            if dim not in dims and dim not in MARKERS:
                choices = sorted(dims) + list(MARKERS)
                yield (
                    f"{path} dim {index}: unknown dim {dim!r}{_did_you_mean(dim, choices)} "
                    f"(dims: {', '.join(sorted(dims))}; or {', '.join(MARKERS)})",
                    [*where, index_text],
                )
                continue
            if shape is None:
                continue
            if index >= len(shape):
                yield (
                    f"{path} has {len(shape)} dimension(s) (shape {shape}): no dim {index}",
                    [*where, index_text],
                )
                continue
            size = shape[index]
            if dim in named:
                low, high = named[dim]["min"], named[dim]["max"]
                if not low <= size <= high:
                    yield (
                        f"{path} dim {index} is {size} in the example input, outside {dim}'s "
                        f"declared range [{low}, {high}]",
                        [*where, index_text],
                    )
                seen = examples.setdefault(dim, (size, f"{path} dim {index}"))
                if seen[0] != size:
                    yield (
                        f"{dim} is {size} at {path} dim {index} but {seen[0]} at {seen[1]} in "
                        "the example inputs: one dim has one size",
                        [*where, index_text],
                    )
    for path, placed in raw["shapes"].items():
        shape = None if tensors is None else tensors.get(path)
        for index_text, dim in placed.items():
            spec = dims.get(dim) if isinstance(dim, str) else None
            if shape is None or spec is None or "expr" not in spec or int(index_text) >= len(shape):
                continue
            derived = _derived(dim, spec["expr"])
            if derived.base in examples:
                want = derived.value(examples[derived.base][0])
                if shape[int(index_text)] != want:
                    yield (
                        f"{path} dim {index_text} is {shape[int(index_text)]} in the example "
                        f"input, but {derived.describe()} is {want} there",
                        ["dynamic", "shapes", path, index_text],
                    )
    for number, sizes in enumerate(raw.get("sizes", [])):
        for name, size in sizes.items():
            where = ["dynamic", "sizes", number, name]
            if name in markers:
                low, high = markers[name]
                if (low is not None and size < low) or (high is not None and size > high):
                    yield (
                        f"sizes[{number}]: {name} = {size} is outside its declared range "
                        f"[{low}, {high}]",
                        where,
                    )
            elif name not in named:
                known = sorted([*named, *markers])
                yield (
                    f"sizes[{number}] names {name!r}, not a named dim or marker"
                    f"{_did_you_mean(name, known)} (derived dims follow their base)",
                    where,
                )
            elif not named[name]["min"] <= size <= named[name]["max"]:
                low, high = named[name]["min"], named[name]["max"]
                yield (
                    f"sizes[{number}]: {name} = {size} is outside its declared range "
                    f"[{low}, {high}] (the shapes check tries sizes outside the range itself)",
                    where,
                )


def _marker_problem(
    placement: Placement,
    dims: dict[str, Any],
    markers: dict[str, tuple[int | None, int | None]],
    shape: list[int] | None,
) -> str | None:
    """What is wrong with a marker given a range or a name; notes its name's range."""
    marker = placement.marker
    assert marker is not None
    where = placement.describe()
    if marker.min is not None and marker.max is not None and marker.min > marker.max:
        return f"{where}: {marker.kind} min {marker.min} is above max {marker.max}"
    if marker.name is not None:
        if marker.name in dims:
            return f"{where}: marker name {marker.name!r} is also a dim under dims:"
        markers[marker.name] = (marker.min, marker.max)
    if shape is None:
        return None
    if placement.index >= len(shape):
        rank = len(shape)
        return f"{placement.path} has {rank} dimension(s) (shape {shape}): no dim {placement.index}"
    size = shape[placement.index]
    low = 0 if marker.min is None else marker.min
    if size < low or (marker.max is not None and size > marker.max):
        return (
            f"{where} is {size} in the example input, outside {marker.describe()}'s range "
            f"[{low}, {marker.max if marker.max is not None else 'inf'}]"
        )
    return None


def tensor_paths(inputs: dict[str, Any]) -> list[tuple[str, list[int]]]:
    """``(path, shape)`` of every tensor spec of the case's inputs, paths as the
    signature check names inputs (``args[0]``, ``kwargs['mask']``, ``args[1]['a'][0]``)."""
    found: list[tuple[str, list[int]]] = []

    def note(path: str, spec: dict[str, Any]) -> dict[str, Any]:
        found.append((path, list(spec["shape"])))
        return spec

    map_tensor_specs(inputs, note)
    return found


def map_tensor_specs(
    inputs: dict[str, Any], change: Callable[[str, dict[str, Any]], dict[str, Any]]
) -> dict[str, Any]:
    """The case's ``inputs:`` with every tensor spec replaced by ``change(path, spec)``."""
    return {
        "args": [
            _map(value, f"args[{index}]", change)
            for index, value in enumerate(inputs.get("args", []))
        ],
        "kwargs": {
            key: _map(value, f"kwargs[{key!r}]", change)
            for key, value in inputs.get("kwargs", {}).items()
        },
    }


def _map(value: Any, path: str, change: Callable[[str, dict[str, Any]], dict[str, Any]]) -> Any:
    """One input value as the case format nests it: lists, ``{tuple: ...}``,
    ``{dict: ...}``, plain mappings of inputs; tensor specs have a ``shape``."""
    if isinstance(value, list):
        return [_map(item, f"{path}[{i}]", change) for i, item in enumerate(value)]
    if not isinstance(value, dict) or "data" in value:
        return value
    if "shape" in value:
        return change(path, value)
    if "tuple" in value:
        return {"tuple": [_map(v, f"{path}[{i}]", change) for i, v in enumerate(value["tuple"])]}
    if "dict" in value:
        return {"dict": {k: _map(v, f"{path}[{k!r}]", change) for k, v in value["dict"].items()}}
    return {k: _map(v, f"{path}[{k!r}]", change) for k, v in value.items()}


def _did_you_mean(word: str, choices: list[str]) -> str:
    hint = difflib.get_close_matches(word, choices, n=1)
    return f" (did you mean {hint[0]!r}?)" if hint else ""


def resized_inputs(
    inputs: dict[str, Any], spec: DynamicSpec, roots: dict[str, int]
) -> dict[str, Any]:
    """The case's ``inputs:`` with every declared dim set to its size under ``roots``; an
    input factory's gets every dim's size as its ``dims`` keyword instead."""
    if "factory" in inputs:
        # Not an unnamed marker's place: the factory's tensor is sized (checks/shape_runs.py).
        placed = {p.key() for p in spec.placements if p.by_place()}
        dims = {n: spec.size(n, roots) for n in [*spec.named, *spec.derived] if n not in placed}
        # A named marker's size too; an unnamed one has no name a factory could know.
        dims |= {p.key(): roots[p.key()] for p in spec.markers() if p.marker.name in roots}  # type: ignore[union-attr]
        return {**inputs, "kwargs": {**inputs.get("kwargs", {}), "dims": dims}}
    sizes: dict[str, dict[int, int]] = {}
    for placement in spec.declared():
        sizes.setdefault(placement.path, {})[placement.index] = spec.size(placement.dim, roots)
    for placement in spec.markers():  # a marker keeps the example's size unless given one
        if placement.key() in roots:
            sizes.setdefault(placement.path, {})[placement.index] = roots[placement.key()]

    def resize(path: str, tensor: dict[str, Any]) -> dict[str, Any]:
        shape = list(tensor["shape"])
        for index, size in sizes.get(path, {}).items():
            shape[index] = size
        return {**tensor, "shape": shape}

    return map_tensor_specs(inputs, resize)
