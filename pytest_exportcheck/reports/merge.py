"""One report from the shards of a run split across CI jobs.

A corpus too big for one machine is split with the tools users already have,
e.g. pytest-split, one CI job per group::

    pytest --exportcheck --splits 3 --group 1 --exportcheck-report shard-1.json   # job 1
    ...
    python -m pytest_exportcheck merge shard-*.json -o report.json                # after

Each shard's report holds the items it ran; the merge is the report one run of
the whole corpus would have written: the same items, outcomes and messages, its
totals, matrix (printed) and Markdown. A shard splits no check's work in a way
that changes an outcome: a unit cut across shards is captured again where each
part runs, and a ``consistency`` item compares every capture of its case itself.

Refused, naming the files: shards of different torch versions, of different
plugin versions, of different case files (``run.cases``, a digest of the case
files every shard collected), and shards that ran the same item twice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from pytest_exportcheck import CASE_SUFFIXES
from pytest_exportcheck.items.item_names import split_item_name
from pytest_exportcheck.reports import github, json_report, markdown
from pytest_exportcheck.reports import matrix as matrix_mod
from pytest_exportcheck.reports.results import ItemResult, describe_totals, totals


class MergeError(Exception):
    """Shards that are not parts of one run, or a file that is not a report."""


def cases_digest(root: Path, files: Iterable[str]) -> str:
    """What every shard must agree on: the case files, by path and content."""
    digest = hashlib.sha256()
    for name in sorted(set(files)):
        if not name.endswith(CASE_SUFFIXES):
            continue
        try:
            content = (root / name).read_bytes()
        except OSError:
            content = b""
        digest.update(f"{name}\0{hashlib.sha256(content).hexdigest()}\n".encode())
    return digest.hexdigest()[:16]


def item_result(item: Mapping[str, Any]) -> ItemResult:
    """An item of a report as the result it was written from."""
    # The schema requires only nodeid and outcome: what a report leaves out is read from
    # the node id where it says (``cases/a.yaml::mlp::parity[export-cpu]``), else None.
    values = {f.name: item.get(f.name) for f in fields(ItemResult)}
    file, _, rest = str(item["nodeid"]).partition("::")
    case, _, name = rest.partition("::")
    check, capture, device = split_item_name(name) or (None, None, None)
    implied = {"file": file, "case": case, "check": check, "capture": capture, "device": device}
    for key, value in implied.items():
        if values[key] is None:
            values[key] = value
    values["duration"] = float(values["duration"] or 0.0)
    return ItemResult(**values)


def load_shards(paths: Sequence[Path]) -> list[tuple[Path, dict[str, Any]]]:
    shards = []
    for path in paths:
        try:
            shards.append((path, json_report.load_baseline(path)))
        except json_report.BaselineError as exc:
            raise MergeError(str(exc)) from None
    if not shards:
        raise MergeError("no shard reports given")
    return shards


def _agree(shards: list[tuple[Path, dict[str, Any]]], key: str, what: str) -> None:
    values = {path: shard["run"].get(key) for path, shard in shards}
    if len({str(v) for v in values.values()}) > 1:
        shown = ", ".join(f"{path}: {value}" for path, value in values.items())
        raise MergeError(f"the shards ran {what} ({shown}); merge the shards of one run only")


def merged_exitstatus(statuses: Iterable[int], items: list[Mapping[str, Any]]) -> int:
    """A shard interrupted or in error decides; else 1 if any item failed, else 0."""
    statuses = list(statuses)
    unusual = [s for s in statuses if s not in (0, 1)]
    if unusual:
        return unusual[0]
    failing = any(item["outcome"] in ("failed", "error") for item in items)
    return 1 if failing or 1 in statuses else 0


def merge(paths: Sequence[Path]) -> dict[str, Any]:
    """The merged report document; raises MergeError saying why the shards do not merge."""
    shards = load_shards(paths)
    _agree(shards, "torch", "different torch versions")
    _agree(shards, "exportcheck", "different pytest-exportcheck versions")
    _agree(shards, "cases", "different case files (run.cases differs)")
    seen: dict[str, Path] = {}
    items: list[dict[str, Any]] = []
    for path, shard in shards:
        for item in shard["items"]:
            nodeid = item["nodeid"]
            if nodeid in seen:
                raise MergeError(
                    f"{nodeid} is in both {seen[nodeid]} and {path}: the shards overlap "
                    "(each group of the split must run once)"
                )
            seen[nodeid] = path
            items.append(item)
    runs = [shard["run"] for _, shard in shards]
    run = dict(runs[0])
    run["started"] = min(str(r.get("started")) for r in runs)
    run["finished"] = max(str(r.get("finished")) for r in runs)
    # The shards ran side by side: the run took as long as its longest shard.
    run["duration"] = max(float(r.get("duration") or 0.0) for r in runs)
    run["exitstatus"] = merged_exitstatus((int(r.get("exitstatus", 0)) for r in runs), items)
    run["args"] = ["merge", *(str(p) for p in paths)]
    run["shards"] = [
        {
            "file": str(path),
            "args": shard["run"].get("args"),
            "duration": shard["run"].get("duration"),
            "exitstatus": shard["run"].get("exitstatus"),
            "items": len(shard["items"]),
        }
        for path, shard in shards
    ]
    results = [item_result(item) for item in items]
    return json_report.document(results, run, comparison=None)


def write(doc: Mapping[str, Any], output: Path, summary: Path | None = None) -> list[str]:
    """Write the merged JSON and Markdown (and append the Markdown to the GitHub job
    summary ``summary``); the lines to print (matrix and totals)."""
    results = [item_result(item) for item in doc["items"]]
    matrix = matrix_mod.build(results)
    json_report.write_atomically(output, json_report.dumps(doc))
    md_path = json_report.markdown_path(output)
    text = markdown.render(doc, matrix, None)
    json_report.write_atomically(md_path, text)
    lines = [*matrix_mod.render_text(matrix, width=120)]
    lines.append(describe_totals(totals(r.outcome for r in results)))
    shards = len(doc["run"]["shards"])
    lines.append(f"merged {shards} shard report(s): {output} and {md_path.name}")
    if summary is not None:
        lines.append(github.append_summary(summary, text) or f"job summary: appended to {summary}")
    return lines


def update_recordings(doc: Mapping[str, Any], root: Path) -> list[str]:
    """What ``--exportcheck-update`` on one whole run would write, from the shards'
    observations (each ``recorded`` item's report carries its own): every entry a
    shard observed is written, none is lost to another shard's copy of the file.

    Stale entries (cases or captures a file no longer has) are kept: the merge
    cannot tell that the shards together ran every item; an update run on one
    machine removes them.
    """
    from packaging.version import Version

    from pytest_exportcheck.recordings.recording import RecordingStore

    version = Version(str(doc["run"].get("torch")))
    store = RecordingStore(update=True, minor=f"{version.major}.{version.minor}")
    for item in doc["items"]:
        if item.get("check") == "recorded" and item.get("observation") is not None:
            case_file = root / str(item["file"])
            store.observe(case_file, str(item["case"]), str(item["capture"]), item["observation"])
    lines = store.write(whole_run=False)
    if store.unwritten:
        raise MergeError("recordings not written: " + "; ".join(lines))
    return lines


def main(
    paths: Sequence[Path],
    output: Path,
    recordings_root: Path | None = None,
    summary: Path | None = None,
) -> int:
    try:
        doc = merge(paths)
        lines = write(doc, output, summary)
        if recordings_root is not None:
            lines += update_recordings(doc, recordings_root)
    except (MergeError, OSError) as exc:
        print(f"python -m pytest_exportcheck merge: {exc}")
        return 2
    print("\n".join(lines))
    return int(doc["run"]["exitstatus"])
