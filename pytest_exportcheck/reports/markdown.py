"""The Markdown report: what a CI job summary shows (``cat PATH.md >> $GITHUB_STEP_SUMMARY``).

Ordered for the reader of a red job: totals, the matrix, the failures with
their headlines, the comparison with the baseline, then what did not run and
why (n/a and skips, counted by reason), and the expected failures folded away.
With ``--exportcheck-repro``, the failures and expected failures have a column more:
what each one's plain-torch reproduction gave, and its script's path.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from pytest_exportcheck.reports import gap_summary, repro_outcomes
from pytest_exportcheck.reports import matrix as matrix_mod
from pytest_exportcheck.reports import nearest as nearest_mod
from pytest_exportcheck.reports.compare_runs import Comparison, arrow
from pytest_exportcheck.reports.markdown_text import md_code, md_text
from pytest_exportcheck.reports.results import FAILING, NOT_APPLICABLE, OUTCOMES, describe_totals

_MAX_LISTED = 100


def _cell(text: Any) -> str:
    return md_text(str(text)) if text is not None else ""


def _code(text: Any) -> str:
    return md_code(str(text))


def _listed(rows: list[str], total: int, what: str) -> list[str]:
    more = total - len(rows)
    return [*rows, *([f"\n… and {more} more {what} (all in the JSON report)"] if more > 0 else [])]


def _head(run: Mapping[str, Any], counts: Mapping[str, int]) -> list[str]:
    torch = run.get("torch") or "not installed"
    where = [f"torch {torch}", f"Python {run.get('python')}", str(run.get("platform"))]
    when = f"{run.get('started')}, {run.get('duration')} s"
    lines = [f"## exportcheck: {describe_totals(counts)}", "", " · ".join(where) + f" · {when}", ""]
    lines += ["| outcome | items |", "|---|---:|"]
    lines += [
        f"| {name.replace('_', ' ')} | {counts[name]} |" for name in OUTCOMES if counts.get(name)
    ]
    return lines


def _reproduction(item: Mapping[str, Any]) -> str:
    """The reproduction's cell: its outcome in words (in bold where plain torch contradicts
    the verdict) and the script's path."""
    outcome = item.get("repro_outcome")
    said = _cell(repro_outcomes.described(outcome))
    if repro_outcomes.contradicts(outcome):
        said = f"**{said}**"
    return f"{said}<br>{_code(item['repro'])}" if item.get("repro") else said


def _rule(heading: str) -> str:
    return "|---" * (heading.count("|") - 1) + "|"


def _with_reproductions(
    items: list[Mapping[str, Any]], head: str, rows: list[str]
) -> tuple[str, list[str]]:
    """A table's heading and rows with the reproduction column, where any item has one."""
    if not any(repro_outcomes.has_reproduction(i) for i in items):
        return head, rows
    cells = [_reproduction(i) if repro_outcomes.has_reproduction(i) else "" for i in items]
    rows = [f"{row} {cell} |" for row, cell in zip(rows, cells, strict=True)]
    return head + " plain-torch reproduction |", rows


def _failures(items: list[Mapping[str, Any]]) -> list[str]:
    failing = [i for i in items if i["outcome"] in FAILING]
    if not failing:
        return []
    rows = [
        f"| {_code(i['nodeid'])} | {_cell(i.get('stage'))} | {_cell(i.get('message'))} |"
        for i in failing[:_MAX_LISTED]
    ]
    heading, rows = _with_reproductions(failing[:_MAX_LISTED], "| item | stage | message |", rows)
    head = [f"### Failures ({len(failing)})", ""]
    contradicted = sum(repro_outcomes.contradicts(i.get("repro_outcome")) for i in failing)
    if contradicted:
        head += [
            f"**{contradicted} verdict(s) that plain torch contradicts may be the plugin's own "
            "error: run their scripts, and report them.**",
            "",
        ]
    head += [heading, _rule(heading)]
    return ["", *head, *_listed(rows, len(failing), "failures")]


def _gaps(items: list[Mapping[str, Any]]) -> list[str]:
    """Passing items whose check did not verify everything: one row per gap."""
    summary = gap_summary.summarize(items)
    if not summary.items:
        return []
    rows = [
        f"| {_code(nodeid)} | {_cell(text)} |"
        for found in summary.by_check.values()
        for nodeid, texts in found
        for text in texts
    ]
    head = [f"### Passed with gaps: {summary.headline()}", "", gap_summary.STRICT_HINT, ""]
    head += ["| item | not verified: why |", "|---|---|"]
    return ["", *head, *_listed(rows[:_MAX_LISTED], len(rows), "gaps")]


def _comparison(comparison: Comparison) -> list[str]:
    lines = ["", "### Compared with the baseline", ""]
    lines.append(
        f"{comparison.counts()} "
        f"(baseline: torch {comparison.baseline_run.get('torch')}, {_code(comparison.baseline)})"
    )
    for heading, changes in comparison.groups():
        if not changes:
            continue
        lines += ["", f"**{heading}** ({len(changes)})", ""]
        if changes is comparison.observations and comparison.drift:
            lines += ["| what changes | items | example |", "|---|---:|---|"]
            lines += [
                f"| {_cell(g.kind)} | {len(g.items)} | {_cell(g.instance)} |"
                for g in comparison.drift
            ]
            lines.append("")
        for change in changes[:_MAX_LISTED]:
            detail = "".join(f"<br>{_cell(line)}" for line in change.lines)
            lines.append(f"- {_code(change.nodeid)} {arrow(change, '→')}{detail}")
        if len(changes) > _MAX_LISTED:
            lines.append(f"- … and {len(changes) - _MAX_LISTED} more (all in the JSON report)")
    return lines


def _why(message: str | None) -> str:
    return (message or "").removeprefix(NOT_APPLICABLE)


def _not_run(items: list[Mapping[str, Any]]) -> list[str]:
    lines: list[str] = []
    na = Counter(
        (i.get("capture") or "", i.get("check") or "", _why(i.get("message")))
        for i in items
        if i["outcome"] == "not_applicable"
    )
    if na:
        lines += ["", f"### Not applicable ({na.total()})", ""]
        lines += ["| capture | check | items | why |", "|---|---|---:|---|"]
        lines += [
            f"| {_cell(capture)} | {_cell(check)} | {n} | {_cell(why)} |"
            for (capture, check, why), n in sorted(na.items())
        ]
    skipped = Counter(i.get("message") or "" for i in items if i["outcome"] == "skipped")
    if skipped:
        lines += ["", f"### Skipped ({skipped.total()})", "", "| items | reason |", "|---:|---|"]
        lines += [f"| {n} | {_cell(reason)} |" for reason, n in sorted(skipped.items())]
    return lines


def _xfailed(items: list[Mapping[str, Any]]) -> list[str]:
    xfailed = [i for i in items if i["outcome"] == "xfailed"]
    if not xfailed:
        return []
    rows = [
        f"| {_code(i['nodeid'])} | {_cell(i.get('reason'))} | {_cell(i.get('message'))} |"
        for i in xfailed[:_MAX_LISTED]
    ]
    heading, rows = _with_reproductions(xfailed[:_MAX_LISTED], "| item | reason | message |", rows)
    return [
        "",
        f"<details><summary>Expected failures ({len(xfailed)})</summary>",
        "",
        heading,
        _rule(heading),
        *_listed(rows, len(xfailed), "expected failures"),
        "",
        "</details>",
    ]


def _nearest(summary: nearest_mod.NearestSummary) -> list[str]:
    first, *groups, advice = nearest_mod.render(summary, limit=None)
    return ["", "### No recordings for this torch", "", first, "", *groups, "", advice]


def render(
    doc: Mapping[str, Any],
    matrix: matrix_mod.Matrix,
    comparison: Comparison | None,
    nearest: nearest_mod.NearestSummary | None = None,
) -> str:
    items: list[Mapping[str, Any]] = doc["items"]
    lines = _head(doc["run"], doc["totals"])
    if nearest is not None:  # read first: it explains most of the failures below
        lines += _nearest(nearest)
    if matrix.rows:
        lines += ["", "### Matrix", "", *matrix_mod.render_markdown(matrix)]
    lines += _failures(items)
    lines += _gaps(items)
    if comparison is not None:
        lines += _comparison(comparison)
    lines += _not_run(items)
    lines += _xfailed(items)
    return "\n".join(lines) + "\n"
