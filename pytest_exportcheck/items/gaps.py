"""Gaps: what a passing item did not verify, made visible and countable.

A check returns findings (each fails the item) and notes (:class:`Note`, each
says what the check could not verify, and why). On a failing item the notes
are printed under the findings. On a passing item they used to vanish; here
each becomes a :class:`Gap`, carried as the item's ``exportcheck_gaps`` user
property (JSON text, so it survives xdist's and junitxml's serialization) and
shown by the report plugin: the terminal's ``exportcheck gaps`` section, the
matrix's ``g``, the JSON and Markdown reports, and ``--exportcheck-compare``.
``--exportcheck-strict-gaps`` (ini ``exportcheck_strict_gaps``) makes such an
item fail naming its gaps.

Any :class:`Note` a check returns flows through unchanged: a check need not
know this module. A note reads ``what was not verified: why`` (an optional
leading ``note:`` is dropped); a note without ``": "`` is all ``what``. A note
that is context only (it says what *was* verified) is an ``Info``: never a gap.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_exportcheck.containment.failures import CheckFailure

GAPS_PROPERTY = "exportcheck_gaps"
STRICT_OPTION = "exportcheck_strict_gaps"  # the option's dest and the ini key alike
SECTION = "exportcheck gaps"  # the report section pytest prints for the item with -rA / -rP


@dataclass(frozen=True, order=True)
class Gap:
    """One thing a check did not verify on an item that passed, and why."""

    check: str
    what: str
    why: str = ""

    @classmethod
    def from_note(cls, check: str, note: str) -> Gap:
        text = " ".join(str(note).split())  # one line: notes may wrap a long reason
        text = text.removeprefix("note: ")
        what, sep, why = text.partition(": ")
        return cls(check, what.strip(), why.strip() if sep else "")

    @classmethod
    def from_json(cls, value: Any) -> Gap | None:
        if not isinstance(value, dict) or not isinstance(value.get("what"), str):
            return None
        return cls(str(value.get("check") or ""), value["what"], str(value.get("why") or ""))

    def text(self) -> str:
        """``what: why`` — how the gap reads in every surface, and what compare matches."""
        return f"{self.what}: {self.why}" if self.why else self.what

    def to_json(self) -> dict[str, str]:
        return {"check": self.check, "what": self.what, "why": self.why}


def gaps_of(check: str, notes: Iterable[str]) -> list[Gap]:
    """The notes of a passing item as gaps, each once, in the order the check gave them
    (an :class:`~pytest_exportcheck.containment.failures.Info` is context, not a gap)."""
    from pytest_exportcheck.containment.failures import Info

    found = (Gap.from_note(check, n) for n in notes if not isinstance(n, Info))
    return list(dict.fromkeys(found))


def as_property(gaps: Sequence[Gap]) -> str:
    """The ``exportcheck_gaps`` property's value: JSON text, a list of gap objects."""
    return json.dumps([gap.to_json() for gap in gaps])


def from_property(value: Any) -> list[Gap] | None:
    """Gaps back from the property (None: the item carried none, or something unreadable)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, list):
        return None
    gaps = [Gap.from_json(entry) for entry in value]
    return [gap for gap in gaps if gap is not None]


def section_text(gaps: Sequence[Gap]) -> str:
    """The item's own report section: one gap a line."""
    return "\n".join(f"{gap.check}: {gap.text()}" for gap in gaps)


def strict_findings(gaps: Sequence[Gap], source: str) -> list[str]:
    """Under strict gaps, each gap as a finding (``source``: which setting made it fail)."""
    return [f"not verified ({source}): {gap.text()}" for gap in gaps]


def gaps_on_pass(item: Any, notes: Sequence[str]) -> CheckFailure | None:
    """What a passing YAML item (``check_items.CheckItem``) does with its check's notes.

    Under strict gaps: the check's failure naming them, for the item to raise (so an
    xfail of the check applies to it as to any finding). Otherwise the gaps are left on
    the item, as its ``exportcheck_gaps`` property (the reports read it, under xdist
    too) and as a report section pytest prints under the pass with ``-rA``; None.
    """
    gaps = gaps_of(item.check, notes)
    if not gaps:
        return None
    source = strict_source(item.config)
    if source is not None:
        from pytest_exportcheck.containment.failures import CheckFailure

        return CheckFailure(item.check, strict_findings(gaps, source))
    # Set once: pytest may run an item's runtest again (a rerun plugin).
    item.user_properties[:] = [p for p in item.user_properties if p[0] != GAPS_PROPERTY]
    item.user_properties.append((GAPS_PROPERTY, as_property(gaps)))
    item.add_report_section("call", SECTION, section_text(gaps))
    return None


def strict_source(config: Any) -> str | None:
    """``--exportcheck-strict-gaps`` or ``exportcheck_strict_gaps`` when either is on, else None.

    The option wins; the ini key is a bool (``true``/``false``) as pytest parses it.
    """
    if config.getoption(STRICT_OPTION, default=False):
        return "--exportcheck-strict-gaps"
    try:
        on = config.getini(STRICT_OPTION)
    except ValueError:  # the plugin's options are not registered (a bare config)
        return None
    return "exportcheck_strict_gaps" if on else None
