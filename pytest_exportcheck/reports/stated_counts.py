"""The counts a page states about a run, written from the run's report between markers.

A Markdown page that says how many items a corpus has, or how many pass, goes stale
the day a case is added. Instead it states each count between two HTML comments that
say what is counted, invisible once rendered::

    the bundled cases (<!-- count: items -->2300<!-- /count --> items, of them
    <!-- count: items file=cases/field/** -->286<!-- /count --> skipped without torchvision)

and ``python -m pytest_exportcheck counts REPORT.json PAGE.md ... --record FILE.json``
rewrites every marked number from the report, and records them (with the run they came
from) in one JSON file that a test can hold the pages to without running anything.

A query is ``items``, ``cases`` (distinct case names per file) or ``gaps`` (the gaps of
passing items), then filters ``KEY=V1,V2`` (any of) or ``KEY!=V1,V2`` (none of) on an
item's ``file`` (a glob: ``*`` within one path segment, ``**`` any number of them),
``check`` (``lowered-*``), ``capture``, ``device`` or ``outcome`` (``passed``,
``xfailed``, ``not_applicable``, ...): each a glob.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from pytest_exportcheck.recordings.atomic import write_atomically
from pytest_exportcheck.reports.json_report import BaselineError, load_baseline
from pytest_exportcheck.reports.results import OUTCOMES, PASSING

PROG = "python -m pytest_exportcheck counts"
# The value holds no backtick: a page that shows the markers as code (`<!-- count: Q -->`
# and `<!-- /count -->`) states no count there.
MARK = re.compile(r"<!-- count: (?P<query>[^>]*?) -->(?P<value>[^<\n`]*)<!-- /count -->")
WHATS = ("items", "cases", "gaps")
KEYS = ("file", "check", "capture", "device", "outcome")
_FILTER = re.compile(r"(?P<key>[a-z]+)(?P<op>!?=)(?P<values>[^\s=]+)")


class QueryError(ValueError):
    """A marker whose query cannot be read."""


@dataclass(frozen=True)
class Query:
    what: str
    keep: tuple[tuple[str, tuple[str, ...]], ...]  # (key, values): any of them
    drop: tuple[tuple[str, tuple[str, ...]], ...]  # (key, values): none of them

    @classmethod
    def parse(cls, text: str) -> Query:
        words = text.split()
        if not words or words[0] not in WHATS:
            raise QueryError(f"{text!r}: starts with one of {', '.join(WHATS)}")
        keep: list[tuple[str, tuple[str, ...]]] = []
        drop: list[tuple[str, tuple[str, ...]]] = []
        for word in words[1:]:
            found = _FILTER.fullmatch(word)
            if found is None or found["key"] not in KEYS:
                raise QueryError(
                    f"{text!r}: {word!r} is not KEY=VALUES or KEY!=VALUES "
                    f"with KEY one of {', '.join(KEYS)}"
                )
            values = tuple(found["values"].split(","))
            if found["key"] == "outcome" and not all(
                any(fnmatchcase(o, v) for o in OUTCOMES) for v in values
            ):
                raise QueryError(f"{text!r}: an outcome is one of {', '.join(OUTCOMES)}")
            (keep if found["op"] == "=" else drop).append((found["key"], values))
        return cls(words[0], tuple(keep), tuple(drop))

    def selects(self, item: Mapping[str, Any]) -> bool:
        def meets(key: str, values: tuple[str, ...]) -> bool:
            have = str(item.get(key) or "")
            if key == "file":
                return any(path_matches(have, glob) for glob in values)
            return any(fnmatchcase(have, glob) for glob in values)

        return all(meets(k, v) for k, v in self.keep) and not any(meets(k, v) for k, v in self.drop)

    def count(self, items: Iterable[Mapping[str, Any]]) -> int:
        chosen = [item for item in items if self.selects(item)]
        if self.what == "cases":
            return len({(item.get("file"), item.get("case")) for item in chosen})
        if self.what == "gaps":
            return sum(
                len(item.get("gaps") or []) for item in chosen if item.get("outcome") in PASSING
            )
        return len(chosen)


def path_matches(path: str, glob: str) -> bool:
    """``cases/*.yaml`` holds ``cases/a.yaml``, not ``cases/field/b.yaml``;
    ``cases/field/**`` holds every file under ``cases/field``."""

    def match(parts: Sequence[str], pattern: Sequence[str]) -> bool:
        if not pattern:
            return not parts
        if pattern[0] == "**":
            return any(match(parts[i:], pattern[1:]) for i in range(len(parts) + 1))
        return bool(parts) and fnmatchcase(parts[0], pattern[0]) and match(parts[1:], pattern[1:])

    return match(path.split("/"), glob.split("/"))


def canonical(query: str) -> str:
    """The query's words joined by one space: the key in the record."""
    return " ".join(query.split())


def stated(text: str) -> list[tuple[str, str]]:
    """Every marked count of a page: (query, the value it states)."""
    return [(canonical(m["query"]), m["value"]) for m in MARK.finditer(text)]


def counts(doc: Mapping[str, Any], queries: Iterable[str]) -> dict[str, int]:
    """Each query's count in a report (``QueryError`` on one that cannot be read)."""
    items = doc["items"]
    return {q: Query.parse(q).count(items) for q in sorted(set(map(canonical, queries)))}


def with_counts(text: str, found: Mapping[str, int]) -> str:
    """``text`` with every marked value replaced by its query's count."""

    def fill(m: re.Match[str]) -> str:
        return f"<!-- count: {m['query']} -->{found[canonical(m['query'])]}<!-- /count -->"

    return MARK.sub(fill, text)


def record(doc: Mapping[str, Any], found: Mapping[str, int]) -> dict[str, Any]:
    """The record file's document: the counts and the run they came from."""
    run = doc.get("run") or {}
    keep = ("torch", "python", "platform", "finished", "exitstatus", "args")
    return {"run": {k: run.get(k) for k in keep}, "counts": dict(sorted(found.items()))}


def main(report: Path, pages: list[Path], record_path: Path | None, check: bool) -> int:
    """Write (``check``: compare) the pages' marked counts from ``report``.

    0 when written (or, with ``check``, when every page already states the report's
    counts); 1 with ``check`` when one does not; 2 on an unreadable report, page or query.
    """
    try:
        doc = load_baseline(report)
        texts = {page: page.read_text(encoding="utf-8") for page in pages}
        queries = [q for text in texts.values() for q, _ in stated(text)]
        found = counts(doc, queries)
    except (BaselineError, OSError, QueryError) as exc:
        print(f"{PROG}: {exc}")
        return 2
    stale = 0
    for page, text in texts.items():
        updated = with_counts(text, found)
        if updated == text:
            continue
        stale += 1
        if check:
            for (query, was), (_, now) in zip(stated(text), stated(updated), strict=True):
                if was != now:
                    print(f"{page}: <!-- count: {query} --> states {was}, the report {now}")
        else:
            write_atomically(page, updated)
            print(f"{page}: counts updated")
    if record_path is not None:
        wanted = json.dumps(record(doc, found), indent=2) + "\n"
        if check and _read(record_path) != json.loads(wanted)["counts"]:
            print(f"{record_path}: its counts are not the report's")
            stale += 1
        elif not check:
            write_atomically(record_path, wanted)
    print(
        f"{len(found)} counts from {report} ({len(doc['items'])} items); "
        f"{stale} file(s) {'stale' if check else 'updated'}"
    )
    return 1 if check and stale else 0


def _read(path: Path) -> dict[str, int] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))["counts"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
