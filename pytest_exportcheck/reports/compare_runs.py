"""This run against a baseline report: what got worse, what got better, what moved.

Written for a release engineer comparing two torch versions over the same
corpus: every item that changed is named once, under the kind of change,
regressions first, each with the headline that says why — and recorded
observations (placeholders, modules, mutations) that changed are diffed even
where both runs pass, since that is how a new torch changes what export
produces without anything failing yet.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_exportcheck.recordings.drift import DriftGroup, drifts, group
from pytest_exportcheck.reports.gap_summary import gap_texts
from pytest_exportcheck.reports.results import FAILING, PASSING

WAS_GOOD = frozenset({"passed", "xpassed", "xfailed"})  # a failure now is a regression
NOW_GOOD = frozenset({"passed", "xpassed"})  # after a failure: a fix
OBSERVATION_KEYS = ("placeholders", "modules", "mutations")
_LIST_LIMIT = 6

Item = Mapping[str, Any]


@dataclass
class Change:
    nodeid: str
    before: str | None  # the baseline outcome (None: not in the baseline)
    after: str | None  # this run's outcome (None: not in this run)
    lines: list[str] = field(default_factory=list)  # detail, printed indented under it


# (attribute, heading, singular) in the order printed: what needs action first.
KINDS: tuple[tuple[str, str, str], ...] = (
    ("regressions", "regressions", "regression"),
    ("fixes", "fixes", "fix"),
    ("failing_differently", "failing differently", "failing differently"),
    ("other", "other outcome changes", "other outcome change"),
    ("observations", "observations changed", "observation changed"),
    ("gaps", "gaps changed", "gaps changed"),
    ("new", "new items", "new item"),
    ("removed", "removed items", "removed item"),
)


@dataclass
class Comparison:
    baseline: str  # where the baseline was read from, as given
    baseline_run: dict[str, Any]
    regressions: list[Change] = field(default_factory=list)
    fixes: list[Change] = field(default_factory=list)
    failing_differently: list[Change] = field(default_factory=list)
    other: list[Change] = field(default_factory=list)
    observations: list[Change] = field(default_factory=list)
    # passing items whose gaps (what their check did not verify) appeared or went
    gaps: list[Change] = field(default_factory=list)
    new: list[Change] = field(default_factory=list)
    removed: list[Change] = field(default_factory=list)
    unchanged: int = 0
    # baseline items this run did not look at: deselected (-k, -m, --lf) or in files
    # outside the paths it was given; neither removed nor changed
    not_run: int = 0
    # the changed observations by kind, as `python -m pytest_exportcheck versions` groups
    # the same change between two recordings (drift.py)
    drift: list[DriftGroup] = field(default_factory=list)

    def groups(self) -> list[tuple[str, list[Change]]]:
        """(heading, changes) per kind, in print order; a heading reads "2 <heading>"."""
        return [(heading, getattr(self, name)) for name, heading, _ in KINDS]

    def counts(self) -> str:
        """``1 regression, 2 observations changed; 40 unchanged; 900 not run here``."""
        parts = []
        for name, plural, singular in KINDS:
            n = len(getattr(self, name))
            if n:
                parts.append(f"{n} {singular if n == 1 else plural}")
        text = f"{', '.join(parts) or 'no changes'}; {self.unchanged} unchanged"
        if self.not_run:
            text += (
                f"; {self.not_run} baseline item{'s' if self.not_run != 1 else ''} not run here "
                "(deselected, or outside the paths given)"
            )
        return text

    def summary(self) -> dict[str, Any]:
        """For the JSON report: the baseline and the node ids of each kind of change."""
        return {
            "baseline": self.baseline,
            "baseline_torch": self.baseline_run.get("torch"),
            "unchanged": self.unchanged,
            "not_run": self.not_run,
            **{name: [c.nodeid for c in getattr(self, name)] for name, _, _ in KINDS},
            # Each changed item's baseline outcome, for "was → now" (the HTML report).
            "was": {
                c.nodeid: c.before
                for name, _, _ in KINDS
                for c in getattr(self, name)
                if c.before is not None
            },
            "observations_by_kind": [g.to_json() for g in self.drift],
        }


def _message(item: Item) -> str | None:
    return item.get("message")


@dataclass(frozen=True)
class RunScope:
    """What this run looked at: the files it collected from, and the items it deselected.

    A baseline item outside it was not run here; only one inside it that is gone
    was removed.
    """

    files: frozenset[str]
    deselected: frozenset[str] = frozenset()

    def covers(self, nodeid: str) -> bool:
        # A fixture call's items extend their test's node id: deselecting the test
        # deselects them (``test_m.py::test_x`` covers ``test_m.py::test_x::Mlp::parity[...]``).
        parts = nodeid.split("::")
        tests = {"::".join(parts[:end]) for end in range(2, len(parts) + 1)}
        # A file's path may hold "::" itself (a directory "a::b"): match by prefix.
        in_files = parts[0] in self.files or any(
            nodeid.startswith(f"{path}::") for path in self.files if "::" in path
        )
        return not (tests & self.deselected) and in_files


def compare(
    baseline: Mapping[str, Any],
    current: Iterable[Item],
    *,
    source: str,
    scope: RunScope | None = None,
) -> Comparison:
    """Sort every node id of either run into at most one kind of outcome change, plus
    (independently) a changed observation. Baseline items outside ``scope`` are counted
    as not run; without a scope, every missing item is removed."""
    before = {item["nodeid"]: item for item in baseline.get("items", [])}
    now = {item["nodeid"]: item for item in current}
    result = Comparison(baseline=source, baseline_run=dict(baseline.get("run", {})))
    drifted = []
    for nodeid in sorted(before.keys() | now.keys()):
        old, new = before.get(nodeid), now.get(nodeid)
        if old is None:
            assert new is not None
            lines = [_message(new)] if new["outcome"] in FAILING and _message(new) else []
            lines += gap_diff([], new)
            result.new.append(Change(nodeid, None, new["outcome"], [str(m) for m in lines]))
            continue
        if new is None:
            if scope is not None and not scope.covers(nodeid):
                result.not_run += 1
            else:
                result.removed.append(Change(nodeid, old["outcome"], None))
            continue
        change = Change(nodeid, old["outcome"], new["outcome"])
        a, b = old["outcome"], new["outcome"]
        changed = True
        if a in WAS_GOOD and b in FAILING:
            change.lines = [m for m in [_message(new)] if m]
            result.regressions.append(change)
        elif a in FAILING and b in NOW_GOOD:
            change.lines = [f"was: {m}" for m in [_message(old)] if m]
            result.fixes.append(change)
        elif a != b:
            change.lines = [m for m in [_message(new)] if m]
            change.lines += gap_diff([], new) if a not in PASSING else []  # its gaps are new
            result.other.append(change)
        elif a in (*FAILING, "xfailed") and _message(old) != _message(new):
            change.lines = [f"was: {_message(old)}", f"now: {_message(new)}"]
            result.failing_differently.append(change)
        else:
            changed = False
        diff = observation_diff(old.get("observation"), new.get("observation"))
        if diff:
            result.observations.append(Change(nodeid, a, b, diff))
            capture = str(new.get("capture") or old.get("capture"))
            changes = drifts(capture, old["observation"], new["observation"])
            drifted += [(nodeid, d) for d in changes]
            changed = True
        gaps = gap_diff(old, new)
        if gaps:
            result.gaps.append(Change(nodeid, a, b, gaps))
        elif not changed:
            result.unchanged += 1
    result.drift = group(drifted)
    return result


def gap_diff(old: Item | list[Any], new: Item) -> list[str]:
    """``+gap`` / ``-gap`` lines where a passing item's gaps differ from the baseline's
    (``old`` ``[]``: a new item). Nothing when either did not pass (its outcome change
    says more) or the baseline predates gaps (its items have no ``gaps`` key)."""
    if isinstance(old, Mapping):
        if "gaps" not in old or old["outcome"] not in PASSING:
            return []
        before = gap_texts(old)
    else:
        before = []
    if new["outcome"] not in PASSING:
        return []
    after = gap_texts(new)
    removed = [f"-gap: {text}" for text in before if text not in after]
    return removed + [f"+gap: {text}" for text in after if text not in before]


def _entry(value: Any) -> str:
    """A placeholder ``[name, kind, target]`` as ``name (kind target)``; others as JSON."""
    if isinstance(value, (list, tuple)) and len(value) == 3:
        name, kind, target = value
        return f"{name} ({kind} {target})"
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _bounded(parts: list[str]) -> str:
    if len(parts) <= _LIST_LIMIT:
        return ", ".join(parts)
    return ", ".join(parts[:_LIST_LIMIT]) + f", … (+{len(parts) - _LIST_LIMIT} more)"


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:79] + "…"


def _list_diff(before: list[Any], after: list[Any]) -> str:
    old, new = [_entry(v) for v in before], [_entry(v) for v in after]
    removed = [f"-{v}" for v in old if v not in new]
    added = [f"+{v}" for v in new if v not in old]
    if removed or added:
        return _bounded(removed + added)
    at = next(i for i, (x, y) in enumerate(zip(old, new, strict=False)) if x != y)
    return f"same entries, order changed from #{at + 1}: {old[at]} now {new[at]}"


def _value_diff(key: str, before: Any, after: Any) -> list[str]:
    if isinstance(before, list) and isinstance(after, list):
        return [f"{key}: {_list_diff(before, after)}"]
    if isinstance(before, dict) and isinstance(after, dict):
        lines = []
        for sub in sorted(before.keys() | after.keys()):
            if before.get(sub) != after.get(sub):
                lines += _value_diff(f"{key}.{sub}", before.get(sub, []), after.get(sub, []))
        return lines
    return [f"{key}: {_short(before)} -> {_short(after)}"]


def observation_diff(before: Any, after: Any) -> list[str]:
    """One line per changed part of a recorded observation ([] when equal or either is absent).

    ``placeholders: -p_old (parameter lin.weight), +p_new (parameter lin.weight)``;
    ``mutations.buffers: +count``; ``modules: null -> ["lin"]``.
    """
    if before is None or after is None or before == after:
        return []
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return [f"{_short(before)} -> {_short(after)}"]
    keys = [k for k in OBSERVATION_KEYS if k in before or k in after]
    keys += sorted((before.keys() | after.keys()) - set(OBSERVATION_KEYS))
    lines: list[str] = []
    for key in keys:
        if before.get(key) != after.get(key):
            lines += _value_diff(key, before.get(key), after.get(key))
    return lines


def _name(outcome: str | None) -> str:
    return "n/a" if outcome == "not_applicable" else str(outcome)


def arrow(change: Change, sep: str = "->") -> str:
    """``passed -> failed``; ``new: passed``; ``was: failed``; one outcome if unchanged."""
    before, after = _name(change.before), _name(change.after)
    if change.before is None:
        return f"new: {after}"
    if change.after is None:
        return f"was: {before}"
    return after if before == after else f"{before} {sep} {after}"


def describe_run(run: Mapping[str, Any]) -> str:
    torch = run.get("torch") or "not installed"
    parts = [f"torch {torch}", f"Python {run.get('python', '?')}"]
    if run.get("finished"):
        parts.append(f"finished {run['finished']}")
    return ", ".join(parts)


def render(comparison: Comparison, this_run: Mapping[str, Any], limit: int | None) -> list[str]:
    """The terminal section: runs compared, one count line, then each non-empty group.

    ``limit`` caps the items listed per group (None: all of them; -v asks for that).
    """
    lines = [
        f"baseline: {describe_run(comparison.baseline_run)} ({comparison.baseline})",
        f"this run: {describe_run(this_run)}",
    ]
    lines.append(comparison.counts())
    for heading, changes in comparison.groups():
        if not changes:
            continue
        lines.append(f"{heading} ({len(changes)}):")
        if changes is comparison.observations and comparison.drift:
            lines += [f"  by kind: {g.line()}" for g in comparison.drift]
        shown = changes if limit is None else changes[:limit]
        for change in shown:
            lines.append(f"  {change.nodeid}  {arrow(change)}")
            lines += [f"      {line}" for line in change.lines]
        if len(shown) < len(changes):
            lines.append(f"  … and {len(changes) - len(shown)} more (-v lists them all)")
    return lines
