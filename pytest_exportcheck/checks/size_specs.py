"""What a case's spec says of a size a program refused: inside a range it declared, or
inside one torch chose for a marker that declared none.

A marker (``auto``, ``dynamic``) that gives no min or max is run across the range
torch recorded (``shape_markers.marker_ranges``). A program refusing a size there
is still a finding (torch's own record says the program takes it, and eager
computes it), but "inside the declared range" would name a range the case never
wrote::

    at args[0] dim 1=2 (min): ep.module() refused args[0] dim 1=2, which the dim's spec
    allows (no range declared: Dim.AUTO, torch recorded [2, inf]): AssertionError: ...
"""

from __future__ import annotations

from pytest_exportcheck.capture.symbolic import KeptDim
from pytest_exportcheck.spec.dynamic import DynamicSpec, NamedDim, Placement

DECLARED = "refused a size inside the declared range"


def undeclared_bounds(
    spec: DynamicSpec, kept: dict[Placement, KeptDim], ranges: dict[str, NamedDim]
) -> dict[str, str]:
    """For each marker run across sizes (``ranges``) that leaves a bound to torch, by
    its size key: what it declares and what torch recorded."""
    told: dict[str, str] = {}
    for placement in spec.markers():
        marker, key = placement.marker, placement.key()
        if marker is None or key not in ranges or key in told:
            continue
        if marker.min is not None and marker.max is not None:
            continue  # both bounds declared: the size is inside the declared range
        if marker.min is None and marker.max is None:
            what = f"no range declared: {marker.describe()}"
        else:
            what = f"{marker.describe()} declares no {'min' if marker.min is None else 'max'}"
        dim = kept.get(placement)
        recorded = dim.range if dim is not None else None
        told[key] = what + (f", torch recorded [{recorded[0]}, {recorded[1]}]" if recorded else "")
    return told


def refused(sizes: dict[str, int], undeclared: dict[str, str]) -> str:
    """What a program did at ``sizes`` where it refused them, as the spec allows them."""
    left = {name: size for name, size in sizes.items() if name in undeclared}
    if not left:
        return DECLARED
    shown = ", ".join(f"{name}={size}" for name, size in left.items())
    whose = "the dim's spec allows" if len(left) == 1 else "the dims' specs allow"
    if len(left) == 1:
        why = undeclared[next(iter(left))]
    else:
        why = "; ".join(f"{name}: {undeclared[name]}" for name in left)
    text = f"refused {shown}, which {whose} ({why})"
    declared = [f"{name}={size}" for name, size in sizes.items() if name not in undeclared]
    if declared:
        text += f", with {', '.join(declared)} inside the declared range"
    return text
