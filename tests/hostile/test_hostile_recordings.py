"""A recording that is not one fails the recorded items of its file, saying how to
proceed; the rest of the run and its summary go on. A run that observes nothing never
rewrites one."""

from __future__ import annotations

import json

import pytest
from hostilekit import hostile_case, write_hostile

from pytest_exportcheck.spec.compat import torch_minor

RECORDING = "cases/hostile.recorded.json"
CHECKS = {"captures": "[export]", "checks": "[parity, recorded]"}


def recorded_project(hostile: pytest.Pytester) -> dict:
    write_hostile(hostile, hostile_case("mlp", "{target: hostile.py:Good}", **CHECKS))
    hostile.runpytest("--exportcheck", "--exportcheck-update").assert_outcomes(passed=3)
    return json.loads((hostile.path / RECORDING).read_text())


def test_an_entry_of_the_wrong_type_is_named_at_its_path(hostile: pytest.Pytester) -> None:
    recording = recorded_project(hostile)
    recording["torch"][torch_minor()]["mlp"]["export"] = "oops"
    (hostile.path / RECORDING).write_text(json.dumps(recording))
    result = hostile.runpytest("--exportcheck")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "[[]case[]] cases/hostile.recorded.json: not a recording of format 1 ([[]'torch'[]]"
            f"[[]'{torch_minor()}'[]][[]'mlp'[]][[]'export'[]]: 'oops' is not of type "
            "'object'); fix or delete it *",
            "*exportcheck matrix*",
        ]
    )


def test_a_recording_nested_too_deeply_fails_its_items_and_the_summary_still_prints(
    hostile: pytest.Pytester,
) -> None:
    recorded_project(hostile)
    (hostile.path / RECORDING).write_text('{"format": 1, "torch": ' + "[" * 100000 + "]" * 100000)
    result = hostile.runpytest("--exportcheck")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        ["*hostile.recorded.json: nested too deeply to be a recording; fix or delete it*"]
    )
    result.stdout.fnmatch_lines(["*3 items: 2 passed, 1 failed*"])


def test_a_recording_of_a_newer_format_says_upgrade(hostile: pytest.Pytester) -> None:
    recording = recorded_project(hostile)
    (hostile.path / RECORDING).write_text(json.dumps({**recording, "format": 2}))
    result = hostile.runpytest("--exportcheck")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*hostile.recorded.json: written by a newer pytest-exportcheck (recording format 2; "
            "this version reads format 1); upgrade pytest-exportcheck to read it*"
        ]
    )


def test_collect_only_with_update_leaves_recordings_as_they_are(hostile: pytest.Pytester) -> None:
    recorded_project(hostile)
    before = (hostile.path / RECORDING).read_text()
    (hostile.path / RECORDING).write_text(before.replace("mlp", "renamed_long_ago"))
    edited = (hostile.path / RECORDING).read_text()
    hostile.runpytest("--exportcheck", "--exportcheck-update", "--collect-only")
    assert (hostile.path / RECORDING).read_text() == edited


def test_observations_reach_the_recording_when_their_worker_dies_later(
    hostile: pytest.Pytester,
) -> None:
    # One worker observes mlp, then dies on the next case: what it observed came with
    # each item's report, so the recording has it.
    aborts = hostile_case("aborts", "{target: hostile.py:Aborts}", captures="[export]")
    write_hostile(hostile, hostile_case("mlp", "{target: hostile.py:Good}", **CHECKS), aborts)
    result = hostile.runpytest("--exportcheck", "--exportcheck-update", "-n", "1")
    result.stdout.fnmatch_lines(["*[[]crashed[]]*"])
    recording = json.loads((hostile.path / RECORDING).read_text())
    assert set(recording["torch"][torch_minor()]) == {"mlp"}


def test_a_recording_that_cannot_be_written_is_named_and_fails_the_run(
    hostile: pytest.Pytester,
) -> None:
    write_hostile(hostile, hostile_case("mlp", "{target: hostile.py:Good}", **CHECKS))
    # A full disk (a read-only directory would not stop root, as CI often runs).
    hostile.makeconftest(
        """
        import errno
        from pytest_exportcheck.recordings import recording

        def full_disk(path, text):
            raise OSError(errno.ENOSPC, "No space left on device")

        def pytest_configure(config):
            config.stash_write = recording.write_atomically
            recording.write_atomically = full_disk

        def pytest_unconfigure(config):
            recording.write_atomically = config.stash_write
        """
    )
    result = hostile.runpytest(
        "--exportcheck", "--exportcheck-update", "--exportcheck-report=report.json"
    )
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*exportcheck matrix*",
            "NOT WRITTEN: cases/hostile.recorded.json: No space left on device; 1 entries lost",
        ]
    )
    report = json.loads((hostile.path / "report.json").read_text())
    assert report["run"]["exitstatus"] == pytest.ExitCode.TESTS_FAILED
