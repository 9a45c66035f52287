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

from pytest_exportcheck.recordings import atomic
from pytest_exportcheck.reports import gap_summary
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
    from pytest_exportcheck.spec.compat import torch_version

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
    # Passing items whose check verified less than it says, counted (gap_summary.py).
    doc["gaps"] = gap_summary.summarize(doc["items"]).to_json()
    if comparison is not None:
        doc["comparison"] = dict(comparison)
    return doc


write_atomically = atomic.write_atomically  # the reports' files are written like recordings


def markdown_path(path: Path) -> Path:
    """``report.json`` → ``report.md`` (``report.md`` itself → ``report.md.md``)."""
    return path.with_suffix(".md") if path.suffix != ".md" else path.with_name(path.name + ".md")


def overwrite_problem(path: Path) -> str | None:
    """Why writing a report to ``path`` (and its Markdown beside it) would destroy a file
    that is not a report: ``--exportcheck-report=cases/good.yaml`` overwrote the case
    file and exited 0. A new file, or a report this plugin wrote, is fine."""
    from pytest_exportcheck.recordings.recording import SUFFIX as RECORDING_SUFFIX

    if path.name.endswith(RECORDING_SUFFIX):
        return f"{path} is a recording, not a report (a report path ends in .json)"
    if path.suffix != ".json":
        return f"{path}: a report path ends in .json (its Markdown goes beside it, .md)"
    if path.exists() and not _is_report(path, lambda text: '"format"' in text[:4096]):
        return f"{path} exists and is not a report this plugin wrote: not overwritten"
    md = markdown_path(path)
    if md.exists() and not _is_report(md, lambda text: text.startswith("## exportcheck: ")):
        return f"{md} exists and is not a report this plugin wrote: not overwritten"
    return None


def _is_report(path: Path, looks_written: Any) -> bool:
    if not path.is_file():
        return False
    try:
        with path.open(encoding="utf-8") as handle:
            return bool(looks_written(handle.read(4096)))
    except (OSError, UnicodeDecodeError):
        return False


def dumps(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n"


# Larger than any report of a real corpus; a file past it is not one (or /dev/zero).
MAX_BASELINE_BYTES = 256 << 20
REPORT_SCHEMA = Path(__file__).with_name("report.schema.json")


def load_baseline(path: Path) -> dict[str, Any]:
    """A report written by ``--exportcheck-report``, validated against
    ``report.schema.json`` before the run builds any model: a baseline the comparison
    cannot read would otherwise fail only after the whole run.

    Raises :class:`BaselineError` naming the file and what is wrong with it.
    """
    if not path.exists():
        raise BaselineError(f"{path}: no such file")
    if not path.is_file():
        raise BaselineError(f"{path}: not a regular file")
    size = path.stat().st_size
    if size > MAX_BASELINE_BYTES:
        raise BaselineError(f"{path}: {size} bytes, over the {MAX_BASELINE_BYTES} a report takes")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None
    try:
        doc = json.loads(text)
    except RecursionError:
        raise BaselineError(f"{path}: nested too deeply to be a report") from None
    except ValueError as exc:
        raise BaselineError(f"{path}: not valid JSON ({exc})") from None
    hint = "expected a report written by --exportcheck-report"
    if isinstance(doc, dict) and "format" in doc and doc["format"] != FORMAT:
        raise BaselineError(
            f"{path}: report format {doc['format']!r}, this plugin reads format {FORMAT}"
        )
    problem = _schema_problem(doc)
    if problem is not None:
        raise BaselineError(f"{path}: {problem}; {hint}")
    return doc


def _schema_problem(doc: Any) -> str | None:
    """The first way ``doc`` is not a report, at its JSON path (``items[3].outcome: ...``)."""
    import jsonschema  # deferred: only a compare run needs it

    validator = jsonschema.Draft202012Validator(json.loads(REPORT_SCHEMA.read_text("utf-8")))
    error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if error is None:
        return None
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return f"{where.lstrip('.') or 'the document'}: {error.message[:200]}"
