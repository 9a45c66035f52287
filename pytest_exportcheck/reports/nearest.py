"""A torch with no recording of its own: one block that says so, grouped by what differs.

The next release, a nightly or a minor the project never ran compares its
recorded items with the nearest recording (``recording.py``). Every item that
differs still fails — a difference is a finding — but forty failures saying
the same thing hide what a reader needs first::

    torch 2.12.1: no recordings of its own; compared with torch 2.9 (the nearest
    recorded): 44 of 176 recorded items differ
      dynamo-legacy placeholder names: 40 items, e.g. cases/basics.yaml::mlp::
      recorded[dynamo-legacy-cpu]: L__self___fc1.weight now L__self___fc1_weight
      export-strict lifted state: 4 items, e.g. ...
    run pytest --exportcheck --exportcheck-update to record torch 2.12

(lines folded here; each is one line in the terminal)

Built from the item results alone (the ``recorded_against`` and ``drift``
each recorded item reports), so it reads the same in one process and on the
xdist controller.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pytest_exportcheck.recordings.drift import Drift, DriftGroup, group
from pytest_exportcheck.reports.results import ItemResult

GROUPS_SHOWN = 12


@dataclass
class NearestSummary:
    torch: str  # the installed version, as its metadata says (2.16.0.dev20261101+cpu)
    minor: str  # the minor it is recorded under (2.16)
    against: dict[str, int]  # torch minor compared with -> recorded items compared with it
    compared: int  # recorded items compared with another minor's recording
    differing: int  # of those, the items that differ
    groups: list[DriftGroup]

    def to_json(self) -> dict[str, Any]:
        return {
            "torch": self.torch,
            "minor": self.minor,
            "compared_with": dict(self.against),
            "compared": self.compared,
            "differing": self.differing,
            "groups": [g.to_json() for g in self.groups],
        }


def summarize(results: Iterable[ItemResult], torch: str, minor: str) -> NearestSummary | None:
    """None when every recorded item compared with the run's own minor (or none ran)."""
    elsewhere = [
        r
        for r in results
        if r.check == "recorded" and r.recorded_against and r.recorded_against != minor
    ]
    if not elsewhere:
        return None
    found = [
        (r.nodeid, Drift(str(kind), str(example)))
        for r in elsewhere
        for kind, example in (r.drift or [])
    ]
    return NearestSummary(
        torch=torch,
        minor=minor,
        against=dict(sorted(Counter(str(r.recorded_against) for r in elsewhere).items())),
        compared=len(elsewhere),
        differing=sum(1 for r in elsewhere if r.drift),
        groups=group(found),
    )


def render(summary: NearestSummary, limit: int | None = GROUPS_SHOWN) -> list[str]:
    """The terminal block; the Markdown report uses the same lines."""
    against = ", ".join(
        f"torch {minor} ({count} items)" if len(summary.against) > 1 else f"torch {minor}"
        for minor, count in summary.against.items()
    )
    lines = [
        f"torch {summary.torch}: no recordings of its own; compared with {against} "
        f"(the nearest recorded): {summary.differing} of {summary.compared} recorded items "
        "differ"
    ]
    shown = summary.groups if limit is None else summary.groups[:limit]
    lines += [f"  {g.line()}" for g in shown]
    if len(shown) < len(summary.groups):
        lines.append(f"  … and {len(summary.groups) - len(shown)} more kinds (-v lists them all)")
    lines.append(f"run pytest --exportcheck --exportcheck-update to record torch {summary.minor}")
    return lines
