"""Atomic writes: the old text or the new, never half; and the temporary files a killed
writer left are removed by the next write of the same file, which says so."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_exportcheck.recordings.atomic import stale_note, write_atomically

GONE = 2**22 + 7  # above Linux's largest pid: no such process


def test_a_killed_writers_temporary_files_go_with_the_next_write(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    stale = tmp_path / f".report.json.{GONE}.k3x9.tmp"
    stale.write_text('{"half": ')
    writing = tmp_path / f".report.json.{os.getpid()}.a1b2.tmp"  # a write under way
    writing.write_text("")
    other = tmp_path / f".other.json.{GONE}.zz.tmp"  # another file's: not this write's
    other.write_text("")
    removed = write_atomically(target, "{}\n")
    assert removed == [stale.name]
    assert not stale.exists() and writing.exists() and other.exists()
    assert target.read_text() == "{}\n"
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".tmp"].count(stale.name) == 0
    assert "removed 1 stale temporary file(s) an interrupted write left" in stale_note(removed)


def test_a_write_leaves_no_temporary_file_of_its_own(tmp_path: Path) -> None:
    write_atomically(tmp_path / "r.json", "x")
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
