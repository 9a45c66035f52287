"""Captures' consistency summaries, handed from the worker that made each capture to the
worker that runs the case's ``consistency`` item.

A case with ``consistency`` compares all its captures on a device. Were they one
xdist work unit, one worker would run the whole case: on 14 workers a Hugging
Face case of four captures was the run's critical path (33 of 51 s, see
benchmarks/README.md). So every (case, capture, device) is a unit of its own;
the worker that makes a capture writes what the table needs of it
(``checks/consistency.py:CaptureSummary``), or why it was left out, into a
directory the controller hands every worker; the scheduler sends the
consistency item once its captures' units have finished, and the item reads
the summaries::

    gw0: hf_llama [export-cpu]        -> summaries/<key>.pt
    gw1: hf_llama [export-strict-cpu] -> summaries/<key>.pt
    gw2: hf_llama [dynamo-cpu]        -> summaries/<key>.pt
    gw3: hf_llama consistency[cpu]    <- reads the three, compares

A summary that is missing or unreadable (its worker died, remote workers that
do not share the directory, an output that does not pickle) is made again
where the consistency item runs, as one process makes them all: the outcome
never depends on the handoff, only the time does. The files are this run's own:
the controller makes the directory and removes it at the end.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_exportcheck.capture import CaptureRecord
    from pytest_exportcheck.checks.consistency import CaptureSummary
    from pytest_exportcheck.containment.failures import Failed
    from pytest_exportcheck.spec import Case

WORKER_SUMMARIES = "exportcheck_summaries"  # workerinput key: the handoff directory
Key = tuple[str, ...]  # (case file, case, device, capture), as the capture cache keys it


@dataclass
class LeftOut:
    """A capture that failed where it was made: the consistency item leaves it out, saying why."""

    why: str


class SummaryHandoff:
    """One directory of ``<hash of key>.pt`` files, each written once, atomically."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.written: set[Key] = set()  # by this process: a capture rebuilt is not written twice

    @classmethod
    def create(cls) -> SummaryHandoff:
        return cls(Path(tempfile.mkdtemp(prefix="exportcheck-summaries-")))

    def path(self, key: Key) -> Path:
        digest = hashlib.sha256(json.dumps(list(key)).encode()).hexdigest()[:32]
        return self.directory / f"{digest}.pt"

    def write(self, key: Key, summary: CaptureSummary | LeftOut) -> bool:
        """Hand ``summary`` on; False where it cannot be (the reader then makes its own)."""
        import torch

        if key in self.written:
            return True
        path = self.path(key)
        fd, temp = tempfile.mkstemp(dir=self.directory, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                torch.save({"key": list(key), "summary": summary}, handle)
            os.replace(temp, path)
        except Exception:  # an output that does not pickle, a full disk: the reader copes
            Path(temp).unlink(missing_ok=True)
            return False
        self.written.add(key)
        return True

    def read(self, key: Key) -> CaptureSummary | LeftOut | None:
        """The summary another worker handed on, or None if there is none to trust."""
        import torch

        try:
            with open(self.path(key), "rb") as handle:
                # Written by this run's own workers into a directory this run made.
                entry = torch.load(handle, weights_only=False, map_location=None)
        except Exception:  # absent, unreadable, or a class this process cannot import
            return None
        if not isinstance(entry, dict) or entry.get("key") != list(key):
            return None
        return entry.get("summary")


def hand_on(handoff: SummaryHandoff, case: Case, key: Key, made: CaptureRecord | Failed) -> None:
    """Write what the case's consistency item needs of a capture this worker just made.

    A capture that failed as consistency leaves captures out (a capture error, a
    worker it killed before) is handed on as :class:`LeftOut`, in the words that
    item would use; any other failure is not, and the item meets it itself.
    """
    from pytest_exportcheck.checks.consistency import summarize
    from pytest_exportcheck.containment.crashes import WorkerCrash
    from pytest_exportcheck.containment.failures import CaptureError, Failed
    from pytest_exportcheck.containment.stages import stage

    if isinstance(made, Failed):
        error = made.error
        if isinstance(error, CaptureError | WorkerCrash):
            handoff.write(key, LeftOut(error.as_dependency(made.reported_by).headline))
        return
    try:
        with stage("consistency"):
            summary = summarize(case, made)
    except Exception:  # the consistency item makes it again and reports what it raises
        return
    handoff.write(key, summary)
