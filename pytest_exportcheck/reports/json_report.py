"""The JSON report: its document, its atomic write, and reading one back as a baseline.

The document is meant for machines (CI dashboards, ``--exportcheck-compare``
on a later run), so it is stable: items ordered by node id, a ``format``
number to refuse what a future version writes differently, and every field
present on every item (null where it does not apply).
"""

from __future__ import annotations

import json
import platform
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_exportcheck import atomic
from pytest_exportcheck.reports.results import ItemResult, totals

FORMAT = 1


class BaselineError(Exception):
    """A baseline that cannot be compared with: missing, unreadable, or not a report."""


def timestamp(seconds: float) -> str:
    """UTC, to the second: ``2025-06-01T12:00:00Z``."""
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc).replace(microsecond=0)
    return moment.isoformat().replace("+00:00", "Z")


def run_info(*, started: float, finished: float, exitstatus: int, args: Iterable[str]) -> dict:
    """Where and when the run happened: what a comparison needs to say which runs it compares."""
    import pytest

    from pytest_exportcheck import __version__
    from pytest_exportcheck.compat import torch_version

    torch = torch_version()
    return {
        "torch": str(torch) if torch is not None else None,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "pytest": pytest.__version__,
        "exportcheck": __version__,
        "started": timestamp(started),
        "finished": timestamp(finished),
        "duration": round(finished - started, 3),
        "exitstatus": int(exitstatus),
        "args": list(args),
    }


def document(
    results: list[ItemResult], run: Mapping[str, Any], comparison: Mapping[str, Any] | None
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "format": FORMAT,
        "run": dict(run),
        "totals": totals(r.outcome for r in results),
        "items": [r.to_json() for r in sorted(results, key=lambda r: r.nodeid)],
    }
    if comparison is not None:
        doc["comparison"] = dict(comparison)
    return doc


write_atomically = atomic.write_atomically  # the reports' files are written like recordings


def markdown_path(path: Path) -> Path:
    """``report.json`` → ``report.md`` (``report.md`` itself → ``report.md.md``)."""
    return path.with_suffix(".md") if path.suffix != ".md" else path.with_name(path.name + ".md")


def dumps(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n"


def load_baseline(path: Path) -> dict[str, Any]:
    """A report written by ``--exportcheck-report``, checked enough to compare with.

    Raises :class:`BaselineError` naming the file and what is wrong with it.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BaselineError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise BaselineError(f"{path}: not valid JSON ({exc})") from None
    hint = "expected a report written by --exportcheck-report"
    if not isinstance(doc, dict) or "format" not in doc or not isinstance(doc.get("items"), list):
        raise BaselineError(f"{path}: {hint}")
    if doc["format"] != FORMAT:
        raise BaselineError(
            f"{path}: report format {doc['format']!r}, this plugin reads format {FORMAT}"
        )
    for index, item in enumerate(doc["items"]):
        if not isinstance(item, dict) or not isinstance(item.get("nodeid"), str):
            raise BaselineError(f"{path}: item #{index + 1} has no nodeid; {hint}")
        if "outcome" not in item:
            raise BaselineError(f"{path}: item #{index + 1} has no outcome; {hint}")
    if not isinstance(doc.get("run", {}), dict):
        raise BaselineError(f"{path}: 'run' is not an object; {hint}")
    return doc
