"""A run's side of programs across torch versions: saving its captures' programs
(``--exportcheck-save-programs DIR``) and finding the ones older torches saved
(``--exportcheck-load-programs DIR``), for ``items/loaded_items.py`` to check.

Only the directory the user names is read: loading a ``.pt2`` can run pickled code
(``torch.export.load`` falls back to ``torch.load(weights_only=False)`` for some
example inputs), so no directory is ever found by search. Programs a *newer* torch
saved are not loaded: torch promises no forward compatibility, and the run says
which it left. The loading run writes what it concluded per saving minor to
``DIR/loaded-by-torch-<minor>.json`` (the versions table reads it:
``saved_programs/summary.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_exportcheck.saved_programs.store import SavedProgram, minor_label, saved_programs

if TYPE_CHECKING:
    from pytest_exportcheck.capture import CaptureRecord
    from pytest_exportcheck.spec import Case

PLUGIN = "exportcheck-programs"
LOADED_FROM = "exportcheck_loaded_from"  # user property: the saving minor of a loaded item


class ProgramsAcrossVersions:
    def __init__(self, config: pytest.Config, minor: tuple[int, int]) -> None:
        self.config = config
        self.minor = minor
        self.save_root = _directory(config, "exportcheck_save_programs")
        self.load_root = _directory(config, "exportcheck_load_programs")
        self._saved: set[tuple[str, ...]] = set()
        self.not_saved: list[str] = []
        self.older: dict[str, list[SavedProgram]] = {}  # case name → what older torches saved
        self.newer: set[str] = set()
        self.outcomes: dict[str, dict[str, Any]] = {}  # saving minor → what loading concluded
        self.skipped: list[str] = []  # folders of the load directory not loaded, and why
        if self.load_root is not None:
            if not self.load_root.is_dir():
                raise pytest.UsageError(
                    f"--exportcheck-load-programs: {self.load_root} is not a directory"
                )
            found = saved_programs(self.load_root)
            self.skipped = found.skipped
            for saved in found.programs:
                if saved.minor < minor:
                    self.older.setdefault(saved.case, []).append(saved)
                elif saved.minor > minor:
                    self.newer.add(saved.label)

    def for_case(self, case: str) -> list[SavedProgram]:
        return self.older.get(case, [])

    def save(self, case: Case, record: CaptureRecord, device: str) -> None:
        """Save ``record``'s program once per (case, capture, device), with its values."""
        from pytest_exportcheck.capture.export import ProgramRecord
        from pytest_exportcheck.saved_programs.store import save_program

        key = (str(case.path), case.name, record.capture, device)
        if self.save_root is None or key in self._saved or device == "meta":
            return
        self._saved.add(key)
        if not isinstance(record, ProgramRecord):
            return  # a Dynamo graph module: no ExportedProgram to save
        steps = max(1, case.expect.parity.steps)
        try:
            outputs = [step.output for step in record.subject.eager_steps(steps)]
            save_program(
                self.save_root, program=record.copies.saving(record.program), case=case.name,
                capture=record.capture, device=device, inputs=record.subject.inputs_copy(),
                outputs=outputs,
                about={"case_file": case.location, "steps": steps, "seed": case.seed},
            )  # fmt: skip
        except Exception as exc:  # the items say what is wrong with the capture itself
            first = (str(exc).splitlines() or [""])[0]
            self.not_saved.append(f"{case.location} {record.capture} on {device}: {first}")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Count a loaded item's outcome (the controller sees every worker's reports)."""
        minor = dict(report.user_properties).get(LOADED_FROM)
        if minor is None or (report.when != "call" and not report.failed):
            return
        counts = self.outcomes.setdefault(str(minor), {"judged": 0, "failed": []})
        outcome = "xfailed" if hasattr(report, "wasxfail") else report.outcome
        if outcome == "skipped":
            return
        counts["judged"] += 1
        if outcome != "passed":
            crash = getattr(report.longrepr, "reprcrash", None)
            why = getattr(crash, "message", None) or (str(report.longrepr).splitlines() or [""])[0]
            counts["failed"].append({"item": report.nodeid, "outcome": outcome, "why": why})

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.load_root is None or hasattr(self.config, "workerinput"):
            return
        from pytest_exportcheck.recordings.atomic import write_atomically
        from pytest_exportcheck.spec.compat import torch_version

        # The version from torch's metadata: the xdist controller need not import torch.
        path = self.load_root / f"loaded-by-torch-{minor_label(self.minor)}.json"
        text = {"torch": str(torch_version()), "by_saving_minor": self.outcomes}
        write_atomically(path, json.dumps(text, indent=1, sort_keys=True) + "\n")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        lines = []
        if self.save_root is not None:
            folder = self.save_root / f"torch-{minor_label(self.minor)}"
            count = len(list(folder.glob("*/*/about.json"))) if folder.is_dir() else 0
            lines.append(f"programs saved under {folder}: {count}")
            lines += [f"not saved: {line}" for line in self.not_saved]
        if self.load_root is not None:
            loaded = sum(len(v) for v in self.older.values())
            minors = sorted({s.label for v in self.older.values() for s in v}, key=_as_minor)
            lines.append(
                f"programs older torches saved in {self.load_root}: {loaded}"
                + (f" (torch {', '.join(minors)})" if minors else "")
            )
            lines += [f"not loaded: {line}" for line in self.skipped]
            if self.newer:
                newer = ", ".join(sorted(self.newer, key=_as_minor))
                lines.append(
                    f"not loaded: the programs torch {newer} saved (newer than this torch: "
                    "torch promises no forward compatibility)"
                )
        if lines:
            terminalreporter.section("exportcheck programs across torch versions")
            for line in lines:
                terminalreporter.line(line)


def _as_minor(label: str) -> tuple[int, ...]:
    return tuple(int(part) for part in label.split("."))


def _directory(config: pytest.Config, option: str) -> Path | None:
    value = config.getoption(option)
    return Path(value).resolve() if value else None
