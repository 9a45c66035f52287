"""GitHub Actions: failures as annotations on the case's YAML line, the report as the job summary.

GitHub reads *workflow commands* from a step's output: a line
``::error file=cases/a.yaml,line=9,title=...::text`` becomes an annotation on that
line of the pull request's diff (the convention pytest-github-actions-annotate-failures
set for Python tests). GitHub shows at most 10 error annotations per step, so one
annotation stands for one root cause, not for every item that shares it: the items a
failure stopped (``(full report on ...)``, ``(while running ...)``) and the items that
failed with the same words at the same line (numbers aside: a worker's name, a size) are
counted in the first one's text, and
causes past the cap are summarized in the last annotation. With ``--exportcheck-repro``
an annotation also says what the first item's plain-torch reproduction gave, and where
its script is (``repro_outcomes.py``).

The job summary is the file ``$GITHUB_STEP_SUMMARY`` names: the Markdown report is
appended to it (GitHub's own convention: each step appends), cut at GitHub's 1 MiB.

``--exportcheck-github``: ``auto`` (the default) annotates where ``GITHUB_ACTIONS`` is
``true`` and writes the summary where ``GITHUB_STEP_SUMMARY`` is set; ``on`` annotates
anywhere; ``off`` does neither. Pure functions of the results, so the controller of an
xdist run (which imports no torch) and ``merge`` use them alike.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_exportcheck.reports import repro_outcomes
from pytest_exportcheck.reports.results import FAILING, ItemResult

MODES = ("auto", "on", "off")
MAX_ERRORS = 10  # what GitHub shows of one step's error annotations
MAX_WARNINGS = 10
MAX_SUMMARY_BYTES = 1 << 20  # GitHub refuses a step summary over 1 MiB
_SHOWN_ALSO = 5  # the node ids a cause's annotation names of the items it also failed

# A node id another item's failure points at: "(full report on cases/a.yaml::m::x[...])".
_NODE_ID = re.compile(r"[^\s()]+\.ya?ml::[^\s()]+")
# Numbers that differ between items of one cause: a worker's name (gw4), the memory it had,
# an error's size on another device.
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?(?: ?[KMGT]i?B\b)?")
# An entry of the case file a finding names: "expect.mutated_buffers (cases/a.yaml:9)".
_ENTRY = re.compile(r"\(([^\s()]+):(\d+)\)")


@dataclass
class Cause:
    """One annotation: the first item that failed for a reason, and the others it covers."""

    first: ItemResult
    file: str
    line: int | None
    also: list[str] = field(default_factory=list)
    # the first item's reproduction script as the annotation names it (annotations() makes
    # it relative to the checkout); None: its path as the report has it
    repro: str | None = None

    @property
    def title(self) -> str:
        stage = self.first.stage or ("XPASS(strict)" if _xpass_strict(self.first) else "failed")
        return f"{self.first.nodeid} [{stage}]"

    @property
    def text(self) -> str:
        lines = [self.first.message or "failed"]
        if self.first.where:
            lines.append(f"where: {self.first.where}")
        told = repro_outcomes.line(self.repro or self.first.repro, self.first.repro_outcome)
        if told:
            lines.append(told)
        if self.also:
            shown = ", ".join(self.also[:_SHOWN_ALSO])
            more = (
                f" and {len(self.also) - _SHOWN_ALSO} more" if len(self.also) > _SHOWN_ALSO else ""
            )
            lines.append(f"same cause: {len(self.also)} more item(s): {shown}{more}")
        return "\n".join(lines)


def annotating(mode: str, environ: Mapping[str, str]) -> bool:
    return mode == "on" or (mode == "auto" and environ.get("GITHUB_ACTIONS") == "true")


def summary_path(mode: str, environ: Mapping[str, str]) -> Path | None:
    target = environ.get("GITHUB_STEP_SUMMARY")
    return Path(target) if mode != "off" and target else None


def _xpass_strict(result: ItemResult) -> bool:
    return (result.message or "").startswith("[XPASS(strict)]")


def _where(result: ItemResult) -> tuple[str, int | None]:
    """The line an annotation belongs on: the xfail entry an XPASS(strict) broke, the
    case-file entry the failure names (an ``expect`` key), else the case's own line."""
    if _xpass_strict(result) and result.xfail_line is not None:
        return result.file, result.xfail_line
    for path, line in _ENTRY.findall(result.message or ""):
        if path == result.file:
            return result.file, int(line)
    return result.file, result.line


def causes(results: Sequence[ItemResult]) -> list[Cause]:
    """The failing items grouped by root cause, in node-id order of their first item: the
    item that reported the failure in full, where the others point at one."""
    failing = sorted((r for r in results if r.outcome in FAILING), key=lambda r: r.nodeid)
    ids = {r.nodeid for r in failing}

    def pointer(result: ItemResult) -> str | None:
        found = _NODE_ID.findall(result.text or "")
        return next((n for n in found if n in ids and n != result.nodeid), None)

    by_key: dict[object, Cause] = {}
    found: list[Cause] = []
    # Items that point at another last: the one they point at opens their cause.
    for result in sorted(failing, key=lambda r: pointer(r) is not None):
        file, line = _where(result)
        pointed = pointer(result)
        keys: list[object] = [("item", pointed)] if pointed else []
        keys.append(("words", file, line, _NUMBER.sub("#", result.message or "")))
        cause = next((by_key[k] for k in keys if k in by_key), None)
        if cause is None:
            cause = Cause(result, file, line)
            found.append(cause)
            by_key[("item", result.nodeid)] = cause
        else:
            cause.also.append(result.nodeid)
        for key in keys:
            by_key.setdefault(key, cause)
    for cause in found:
        cause.also.sort()
    return sorted(found, key=lambda c: c.first.nodeid)


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def command(kind: str, text: str, *, file: str | None = None, line: int | None = None,
            title: str | None = None) -> str:  # fmt: skip
    """One workflow command line, escaped as GitHub's runner unescapes it."""
    props = [f"file={_property(file)}"] if file else []
    props += [f"line={line}"] if file and line is not None else []
    props += [f"title={_property(title)}"] if title else []
    return f"::{kind} {','.join(props)}::{_data(text)}" if props else f"::{kind}::{_data(text)}"


def relative_to_workspace(path: str, root: Path, environ: Mapping[str, str]) -> str:
    """``path`` (relative to pytest's rootdir) as GitHub names files: relative to the
    checkout (``GITHUB_WORKSPACE``), which a project in a subfolder differs from."""
    workspace = environ.get("GITHUB_WORKSPACE")
    if not workspace:
        return path
    try:
        return (root / path).resolve().relative_to(Path(workspace).resolve()).as_posix()
    except ValueError:
        return path


def annotations(
    results: Sequence[ItemResult],
    stale: Sequence[tuple[str, str]] = (),
    *,
    root: Path = Path("."),
    environ: Mapping[str, str] = os.environ,
) -> list[str]:
    """The workflow commands of a run: one error per root cause (at most MAX_ERRORS, the
    last summarizing the rest) and one warning per stale recording (``(path, text)``)."""
    found = causes(results)
    shown = found if len(found) <= MAX_ERRORS else found[: MAX_ERRORS - 1]
    for cause in shown:
        if cause.first.repro:
            cause.repro = relative_to_workspace(cause.first.repro, root, environ)
    lines = [
        command("error", c.text, file=relative_to_workspace(c.file, root, environ), line=c.line,
                title=c.title)
        for c in shown
    ]  # fmt: skip
    rest = found[len(shown) :]
    if rest:
        items = sum(1 + len(c.also) for c in rest)
        names = "\n".join(c.first.nodeid for c in rest[:20])
        more = f"\n… and {len(rest) - 20} more" if len(rest) > 20 else ""
        lines.append(
            command(
                "error",
                f"{len(rest)} more failure(s) ({items} items), listed in the job summary and "
                f"the log:\n{names}{more}",
                title=f"exportcheck: {len(rest)} more failure(s) not annotated",
            )
        )
    for path, text in stale[:MAX_WARNINGS]:
        lines.append(
            command(
                "warning",
                text,
                file=relative_to_workspace(path, root, environ),
                title="exportcheck: stale recording",
            )
        )
    return lines


def append_summary(path: Path, markdown: str) -> str | None:
    """Append the Markdown report to the job summary; a note of what went wrong, if any."""
    data = markdown.encode("utf-8")
    if len(data) > MAX_SUMMARY_BYTES:
        cut = "\n\n… cut at GitHub's 1 MiB step-summary limit: the whole report is the JSON/.md\n"
        keep = MAX_SUMMARY_BYTES - len(cut.encode()) - 1024
        data = data[:keep].decode("utf-8", errors="ignore").encode("utf-8") + cut.encode()
    try:
        # GitHub's file, which every step appends to: appending is its contract, and the
        # runner reads it only once the step has ended.
        with path.open("ab") as summary:
            summary.write(data + b"\n")
    except OSError as exc:
        return f"exportcheck: the job summary was not written to {path}: {exc}"
    return None
