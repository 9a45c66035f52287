"""The test processes' metadata memory (``tests/remembered_metadata.py``): what a
distribution's folder held is read once, and a distribution written later is found."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import remembered_metadata


def _write_distribution(folder: Path, name: str, plugin: str) -> Path:
    info = folder / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[pytest11]\n{name} = {plugin}\n")
    (info / "RECORD").write_text(f"{plugin}.py,,\n")
    return info


def _found(name: str) -> list:
    return [d for d in remembered_metadata.distributions() if d.metadata["Name"] == name]


def test_a_distribution_is_read_once_and_one_written_later_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    info = _write_distribution(tmp_path, "first_plugin", "first_module")
    (first,) = _found("first_plugin")
    assert [(e.group, e.name) for e in first.entry_points] == [("pytest11", "first_plugin")]
    assert [str(f) for f in first.files] == ["first_module.py"]

    (info / "entry_points.txt").write_text("[console_scripts]\nchanged = x\n")
    (again,) = _found("first_plugin")
    assert again is first and [e.name for e in again.entry_points] == ["first_plugin"]  # read once

    _write_distribution(tmp_path / "later", "later_plugin", "later_module")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "later"), *sys.path])
    (later,) = _found("later_plugin")
    assert [e.value for e in later.entry_points] == ["later_module"]
