"""A case's ``dynamic:`` as source: the same ``Dim`` objects, placed on the same inputs.

Mirrors ``capture/dynamic_shapes.py``: one ``torch.export.Dim`` per named dim, derived
dims by arithmetic on it, markers as ``Dim.AUTO`` / ``STATIC`` / ``DYNAMIC`` (with
their range where the case gives one), each placed by its input path (``args[0]``,
``kwargs['mask']``), then bound to ``forward``'s parameter names.
"""

from __future__ import annotations

from pytest_exportcheck.spec.dynamic import DynamicSpec, Placement

SHAPES = '''
def dynamic_shapes(model, args, kwargs):
    """The case's dynamic: as export takes it: per forward parameter, {dim index: Dim}."""
    placed = pytree.tree_map_with_path(lambda p, _: PLACED.get(input_path(p)), (args, kwargs))
    bound = inspect.signature(model.forward).bind(*placed[0], **placed[1])
    return dict(bound.arguments)
'''


def dims_source(spec: DynamicSpec) -> str:
    """The ``Dim`` objects and ``PLACED`` (input path → {dim index: Dim})."""
    lines = ["# dynamic: as the case declares it"]
    names: dict[str, str] = {}
    for name, dim in spec.named.items():
        names[name] = f"dim_{len(names)}"
        lines.append(f"{names[name]} = torch.export.Dim({name!r}, min={dim.min}, max={dim.max})")
    for name, derived in spec.derived.items():
        names[name] = f"dim_{len(names)}"
        base = names[derived.base]
        lines.append(f"{names[name]} = {derived.scale} * {base} + {derived.offset}  # {name}")
    placed: dict[str, list[str]] = {}
    for placement in spec.placements:
        placed.setdefault(placement.path, []).append(
            f"{placement.index}: {_placed(placement, names)}"
        )
    lines.append("PLACED = {")
    lines += [f"    {path!r}: {{{', '.join(dims)}}}," for path, dims in placed.items()]
    return "\n".join([*lines, "}"])


def _placed(placement: Placement, names: dict[str, str]) -> str:
    if placement.dim in names:
        return names[placement.dim]
    made = f"torch.export.Dim.{placement.dim.upper()}"
    marker = placement.marker
    if marker is None or (marker.min is None and marker.max is None):
        return made
    return f"{made}(min={marker.min!r}, max={marker.max!r})"
