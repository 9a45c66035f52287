"""What changed between two recorded observations, named by kind so that many items group.

A torch upgrade rarely changes one item: torch 2.13's ``torch._dynamo.export``
renames the placeholders of every leaf module at once, so forty items fail
for one reason. Each difference between two observations of a (case,
capture) — the one recorded for an older torch and the one made now, or the
ones recorded for two torch minors — is given a *kind* that reads as what
changed, and an example::

    recorded (2.9)                                 now (2.13)
    ["L__self___lin.weight", "parameter", ...]     ["L__self___lin_weight", "parameter", ...]

    Drift(kind="dynamo-legacy placeholder names",
          example="L__self___lin.weight now L__self___lin_weight")

Kinds are built from the capture and the aspect only (never from case
names), so the same change in many cases groups into one line
(:func:`group`). Used by the recorded check (the summary of a run whose
torch has no recording of its own), ``--exportcheck-compare`` and
``python -m pytest_exportcheck versions`` (the README's table). Plain JSON
in, no torch.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

_EXAMPLE_LIMIT = 160


@dataclass(frozen=True)
class Drift:
    kind: str  # "dynamo-legacy placeholder names": the capture and what changed
    example: str  # one concrete instance, one line


@dataclass(frozen=True)
class DriftGroup:
    kind: str
    items: list[str]  # who shows it (node ids, or case[capture]), sorted
    example: str  # the first item's example

    @property
    def instance(self) -> str:
        """The first item and its example: ``basics::mlp[export]: p_a now p_b``."""
        return f"{self.items[0]}: {self.example}"

    def line(self) -> str:
        noun = "item" if len(self.items) == 1 else "items"
        return f"{self.kind}: {len(self.items)} {noun}, e.g. {self.instance}"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "items": len(self.items), "example": self.instance}


def drifts(capture: str, before: Any, after: Any) -> list[Drift]:
    """The kinds of change from ``before`` to ``after`` (observations of one capture)."""
    if before == after:
        return []
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return [Drift(f"{capture} observation", f"{_short(before)} now {_short(after)}")]
    if "capture" in before or "capture" in after:  # a capture that raised (checks/recorded.py)
        if "capture" not in before:
            return [Drift(f"{capture} capture fails", _bounded(after["capture"]))]
        if "capture" not in after:
            return [Drift(f"{capture} capture works", _bounded(f"was: {before['capture']}"))]
        return [Drift(f"{capture} capture fails differently", _bounded(after["capture"]))]
    found = []
    for aspect, judge in (
        ("placeholders", _placeholders),
        ("modules", _modules),
        ("mutations", _mutations),
        ("dims", _dims),
    ):
        old, new = before.get(aspect), after.get(aspect)
        if old != new:
            what, example = judge(old, new)
            found.append(Drift(f"{capture} {what}", _bounded(example)))
    return found


def group(found: Iterable[tuple[str, Drift]]) -> list[DriftGroup]:
    """(who, drift) pairs → one group per kind, the most common first."""
    by_kind: dict[str, list[tuple[str, Drift]]] = {}
    for who, drift in found:
        by_kind.setdefault(drift.kind, []).append((who, drift))
    groups = []
    for kind, members in by_kind.items():
        members.sort(key=lambda member: member[0])
        groups.append(DriftGroup(kind, [who for who, _ in members], members[0][1].example))
    return sorted(groups, key=lambda g: (-len(g.items), g.kind))


def _dims(old: Any, new: Any) -> tuple[str, str]:
    """How a declared dim is kept: ``dynamic dims``, e.g. ``args[0] dim 0 (batch): symbolic
    [1, 64] now static 4``."""
    old, new = old or {}, new or {}
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            return "dynamic dims", f"{key}: {old.get(key, 'absent')} now {new.get(key, 'absent')}"
    return "dynamic dims", "changed"


def _placeholders(old: Any, new: Any) -> tuple[str, str]:
    if not (isinstance(old, list) and isinstance(new, list)):
        return "placeholders", f"{_short(old)} now {_short(new)}"
    before, after = [_triple(p) for p in old], [_triple(p) for p in new]
    state_before = [(kind, target) for _, kind, target in before]
    state_after = [(kind, target) for _, kind, target in after]
    if state_before == state_after:  # the same tensors in the same order, other names
        at = next(i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b)
        return "placeholder names", f"{before[at][0]} now {after[at][0]}"
    if sorted(before) == sorted(after):
        at = next(i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b)
        return "placeholder order", f"#{at + 1} was {before[at][0]}, now {after[at][0]}"
    if sorted(state_before) == sorted(state_after):
        renamed = [f"{a[0]} now {b[0]}" for a, b in zip(before, after, strict=True) if a != b]
        return "placeholder names and order", ", ".join(renamed)
    gone = [_render(p) for p in before if p not in after]
    added = [_render(p) for p in after if p not in before]
    # Tensors lifted or dropped (or a tied tensor lifted once instead of per name).
    what = "lifted state" if _only_state(gone + added, before + after) else "placeholders"
    return what, ", ".join([*(f"-{p}" for p in gone), *(f"+{p}" for p in added)])


def _only_state(changed: list[str], entries: list[tuple[Any, Any, Any]]) -> bool:
    """Whether every added or removed placeholder is a parameter, buffer or constant."""
    kinds = {_render(p): p[1] for p in entries}
    return all(kinds.get(p) in ("parameter", "buffer", "constant") for p in changed)


def _failing(step: str, old: Any, new: Any) -> tuple[str, str] | None:
    """An aspect recorded as a string is a step that raised: did it start or stop?"""
    if isinstance(new, str) and not isinstance(old, str):
        return f"{step} fails", new
    if isinstance(old, str) and not isinstance(new, str):
        return f"{step} works", f"was: {old}"
    return None


def _modules(old: Any, new: Any) -> tuple[str, str]:
    if failing := _failing("unflatten", old, new):
        return failing
    if isinstance(old, list) and isinstance(new, list):
        gone = [f"-{m}" for m in old if m not in new]
        added = [f"+{m}" for m in new if m not in old]
        return "unflattened modules", ", ".join(gone + added) or "same modules, other order"
    return "unflattened modules", f"{_short(old)} now {_short(new)}"


def _mutations(old: Any, new: Any) -> tuple[str, str]:
    if failing := _failing("decomposition", old, new):
        return failing
    if isinstance(old, dict) and isinstance(new, dict):
        parts = []
        for key in sorted(old.keys() | new.keys()):
            was, now = old.get(key) or [], new.get(key) or []
            changed = [f"-{x}" for x in was if x not in now] + [
                f"+{x}" for x in now if x not in was
            ]
            if changed:
                parts.append(f"{key}: {', '.join(changed)}")
        return "mutation records", "; ".join(parts)
    return "mutation records", f"{_short(old)} now {_short(new)}"


def _triple(entry: Any) -> tuple[Any, Any, Any]:
    if isinstance(entry, (list, tuple)) and len(entry) == 3:
        return tuple(entry)  # type: ignore[return-value]
    return (_short(entry), None, None)


def _render(entry: tuple[Any, Any, Any]) -> str:
    name, kind, target = entry
    return f"{name} ({kind} {target})" if kind is not None else str(name)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:59] + "…"


def _bounded(text: str) -> str:
    return text if len(text) <= _EXAMPLE_LIMIT else text[: _EXAMPLE_LIMIT - 1] + "…"
