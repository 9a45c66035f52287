"""Recorded expectations: --exportcheck-update writes them, every run checks them."""

from __future__ import annotations

import json

import pytest
from casekit import RECORDED_CASES as TWO_CASES
from casekit import write_cases

from pytest_exportcheck.spec.compat import torch_minor

RECORDING = "cases/main.recorded.json"


def update(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--exportcheck", "--exportcheck-update", *args)


def recording(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / RECORDING).read_text())


def rewrite(pytester: pytest.Pytester, edit) -> None:
    data = recording(pytester)
    edit(data)
    (pytester.path / RECORDING).write_text(json.dumps(data))


def test_update_records_every_case_and_capture(project: pytest.Pytester) -> None:
    write_cases(project, TWO_CASES)
    update(project).assert_outcomes(passed=3)
    section = recording(project)["torch"][torch_minor()]
    assert section["counter"]["export"] == {
        "placeholders": [
            ["p_lin_weight", "parameter", "lin.weight"],
            ["p_lin_bias", "parameter", "lin.bias"],
            ["b_count", "buffer", "count"],
            ["x", "user_input", "args[0]"],
        ],
        "modules": ["lin"],
        "mutations": {"buffers": ["count"], "parameters": [], "user_inputs": []},
    }
    assert section["mlp"]["dynamo-legacy"]["mutations"] is None  # Dynamo graphs record none
    assert sorted(section["mlp"]) == ["dynamo-legacy", "export"]


def test_updating_twice_changes_nothing_the_second_time(project: pytest.Pytester) -> None:
    write_cases(project, TWO_CASES)
    update(project)
    first = (project.path / RECORDING).read_text()
    result = update(project)
    assert (project.path / RECORDING).read_text() == first
    result.stdout.fnmatch_lines(["*main.recorded.json: torch *, 3 entries recorded, unchanged"])


def test_a_run_checks_the_recording(project: pytest.Pytester) -> None:
    write_cases(project, TWO_CASES)
    update(project)
    project.runpytest("--exportcheck").assert_outcomes(passed=3)


def test_a_change_is_reported_as_a_diff(project: pytest.Pytester) -> None:
    write_cases(project, TWO_CASES)
    update(project)

    def swap(data: dict) -> None:
        entry = data["torch"][torch_minor()]["counter"]["export"]
        entry["placeholders"][0][0] = "p_old_name"
        entry["mutations"]["buffers"] = []

    rewrite(project, swap)
    result = project.runpytest("--exportcheck", "-k", "counter")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"- placeholders differ from the recording for torch {torch_minor()} "
            "(main.recorded.json):",
            "  -p_old_name: parameter -> lin.weight",
            "  +p_lin_weight: parameter -> lin.weight",
            "- mutations differ *",
            "    buffers: recorded [[][]], now [[]'count'[]]",
        ]
    )


def test_without_a_recording_file_there_are_no_recorded_items(
    project: pytest.Pytester,
) -> None:
    write_cases(project, TWO_CASES)
    project.runpytest("--exportcheck").assert_outcomes()


def test_a_case_the_recording_lacks_skips_saying_how_to_record_it(
    project: pytest.Pytester,
) -> None:
    write_cases(project, TWO_CASES)
    update(project, "-k", "mlp")
    result = project.runpytest("--exportcheck", "-rs", "-k", "counter")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        [
            "SKIPPED * main.recorded.json has no entry for counter[[]export[]] under torch "
            f"{torch_minor()}; record it with pytest --exportcheck --exportcheck-update"
        ]
    )


def test_an_older_torch_section_is_the_fallback(project: pytest.Pytester) -> None:
    write_cases(project, TWO_CASES)
    update(project)

    def move_to_older(data: dict) -> None:
        section = data["torch"].pop(torch_minor())
        section["counter"]["export"]["modules"] = ["lin", "gone"]
        data["torch"]["2.0"] = section

    rewrite(project, move_to_older)
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            f"- modules differ from torch 2.0's recording (no recording for torch {torch_minor()} "
            "yet; nearest older) (main.recorded.json):"
        ]
    )


def test_update_keeps_other_torch_sections(project: pytest.Pytester) -> None:
    write_cases(project, TWO_CASES)
    update(project)
    rewrite(project, lambda data: data["torch"].update({"2.0": {"counter": {"export": "old"}}}))
    update(project)
    assert recording(project)["torch"]["2.0"] == {"counter": {"export": "old"}}


def test_update_with_k_touches_nothing_else(project: pytest.Pytester) -> None:
    write_cases(project, TWO_CASES)
    update(project)
    rewrite(
        project,
        lambda data: data["torch"][torch_minor()]["mlp"]["export"].update(modules="sentinel"),
    )
    update(project, "-k", "counter")
    section = recording(project)["torch"][torch_minor()]
    assert section["mlp"]["export"]["modules"] == "sentinel"
    assert section["counter"]["export"]["modules"] == ["lin"]


def test_update_under_xdist_writes_what_one_process_writes(project: pytest.Pytester) -> None:
    write_cases(project, TWO_CASES)
    update(project)
    single = (project.path / RECORDING).read_text()
    (project.path / RECORDING).unlink()
    update(project, "-n", "2").assert_outcomes(passed=3)
    assert (project.path / RECORDING).read_text() == single
    assert sorted(p.name for p in (project.path / "cases").iterdir() if "recorded" in p.name) == [
        "main.recorded.json"  # no temporary files left behind
    ]


def test_stale_entries_are_reported_and_removed_only_by_a_whole_update(
    project: pytest.Pytester,
) -> None:
    write_cases(project, TWO_CASES)
    update(project)
    rewrite(
        project,
        lambda data: data["torch"][torch_minor()].update(
            {"renamed": {"export": {"capture": "[other] RuntimeError: old"}}}
        ),
    )
    result = project.runpytest("--exportcheck")
    result.stdout.fnmatch_lines(
        ["*main.recorded.json: recorded entries for cases or captures that no longer exist: "
         f"renamed[[]export[]] (torch {torch_minor()}); *"]
    )  # fmt: skip
    result = update(project, "-k", "counter")
    result.stdout.fnmatch_lines(["*stale entries kept (not the whole suite ran): renamed*"])
    assert "renamed" in recording(project)["torch"][torch_minor()]
    result = update(project)
    result.stdout.fnmatch_lines(["*stale entries removed: renamed[[]export[]]*"])
    assert "renamed" not in recording(project)["torch"][torch_minor()]


def test_a_corrupt_recording_fails_its_items_and_is_never_overwritten(
    project: pytest.Pytester,
) -> None:
    write_cases(project, TWO_CASES)
    (project.path / RECORDING).write_text('{"format": 1, "torch": ')
    for run in (project.runpytest("--exportcheck"), update(project)):
        run.assert_outcomes(failed=3)
        run.stdout.fnmatch_lines(
            ["*[[]case[]] *main.recorded.json: unreadable (JSONDecodeError: *; fix or delete it*"]
        )
        assert (project.path / RECORDING).read_text() == '{"format": 1, "torch": '
    run.stdout.fnmatch_lines(["not written: *main.recorded.json: unreadable*"])


def test_a_recording_gets_the_usual_file_mode(project: pytest.Pytester) -> None:
    import os

    write_cases(project, TWO_CASES)
    update(project)
    umask = os.umask(0)
    os.umask(umask)
    assert (project.path / RECORDING).stat().st_mode & 0o777 == 0o666 & ~umask


FAILING_CAPTURE = """
cases:
  branchy:
    description: a data-dependent branch export refuses
    model: {target: models.py:DataDependent}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [recorded]
"""


def test_a_capture_that_raises_is_recorded_as_such(project: pytest.Pytester) -> None:
    write_cases(project, FAILING_CAPTURE)
    update(project).assert_outcomes(failed=1)  # the capture's own failure still shows
    (entry,) = recording(project)["torch"][torch_minor()]["branchy"].values()
    assert list(entry) == ["capture"]
    assert entry["capture"].startswith("[data-dependent guard] ")
    project.runpytest("--exportcheck").stdout.fnmatch_lines(
        ["*[[]capture: data-dependent guard[]]*"]
    )


def test_a_recorded_failure_that_now_captures_is_a_difference(project: pytest.Pytester) -> None:
    write_cases(project, TWO_CASES)
    update(project)

    def failed_then(data: dict) -> None:
        data["torch"][torch_minor()]["counter"]["export"] = {"capture": "[other] KeyError: 'x'"}

    rewrite(project, failed_then)
    result = project.runpytest("--exportcheck", "-k", "counter")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"- the capture's outcome differs from the recording for torch {torch_minor()} "
            "(main.recorded.json):",
            "    recorded: [[]other[]] KeyError: 'x'",
            "    now: succeeds",
        ]
    )
