"""``python -m pytest_exportcheck repro NODEID [-o FILE] [--report REPORT.json]``.

Writes the reproduction of one item without a run: from its node id
(``cases/main.yaml::mlp::parity[export-cpu]``) the case is loaded and the script of
the item's check written (a ``parity`` or ``mutation`` comparison; for another check,
its capture call). With ``--report``, the item's failure in that report (written by
``--exportcheck-report``) says which finding it is: a capture that raised, or the
check's, and the script carries its message.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from pytest_exportcheck.items.item_names import split_item_name
from pytest_exportcheck.recordings.atomic import write_atomically
from pytest_exportcheck.repro.kinds import kind_for
from pytest_exportcheck.repro.script import Finding, script_text
from pytest_exportcheck.repro.source import UnwritableTarget
from pytest_exportcheck.spec import load_case_file
from pytest_exportcheck.spec.errors import SpecError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("nodeid", metavar="NODEID", help="the item, as pytest names it")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE", help="default: stdout")
    parser.add_argument(
        "--report",
        type=Path,
        metavar="REPORT.json",
        help="a report of a run that failed the item: the finding is taken from it",
    )


def main(args: argparse.Namespace) -> int:
    try:
        finding = _finding(args.nodeid, args.report)
        text = script_text(finding)
    except (ValueError, OSError, SpecError, UnwritableTarget) as exc:
        print(f"python -m pytest_exportcheck repro: {exc}", file=sys.stderr)
        return 2
    if args.output is None:
        sys.stdout.write(text)
    else:
        write_atomically(args.output, text)
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


def _finding(nodeid: str, report: Path | None) -> Finding:
    file, _, rest = nodeid.partition("::")
    name, _, item = rest.partition("::")
    parts = split_item_name(item)  # lowered[aoti-export-cpu] is lowered-aoti's
    if not (file and name and parts and parts[1]):
        raise ValueError(f"{nodeid!r} is not an item's node id (FILE::CASE::CHECK[CAPTURE-DEVICE])")
    check, capture, device = parts
    loaded = [c for c in load_case_file(Path(file)) if c.name == name]
    if not loaded or loaded[0].case is None:
        why = loaded[0].error if loaded else "no such case"
        raise ValueError(f"{file}: case {name!r}: {why}")
    case = loaded[0].case
    stage, message, error = check, f"(written for {nodeid}, without a run's finding)", None
    findings: tuple[str, ...] = ()
    if report is not None:
        items = {i["nodeid"]: i for i in json.loads(report.read_text())["items"]}
        if nodeid not in items or not items[nodeid].get("stage"):
            raise ValueError(f"{report}: no failure of {nodeid}")
        stage, message = items[nodeid]["stage"], items[nodeid].get("text") or ""
        if stage in ("capture", "lower"):
            error = _raised(message)
        # A check's findings are its message's "- " lines (containment/failures.py).
        findings = tuple(line[2:] for line in message.splitlines() if line.startswith("- "))
    elif check not in ("parity", "mutation"):
        stage = "capture"
    kind, why = kind_for(case, capture, check, stage, findings)
    if kind is None:
        raise ValueError(f"no plain reproduction yet: {why}")
    if kind == "loaded":  # the stored program is the run's: its item names the folder
        raise ValueError("a loaded item's script is written by its run (--exportcheck-repro)")
    return Finding(nodeid, case, capture, check, device, kind, message, error, findings=findings)


def _raised(message: str) -> str | None:
    """The exception type a capture's or lowering's failure names (``... raised: TypeError:
    ...``, ``... raised TypeError: ...``)."""
    found = re.search(r" raised:? (\w+):", message)
    return found[1] if found else None
