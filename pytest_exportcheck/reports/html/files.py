"""The page's file: where it may be written, what it reads, writing it whole.

It reads the recordings beside the report's case files (the versions table) and the
reproduction scripts its items name (``--exportcheck-repro``), whose text the page
holds for its copy buttons.

Shared by ``--exportcheck-html`` (the report plugin, at session end) and
``python -m pytest_exportcheck html`` (a page of any report, merged ones too).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_exportcheck.recordings.atomic import write_atomically
from pytest_exportcheck.recordings.recording import SUFFIX as RECORDING_SUFFIX
from pytest_exportcheck.recordings.recording import RecordingError
from pytest_exportcheck.reports.html.page import MARKER, render

SUFFIXES = (".html", ".htm")
# A script the page holds: the header every reproduction begins with (repro/script.py).
# A report may name any file; a page, which is shared, holds only what is a reproduction.
REPRO_SIGNATURE = "# A plain-torch reproduction of a pytest-exportcheck finding."
MAX_SCRIPT_BYTES = 256 << 10  # one script; a larger one is named, not held
MAX_SCRIPTS_BYTES = 8 << 20  # all of a page's scripts: 5,000 items stay one file to open


def overwrite_problem(path: Path) -> str | None:
    """Why writing the page to ``path`` would destroy a file that is not a page this
    plugin wrote (``--exportcheck-html=cases/good.yaml``); None for a new file or one of
    our pages. A path must end in .html, so a typo cannot name a case file."""
    if path.suffix.lower() not in SUFFIXES:
        return f"{path}: an HTML report's path ends in .html"
    if path.exists() and not _is_page(path):
        return f"{path} exists and is not an HTML report this plugin wrote: not overwritten"
    return None


def _is_page(path: Path) -> bool:
    if not path.is_file():
        return False
    try:
        with path.open(encoding="utf-8") as handle:
            return MARKER in handle.read(4096)
    except (OSError, UnicodeDecodeError):
        return False


def versions_view(root: Path, case_files: Iterable[str]) -> dict[str, Any]:
    """The versions table of the recordings beside the report's case files (``root``:
    what their paths are relative to), as the page shows it: one step per pair of
    consecutive recorded torch minors, its kinds of change counted with an example.

    A recording that cannot be read leaves the table out with the reason, rather
    than failing the page: the page is still worth having.
    """
    # Deferred: versions.py is only needed here, and reads recordings on its own terms.
    from pytest_exportcheck.reports.versions import read_all, steps

    recordings = sorted(
        {
            path
            for name in case_files
            if name.endswith((".yaml", ".yml"))
            and (path := root / (name.rsplit(".", 1)[0] + RECORDING_SUFFIX)).is_file()
        }
    )
    view: dict[str, Any] = {"recordings": [str(p.relative_to(root)) for p in recordings]}
    try:
        found = steps(read_all(recordings))
    except RecordingError as exc:
        return {**view, "steps": [], "error": str(exc)}
    view["steps"] = [
        {
            "before": step.before,
            "after": step.after,
            "compared": step.compared,
            "groups": [group.to_json() for group in step.groups],
        }
        for step in found
    ]
    view["error"] = None
    return view


def scripts_view(root: Path, items: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """The reproduction scripts the items name (``repro``, relative paths under ``root``):
    ``{path: {"text": ...}}``, or ``{path: {"missing": why}}`` for one the page does not
    hold (gone, too large, not a reproduction). Whole scripts or none: a script cut short
    would not run once copied."""
    view: dict[str, dict[str, str]] = {}
    held = 0
    for name in sorted({str(item["repro"]) for item in items if item.get("repro")}):
        path = root / name
        try:
            if not path.is_file():  # a FIFO or a device would block or never end
                raise FileNotFoundError(2, "no such file")
            with path.open("rb") as handle:
                data = handle.read(MAX_SCRIPT_BYTES + 1)
        except OSError as exc:
            why = exc.strerror or exc
            view[name] = {"missing": f"not readable where this page was made ({why})"}
            continue
        text = data.decode("utf-8", errors="replace")
        if not text.startswith(("#!/usr/bin/env python\n" + REPRO_SIGNATURE, REPRO_SIGNATURE)):
            view[name] = {"missing": "the file is not a reproduction this plugin wrote"}
        elif len(data) > MAX_SCRIPT_BYTES:
            view[name] = {"missing": f"over {MAX_SCRIPT_BYTES >> 10} KiB: open the file"}
        elif held + len(data) > MAX_SCRIPTS_BYTES:
            full = f"the page holds {MAX_SCRIPTS_BYTES >> 20} MiB of scripts already"
            view[name] = {"missing": full}
        else:
            held += len(data)
            view[name] = {"text": text}
    return view


def write_page(path: Path, doc: Mapping[str, Any], root: Path) -> list[str]:
    """Render ``doc`` (with the versions table of the recordings under ``root`` and the
    reproduction scripts its items name) and write it to ``path`` atomically; the stale
    temporaries removed on the way."""
    items = doc.get("items", [])
    files = {item.get("file") or "" for item in items}
    return write_atomically(
        path, render(doc, versions_view(root, files), scripts_view(root, items))
    )
