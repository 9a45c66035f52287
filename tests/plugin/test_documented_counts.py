"""The counts the pages state about the bundled corpus are a run's, from one place.

README.md and docs/ state each live count between count markers
(``<!-- count: items file=cases/field/** -->364<!-- /count -->``), written from a corpus
run's report by ``python -m pytest_exportcheck counts``, which also records them with
the run in docs/corpus-counts.json. Here:

- every marked count is the recorded one, and every recorded count is stated;
- the cases and items collected now (``--co``, a few seconds) are the recorded ones;
- under CI, whose corpus run's report ``EXPORTCHECK_CORPUS_REPORT`` names, every
  recorded count is that run's;
- a count stated in prose without a marker is a dated measurement (a date or a commit in
  its sentence, in its paragraph's first sentence, or in the sentence that introduces its
  list) or listed below as no claim about the corpus.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import childkit
import pytest

from pytest_exportcheck.reports.stated_counts import MARK, Query, counts, stated

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RECORD = ROOT / "docs" / "corpus-counts.json"
REGENERATE = (
    "run the corpus as CI does (pytest --exportcheck -n auto --exportcheck-report=corpus.json, "
    "with the lowering extra), then: python -m pytest_exportcheck counts corpus.json "
    "README.md docs/*.md --record docs/corpus-counts.json"
)


def recorded() -> dict[str, int]:
    return json.loads(RECORD.read_text(encoding="utf-8"))["counts"]


def test_every_marked_count_is_the_recorded_one() -> None:
    record = recorded()
    wrong, used = [], set()
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        # A line that starts with an HTML comment is a block of raw HTML in CommonMark
        # (GitHub): the count would end its paragraph and the line's Markdown go unread.
        starts = [
            n
            for n, line in enumerate(text.splitlines(), 1)
            if line.lstrip().startswith("<!-- count:")
        ]
        wrong += [
            f"{page.relative_to(ROOT)}:{n}: a line starts with a count marker" for n in starts
        ]
        for query, value in stated(text):
            Query.parse(query)  # a query that cannot be read fails here, by name
            used.add(query)
            if str(record.get(query)) != value:
                wrong.append(
                    f"{page.relative_to(ROOT)}: {query!r} states {value}, "
                    f"the record {record.get(query)}"
                )
    assert not wrong, "\n".join([*wrong, REGENERATE])
    assert set(record) == used, f"recorded, stated nowhere: {sorted(set(record) - used)}"


def test_the_collected_cases_and_items_are_the_recorded_ones() -> None:
    # Counts of items or cases by file need no run: collection gives them (~5 s).
    done = childkit.run(
        [sys.executable, "-m", "pytest", "--exportcheck", "--co", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        warm=True,
    )
    ids = [line for line in done.stdout.splitlines() if "::" in line and " " not in line]
    assert ids, done.stdout[-2000:] + done.stderr[-2000:]
    items = [dict(zip(("file", "case"), nodeid.split("::")[:2], strict=True)) for nodeid in ids]
    record = recorded()
    by_file = [q for q in record if by_file_only(Query.parse(q))]
    assert "items" in by_file
    now = counts({"items": items}, by_file)
    stale = [
        f"{q!r}: recorded {record[q]}, collected {now[q]}" for q in by_file if now[q] != record[q]
    ]
    assert not stale, "\n".join([*stale, REGENERATE])


def by_file_only(query: Query) -> bool:
    """A count of items or cases chosen by file alone: one that collection gives."""
    keys = {key for key, _ in (*query.keep, *query.drop)}
    return query.what in ("items", "cases") and keys <= {"file"}


def test_the_recorded_counts_are_the_corpus_run_s() -> None:
    named = os.environ.get("EXPORTCHECK_CORPUS_REPORT")
    if not named:
        pytest.skip("no corpus report named (CI's .ci/run sets EXPORTCHECK_CORPUS_REPORT)")
    doc = json.loads(Path(named).read_text(encoding="utf-8"))
    record = recorded()
    now = counts(doc, record)
    stale = [
        f"{q!r}: recorded {record[q]}, this run {now[q]}" for q in record if now[q] != record[q]
    ]
    assert not stale, "\n".join([*stale, REGENERATE])


# A count the pages state that is no claim about the corpus, and why.
NO_CLAIM = {
    ("docs/benchmarks.md", "500 generated cases"): "a benchmark's setting",
    ("docs/versions.md", "49 recorded items"): "explains the example output above it",
    ("README.md", "eleven items"): "the README's example case (test_documented_examples)",
}
FENCED = re.compile(r"^```.*?^```", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")
SENTENCE = re.compile(r"(?<=[.;!?])\s+(?=[A-Z*(])")
WORDS = "two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen"
COUNT = re.compile(
    rf"\b(?:\d[\d,]*|{WORDS})(?: [a-z-]+)? "
    r"(?:items?|cases?|passed|xfailed|failed|skipped|not applicable|gaps?)\b",
    re.I,
)
DATED = re.compile(r"\b20\d\d-\d\d-\d\d\b|`[0-9a-f]{7,40}`")


def claims(text: str) -> list[tuple[str, str]]:
    """(a sentence or list item, the text that may date it): its sentence, or the first
    sentence of its paragraph (a dated record); a list or table that a paragraph
    introduces (``:``) is dated as that paragraph's last sentence is."""
    found: list[tuple[str, str]] = []
    intro = ""
    for block in re.split(r"\n\s*\n", FENCED.sub("", MARK.sub("", text))):
        if block.lstrip().startswith(("- ", "|")) and intro.rstrip().endswith(":"):
            entries = re.split(r"\n(?=\s*- |\|)", block)
            found += [(entry, intro + entry) for entry in entries]
            continue
        sentences = SENTENCE.split(block)
        found += [(sentence, sentences[0] + sentence) for sentence in sentences]
        intro = sentences[0] + sentences[-1]
    return found


def unmarked_counts(page: str, text: str) -> list[str]:
    found = []
    for claim, context in claims(text):
        prose = " ".join(INLINE_CODE.sub("", claim).split())
        for m in COUNT.finditer(prose):
            if not DATED.search(context) and (page, m.group()) not in NO_CLAIM:
                found.append(f"{page}: {m.group()!r} in {prose[:100]!r}")
    return found


def test_no_page_states_a_live_count_without_a_marker() -> None:
    found = [
        hit
        for page in PAGES
        for hit in unmarked_counts(str(page.relative_to(ROOT)), page.read_text("utf-8"))
    ]
    assert not found, "\n".join(
        [
            *found,
            "mark a live count (<!-- count: QUERY -->N<!-- /count -->, then regenerate), date a "
            "measurement in its sentence or its paragraph's first, or state no number",
        ]
    )


def test_the_unmarked_count_finder_reads_what_it_should() -> None:
    text = (
        "The corpus has 2300 items, thirteen cases. On 2026-11-27: 63 passed.\n\n"
        "Measured at `bc38f31`: 5 failed. Then 4 failed.\n\nSo 3 failed. On 2026-11-27, 2 failed.\n\n"
        "Measured on 2026-11-27:\n\n- 8 of the 16 dynamic cases\n- 2 items\n\n"
        "Then:\n\n| torch | 7 items |\n\n"
        "Marked: <!-- count: items -->5<!-- /count --> items; `15 passed` is output.\n"
        "```\n11 items: 9 passed\n```\n"
    )
    assert unmarked_counts("p.md", text) == [
        "p.md: '2300 items' in 'The corpus has 2300 items, thirteen cases.'",
        "p.md: 'thirteen cases' in 'The corpus has 2300 items, thirteen cases.'",
        "p.md: '3 failed' in 'So 3 failed.'",
        "p.md: '7 items' in '| torch | 7 items |'",
    ]
