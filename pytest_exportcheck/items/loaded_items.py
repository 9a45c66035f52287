"""``loaded[2.9-export-cpu]``: one item per program an older torch saved for a case
(``--exportcheck-load-programs``), checked by ``checks/loaded.py``.

An item of the case's node, on the device the program was saved for, where this run
has that device; it needs the case's subject (this torch's eager), not a capture.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pytest_exportcheck.items.check_items import CheckItem
from pytest_exportcheck.items.item_names import loaded_name
from pytest_exportcheck.items.program_saving import LOADED_FROM, PLUGIN

if TYPE_CHECKING:
    from pytest_exportcheck.items.collect import CaseNode  # for type checkers only
    from pytest_exportcheck.saved_programs.store import SavedProgram


def loaded_items(node: CaseNode, devices: list[str]) -> Iterator[LoadedItem]:
    programs = node.config.pluginmanager.get_plugin(PLUGIN)
    if programs is None:
        return
    for saved in programs.for_case(node.case.name):
        if saved.device not in devices or saved.capture not in node.case.captures:
            continue
        name = loaded_name(saved.label, saved.capture, saved.device)
        yield LoadedItem.from_parent(
            node, name=name, case=node.case, capture=saved.capture, check="loaded",
            device=saved.device, saved=saved, nodeid=f"{node.nodeid}::{name}",
        )  # fmt: skip


class LoadedItem(CheckItem):
    """A program an older torch saved, loaded and run under this one."""

    def __init__(self, *, saved: SavedProgram, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.saved = saved
        self.user_properties.append((LOADED_FROM, saved.label))

    def needs(self) -> list[tuple[str, ...]]:
        return [self.subject_key()]

    def _check(self) -> list[str]:
        from pytest_exportcheck.checks.loaded import check_loaded
        from pytest_exportcheck.containment.stages import stage

        subject = self._session.source_for(self).subject(self.device)
        with self._session.breadcrumb.at(self.check), stage("loaded"):
            return check_loaded(self.case, subject, self.saved)
