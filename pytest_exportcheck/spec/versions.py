"""Torch-version conditions in case files: ``torch:`` specifiers and ``when:`` overrides.

export's surface moves every release, so one case file serves several torch
versions by saying where they differ::

    kv_cache:
      ...
      expect:
        placeholders: [...]                # what current torch lifts
      when:
        - torch: "<2.9"                    # older releases: merged over the case
          expect: {placeholders: [...]}
          xfail: {reason: ..., checks: [mutation]}
      xfail:
        - {reason: ..., torch: ">=2.14"}   # an xfail, accept entry or whole case
                                           # can carry its own specifier

Specifiers are PEP 440, matched against the installed torch read from its
metadata (``compat.torch_version``): resolving a case never imports torch.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from packaging.version import InvalidVersion, Version

from pytest_exportcheck.spec import compat
from pytest_exportcheck.spec.yaml_lines import LineDict

if TYPE_CHECKING:
    from pytest_exportcheck.spec.case import Case, XfailSpec

Problem = tuple[str, list[Any]]


def resolve_when(raw: LineDict) -> LineDict:
    """The case as the installed torch sees it: matching ``when`` entries applied, in order.

    ``expect`` is merged key by key, ``xfail`` entries are added, any other key
    replaces the case's. Line numbers travel with the values they came from.
    """
    merged = _copy(raw)
    for entry in raw.get("when", []):
        if not compat.satisfies(entry["torch"]):
            continue
        for key, value in entry.items():
            if key == "torch":
                continue
            if key == "expect":
                expect = _copy(merged.get("expect", LineDict()))
                expect.update(value)
                expect.key_lines.update(getattr(value, "key_lines", {}))
                merged["expect"] = expect
            elif key == "xfail":
                merged["xfail"] = [*_as_list(merged.get("xfail", [])), *_as_list(value)]
            else:
                merged[key] = value
            merged.key_lines[key] = getattr(entry, "key_lines", {}).get(key, merged.line)
    merged.pop("when", None)
    return merged


def specifier_problems(raw: dict[str, Any]) -> Iterator[Problem]:
    """Every ``torch:`` value of a case that is not a PEP 440 specifier, with its path."""
    for path, value in _specifiers(raw, []):
        error = compat.specifier_error(value)
        if error is not None:
            yield (f"torch: {error}", path)


def applies(entry: dict[str, Any]) -> bool:
    """An entry (xfail, accepted difference) without ``torch`` always applies."""
    return "torch" not in entry or compat.satisfies(entry["torch"])


@dataclass(frozen=True)
class Unmet:
    """A raw part of a case whose ``torch:`` condition this torch does not meet."""

    torch: str | None  # None: the case's own expect.placeholders, replaced by `replaced_by`
    kind: str  # "xfail", "placeholders" or "accept"
    value: Any
    line: int | None
    replaced_by: str | None = None


def unmet_conditions(raw: dict[str, Any]) -> list[Unmet]:
    """Every xfail, accepted difference and placeholder expectation of ``raw`` that a
    ``torch:`` condition withholds from the installed torch (see ``spec.case.Elsewhere``)."""
    found = [
        Unmet(x["torch"], "xfail", x, _line(x))
        for x in _as_list(raw.get("xfail", []))
        if isinstance(x, dict) and not applies(x)
    ]
    found += [
        Unmet(a["torch"], "accept", a, _line(a))
        for a in _accepts(raw.get("expect", {}))
        if not applies(a)
    ]
    replaced_by = None
    for entry in raw.get("when", []):
        specifier = entry["torch"]
        expect = entry.get("expect", {})
        if compat.satisfies(specifier):
            if "placeholders" in expect:
                replaced_by = specifier
            continue
        found += [Unmet(specifier, "xfail", x, _line(x)) for x in _as_list(entry.get("xfail", []))]
        found += [Unmet(specifier, "accept", a, _line(a)) for a in _accepts(expect)]
        if "placeholders" in expect:
            line = getattr(expect, "key_lines", {}).get("placeholders")
            found.append(Unmet(specifier, "placeholders", expect["placeholders"], line))
    own = raw.get("expect", {})
    if replaced_by is not None and "placeholders" in own:
        line = getattr(own, "key_lines", {}).get("placeholders")
        found.append(Unmet(None, "placeholders", own["placeholders"], line, replaced_by))
    return found


def xfail_conditions(raw: dict[str, Any]) -> dict[int, str]:
    """id() of each xfail entry that a ``torch:`` condition gives this torch -> the specifier
    (its own, or its ``when`` entry's); resolved cases hold these same entry objects."""
    found = {
        id(x): x["torch"]
        for x in _as_list(raw.get("xfail", []))
        if isinstance(x, dict) and "torch" in x
    }
    for entry in raw.get("when", []):
        for x in _as_list(entry.get("xfail", [])):
            found[id(x)] = x.get("torch") or entry["torch"]
    return found


def _accepts(expect: Any) -> list[Any]:
    return list(expect.get("consistency", {}).get("accept", [])) if isinstance(expect, dict) else []


def _line(node: Any) -> int | None:
    return getattr(node, "line", None)


def _specifiers(node: Any, path: list[Any]) -> Iterator[tuple[list[Any], str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "torch" and isinstance(value, str):
                yield [*path, key], value
            elif key in ("when", "xfail", "expect", "consistency", "accept"):
                yield from _specifiers(value, [*path, key])
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _specifiers(item, [*path, index])


def _copy(mapping: Any) -> LineDict:
    copied = LineDict(mapping)
    copied.line = getattr(mapping, "line", 1)
    copied.key_lines = dict(getattr(mapping, "key_lines", {}))
    return copied


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


# Notes a failure gets when a `torch:` condition looks misplaced: the behaviour a
# condition gives other versions shows on this one too, or the one it gives this
# version does not. They name the condition's file:line so the boundary is moved
# where it is written, naming the installed torch as its metadata says.


def unmet_xfail_note(
    case: Case, capture: str, check: str, device: str, stage: str | None = None
) -> str:
    """For a failing item (of ``stage``): the xfails withheld from this torch that cover it
    ('' if none). One whose ``stage:`` names another stage is not this failure (a crash
    expected on one torch says nothing of a finding on another)."""
    installed = _installed()
    notes = [
        f"version condition: the xfail at {case.at(e.line)} covers this item for torch "
        f"{e.torch} only, and torch {installed} fails it too; if this is the behaviour it "
        f"names ({_gist(e.xfail.reason)}), move its boundary to take {_minor(installed)} in"
        for e in case.elsewhere
        if e.xfail is not None
        and e.xfail.applies_to(capture, check, device)
        and (stage is None or e.xfail.stages is None or stage in e.xfail.stages)
    ]
    return "\n".join(notes)


def passing_xfail_note(xfail: XfailSpec, case: Case) -> str:
    """For an XPASS(strict) of an xfail that a ``torch:`` condition applied ('' if none)."""
    if xfail.torch is None:
        return ""
    installed = _installed()
    return (
        f"version condition: the xfail at {case.at(xfail.line)} is for torch {xfail.torch}, "
        f"which takes torch {installed} in, but this torch does not fail: move its boundary "
        f"to leave {_minor(installed)} out (its reason names the versions it was measured on)"
    )


def placeholder_notes(case: Case, capture: str, matches: Callable[[list[Any]], bool]) -> list[str]:
    """For placeholders that differ from expect.placeholders: the expectations this torch
    was not given that they do match (``matches`` compares one list with the capture)."""
    installed = _installed()
    notes = []
    for e in case.elsewhere:
        listed = e.placeholders.get(capture) if isinstance(e.placeholders, dict) else e.placeholders
        if listed is None or not matches(listed):
            continue
        if e.torch is None:
            notes.append(
                f"version condition: these placeholders are what the case's own "
                f"expect.placeholders says ({case.at(e.line)}); the `when: torch "
                f"{e.replaced_by}` entry that replaces it takes torch {installed} in: move its "
                f"boundary to leave {_minor(installed)} out"
            )
        else:
            notes.append(
                f"version condition: these placeholders are what `when: torch {e.torch}` "
                f"expects ({case.at(e.line)}), which leaves torch {installed} out: if this "
                f"torch behaves like those, move that boundary to take {_minor(installed)} in"
            )
    return notes


def accept_notes(case: Case, rows: list[str]) -> list[str]:
    """For consistency rows that differ undeclared: accepted differences this torch was not
    given that would accept them."""
    installed = _installed()
    return [
        f"version condition: row {row!r} is accepted at {case.at(e.line)} for torch "
        f"{e.torch} only, and torch {installed} shows it too: if it is the same difference "
        f"({_gist(e.accept.reason)}), move that boundary to take {_minor(installed)} in"
        for row in rows
        for e in case.elsewhere
        if e.accept is not None and fnmatch.fnmatchcase(row, e.accept.row)
    ]


def _installed() -> str:
    return str(compat.torch_version())


def _gist(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _minor(installed: str) -> str:
    try:
        version = Version(installed)
    except InvalidVersion:
        return installed
    return f"{version.major}.{version.minor}"
