"""YAML case file → one node per case → one item per (capture, check).

Node ids read as ``cases/lm.yaml::tied_lm_head::signature[export-cpu]`` and
``…::parity[dynamo-cuda:0]``, so ``-k "tied and parity"`` selects naturally; a
case with several captures also gets ``…::consistency[cpu]``, comparing them. A case
file or case that cannot be loaded becomes a single failing item (not a
collection error, which would stop the whole run) that names ``file:line``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_exportcheck.items.check_items import CheckItem, ConsistencyItem
from pytest_exportcheck.items.failure_repr import FailureRepr
from pytest_exportcheck.items.item_names import consistency_name, item_name
from pytest_exportcheck.items.loaded_items import loaded_items
from pytest_exportcheck.model.devices import is_accelerator
from pytest_exportcheck.spec import Case, SpecError, load_case_file


class CaseFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        session = self.config.pluginmanager.get_plugin("exportcheck-session")
        try:
            loaded = load_case_file(self.path, session.max_elements, session.max_case_bytes)
        except SpecError as error:
            yield BrokenCaseItem.from_parent(self, name="load", error=error)
            return
        session.recordings.loaded(
            self.path, {e.name: list(e.case.captures) if e.case else None for e in loaded}
        )
        for entry in loaded:
            if entry.error is not None:
                yield BrokenCaseItem.from_parent(self, name=entry.name, error=entry.error)
                continue
            assert entry.case is not None
            # -k, the matrix, recordings and reports speak of cases by name.
            first = session.case_names.setdefault(entry.name, entry.case.location)
            if first != entry.case.location:
                error = SpecError(
                    f"case name {entry.name!r} is already used at {first}; case names are "
                    "unique across files (selection with -k, the matrix and reports name "
                    "cases by name)",
                    self.path,
                    entry.line,
                )
                yield BrokenCaseItem.from_parent(self, name=entry.name, error=error)
                continue
            yield CaseNode.from_parent(self, name=entry.name, case=entry.case)


class CaseNode(pytest.Collector):
    def __init__(self, *, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        extra = self.config.pluginmanager.get_plugin("exportcheck-session").run_programs
        if extra:  # --exportcheck-programs
            case = dataclasses.replace(case, programs=tuple(dict.fromkeys(case.programs + extra)))
        self.case = case

    def collect(self) -> Iterator[pytest.Item]:
        session = self.session.config.pluginmanager.get_plugin("exportcheck-session")
        run_wide = [c for c in session.lowered_checks if c not in self.case.checks]
        devices = list(session.devices.for_case(self.case))
        for device in devices:
            for capture in self.case.captures:
                for check in (*self.case.checks, *run_wide):
                    if check == "consistency":
                        continue  # one item for all captures, below
                    if check == "moved" and not is_accelerator(device):
                        continue  # moving a CPU export to the CPU checks nothing new
                    if check == "recorded" and not self._has_recording():
                        continue  # nothing recorded for this file, and no update asked
                    name = item_name(check, capture, device)
                    yield CheckItem.from_parent(
                        self, name=name, case=self.case, capture=capture, check=check,
                        device=device,
                        # Given whole: pytest >= 9.2 would otherwise parse `[...]`
                        # as a parametrization and --lf would never match.
                        nodeid=f"{self.nodeid}::{name}",
                    )  # fmt: skip
            # A retrace is compared with its capture there (checks/retraced.py).
            several = len(self.case.captures) > 1 or self.case.names_step("retrace")
            if "consistency" in self.case.checks and several:
                name = consistency_name(device)
                yield ConsistencyItem.from_parent(
                    self, name=name, case=self.case, capture="+".join(self.case.captures),
                    check="consistency", device=device, nodeid=f"{self.nodeid}::{name}",
                )  # fmt: skip
        yield from loaded_items(self, devices)  # programs older torches saved

    def _has_recording(self) -> bool:
        from pytest_exportcheck.recordings.recording import recording_path

        store = self.session.config.pluginmanager.get_plugin("exportcheck-session").recordings
        return store.update or recording_path(self.case.path).exists()

    def reportinfo(self) -> tuple[Any, int, str]:
        return self.path, self.case.line - 1, self.case.name


class BrokenCaseItem(pytest.Item):
    """A case file or case that cannot be loaded: fails with the spec error, at its line."""

    def __init__(self, *, error: SpecError, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error
        self.user_properties += [("exportcheck_stage", "case"), ("exportcheck_case", self.name)]

    def runtest(self) -> None:
        raise self.error

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, SpecError):
            text = f"[case] {excinfo.value}"
            return FailureRepr(text, headline=text)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Any, int, str]:
        return self.path, (self.error.line or 1) - 1, f"{self.name} (invalid case)"
