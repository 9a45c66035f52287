"""Per-process state of an ``--exportcheck`` run: which files are cases, and the capture cache.

One export per (case, capture) per process serves every item that needs it.
Items are counted at the end of collection (after ``-k`` / ``-m`` deselection),
and a capture is dropped as soon as its last item has run; an LRU bound keeps
memory flat even where counts overestimate (an xdist worker collects every
item but runs only some).
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

if TYPE_CHECKING:
    from pytest_exportcheck.capture import CaptureRecord
    from pytest_exportcheck.collect import CheckItem
    from pytest_exportcheck.failures import ExportCheckError
    from pytest_exportcheck.subject import Subject

CaseKey = tuple[str, str]  # (case file, case name)
CaptureKey = tuple[str, str, str]  # (case file, case name, capture)


class _Failed:
    """A memoized failure of a stage, and the node that reported it in full."""

    def __init__(self, error: ExportCheckError, reported_by: str) -> None:
        self.error = error
        self.reported_by = reported_by

    def raise_for(self, item: CheckItem) -> NoReturn:
        """The full error for the item that met it first; a one-line pointer for the others."""
        from pytest_exportcheck.failures import DependencyFailed

        if self.reported_by == item.nodeid:
            raise self.error
        raise DependencyFailed(self.error, self.reported_by)


class ExportCheckSession:
    def __init__(self, config: pytest.Config, case_dirs: list[Path]) -> None:
        self.config = config
        self.case_dirs = case_dirs
        self.explicit_files = {Path(arg.split("::")[0]).resolve() for arg in config.args}
        self.max_captures = max(1, int(config.getini("exportcheck_cache_size")))
        self._subjects: dict[CaseKey, Subject | _Failed] = {}
        self._captures: OrderedDict[CaptureKey, CaptureRecord | _Failed] = OrderedDict()
        self._remaining_by_capture: Counter[CaptureKey] = Counter()
        self._remaining_by_case: Counter[CaseKey] = Counter()

    def is_case_file(self, path: Path) -> bool:
        """YAML under an ``exportcheck_paths`` directory, or named on the command line."""
        path = path.resolve()
        return path in self.explicit_files or any(d in path.parents for d in self.case_dirs)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        from pytest_exportcheck.collect import CheckItem

        for item in items:
            if isinstance(item, CheckItem):
                self._remaining_by_capture[item.capture_key] += 1
                self._remaining_by_case[item.case_key] += 1

    def capture_for(self, item: CheckItem) -> CaptureRecord:
        """The subject, its eager observation and the capture, each built once and memoized."""
        from pytest_exportcheck.capture import capture
        from pytest_exportcheck.failures import ExportCheckError

        subject = self._subject_for(item)
        cached = self._captures.get(item.capture_key)
        if cached is None:
            try:
                cached = capture(item.capture, subject)
            except ExportCheckError as exc:
                cached = _Failed(exc, item.nodeid)
            self._captures[item.capture_key] = cached
            while len(self._captures) > self.max_captures:
                self._captures.popitem(last=False)
        self._captures.move_to_end(item.capture_key)
        if isinstance(cached, _Failed):
            cached.raise_for(item)
        return cached

    def _subject_for(self, item: CheckItem) -> Subject:
        from pytest_exportcheck.failures import ExportCheckError
        from pytest_exportcheck.subject import Subject

        cached = self._subjects.get(item.case_key)
        if cached is None:
            try:
                cached = Subject(item.case)
                cached.eager  # noqa: B018 - an eager forward that raises is a case error
            except ExportCheckError as exc:
                cached = _Failed(exc, item.nodeid)
            self._subjects[item.case_key] = cached
        if isinstance(cached, _Failed):
            cached.raise_for(item)
        return cached

    def release(self, item: CheckItem) -> None:
        """Drop the capture (and the subject) once no collected item needs them any more."""
        self._remaining_by_capture[item.capture_key] -= 1
        if self._remaining_by_capture[item.capture_key] <= 0:
            self._captures.pop(item.capture_key, None)
        self._remaining_by_case[item.case_key] -= 1
        if self._remaining_by_case[item.case_key] <= 0:
            self._subjects.pop(item.case_key, None)

    def cached_captures(self) -> list[Any]:
        """For tests: the keys of captures alive now."""
        return list(self._captures)
