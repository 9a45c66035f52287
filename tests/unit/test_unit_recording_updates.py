"""Recording updates: two runs updating one recording keep both runs' entries, stale
entries go in one pass, and a message names ten entries at most."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from pytest_exportcheck.recordings.atomic import locked_directory
from pytest_exportcheck.recordings.recording import Recording, RecordingStore, _show, recording_path

CASES = """
cases:
  alpha: {description: a, model: {target: m.py:M}, inputs: {args: [{shape: [2]}]}}
  beta: {description: b, model: {target: m.py:M}, inputs: {args: [{shape: [2]}]}}
"""


def _store(case_file: Path, case: str) -> RecordingStore:
    store = RecordingStore(update=True, minor="2.13")
    store.collected.add(str(case_file))
    store.incomplete.add(str(case_file))  # a -k run: nothing stale is removed
    store.observe(
        case_file,
        case,
        "export",
        {"modules": None, "mutations": None, "placeholders": [["x", "user_input", "args[0]"]]},
    )
    return store


def test_an_update_waiting_for_the_lock_merges_into_what_the_other_wrote(tmp_path: Path) -> None:
    case_file = tmp_path / "both.yaml"
    case_file.write_text(CASES)
    written: list[str] = []
    with locked_directory(tmp_path):  # the other run, mid-update
        waiting = threading.Thread(
            target=lambda: written.extend(_store(case_file, "beta").write(whole_run=True))
        )
        waiting.start()
        waiting.join(timeout=1.0)
        assert waiting.is_alive(), "the second update did not wait for the first"
        _store(case_file, "alpha")._write_one_locked(case_file, whole_run=True)
    waiting.join(timeout=30)
    recorded = json.loads(recording_path(case_file).read_text())["torch"]["2.13"]
    assert set(recorded) == {"alpha", "beta"}, written


def test_stale_entries_go_in_one_pass_and_others_stay(tmp_path: Path) -> None:
    sections = {
        "2.13": {f"case{i}": {"export": {}, "dynamo": {}} for i in range(40_000)},
        "2.9": {"case0": {"export": {}}},
    }
    recording = Recording(tmp_path / "r.recorded.json", "r.yaml", sections)
    stale = {("2.13", f"case{i}", "export") for i in range(40_000)} | {("2.13", "case1", "dynamo")}
    kept = recording.without(stale)
    assert kept.sections["2.13"]["case0"] == {"dynamo": {}}
    assert "case1" not in kept.sections["2.13"]  # its last capture went: the case goes
    assert kept.sections["2.9"] == {"case0": {"export": {}}}
    assert recording.sections["2.13"]["case1"] == {"export": {}, "dynamo": {}}  # a new one


def test_a_message_names_ten_entries_and_counts_the_rest() -> None:
    entries = {("2.13", f"case{i:05}", "export") for i in range(800)} | {("2.13", "x" * 5000, "e")}
    text = _show(entries)
    assert text.endswith("and 791 more")
    assert text.count("[export]") == 10 and len(text) < 2000


def test_a_cut_short_run_writes_no_part_of_a_file(tmp_path: Path) -> None:
    case_file = tmp_path / "both.yaml"
    case_file.write_text(CASES)
    store = _store(case_file, "alpha")  # alpha observed; beta selected but never ran
    store.expect(case_file, "alpha", "export")
    store.expect(case_file, "beta", "export")
    lines = store.write(whole_run=False)
    assert lines == [
        f"not updated: {recording_path(case_file)}: the run was cut short before 1 of its "
        "recorded item(s) ran (beta[export]); it is as it was"
    ]
    assert not recording_path(case_file).exists()
    store.observe(
        case_file,
        "beta",
        "export",
        _store(case_file, "x").observations[str(case_file)]["x"]["export"],
    )
    assert "written" in store.write(whole_run=False)[0]  # every one ran: written
