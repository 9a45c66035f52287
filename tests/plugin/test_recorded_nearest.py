"""A torch with no recording of its own compares with the nearest one, and says so once.

The installed torch is what its metadata says; these tests make it say another
version (in-process runs only: xdist workers read the real metadata), and lay
the recording's sections out around it.
"""

from __future__ import annotations

import json

import pytest
from casekit import RECORDED_CASES, write_cases
from packaging.version import Version

from pytest_exportcheck.spec import compat
from pytest_exportcheck.spec.compat import torch_minor

RECORDING = "cases/main.recorded.json"
SUMMARY = "*exportcheck torch versions*"


@pytest.fixture
def recorded(project: pytest.Pytester) -> pytest.Pytester:
    """The cases, recorded on the real torch (its minor's section)."""
    write_cases(project, RECORDED_CASES)
    project.runpytest("--exportcheck", "--exportcheck-update").assert_outcomes(passed=3)
    return project


def sections(project: pytest.Pytester, layout: dict[str, str | None]) -> None:
    """Re-key the real section as each minor of ``layout``; a value names a placeholder
    of ``counter`` to rename in that copy (None: an exact copy)."""
    path = project.path / RECORDING
    data = json.loads(path.read_text())
    real = data["torch"].pop(torch_minor())
    for minor, renamed in layout.items():
        section = json.loads(json.dumps(real))
        if renamed is not None:
            section["counter"]["export"]["placeholders"][0][0] = renamed
        data["torch"][minor] = section
    path.write_text(json.dumps(data))


def pretend(monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    monkeypatch.setattr(compat, "torch_version", lambda: Version(version))


def test_its_own_section_needs_no_summary(recorded: pytest.Pytester) -> None:
    result = recorded.runpytest("--exportcheck")
    result.assert_outcomes(passed=3)
    result.stdout.no_fnmatch_line(SUMMARY)


def test_a_local_build_suffix_reads_its_minors_section(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    sections(recorded, {"2.12": None, "2.9": "p_old"})
    pretend(monkeypatch, "2.12.1+cu130")
    result = recorded.runpytest("--exportcheck")
    result.assert_outcomes(passed=3)
    result.stdout.no_fnmatch_line(SUMMARY)


@pytest.mark.quick
def test_the_nearest_older_section_is_compared_and_summarized_once(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    sections(recorded, {"2.9": "p_old_weight", "2.13": None, "2.6": None})
    pretend(monkeypatch, "2.12.1")
    result = recorded.runpytest("--exportcheck")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- placeholders differ from torch 2.9's recording (no recording for torch 2.12 "
            "yet; nearest older) (main.recorded.json):",
            SUMMARY,
            "torch 2.12.1: no recordings of its own; compared with torch 2.9 (the nearest "
            "recorded): 1 of 3 recorded items differ",
            "  export placeholder names: 1 item, e.g. cases/main.yaml::counter::recorded"
            "[[]export-cpu[]]: p_old_weight now p_lin_weight",
            "run pytest --exportcheck --exportcheck-update to record torch 2.12",
        ]
    )


def test_only_newer_sections_compare_with_the_oldest_of_them(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    sections(recorded, {"2.14": None, "2.13": "p_renamed"})
    pretend(monkeypatch, "2.6.0")
    result = recorded.runpytest("--exportcheck")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- placeholders differ from torch 2.13's recording (no recording for torch 2.6 "
            "yet; no older recording)*",
            "torch 2.6.0: no recordings of its own; compared with torch 2.13 *: 1 of 3 *",
        ]
    )


def test_a_nightly_compares_with_the_newest_release_and_records_under_its_minor(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    sections(recorded, {"2.14": None, "2.9": "p_old"})
    pretend(monkeypatch, "2.16.0.dev20261101+cpu")
    result = recorded.runpytest("--exportcheck")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "torch 2.16.0.dev20261101+cpu: no recordings of its own; compared with torch 2.14 "
            "(the nearest recorded): 0 of 3 recorded items differ",
            "run pytest --exportcheck --exportcheck-update to record torch 2.16",
        ]
    )
    recorded.runpytest("--exportcheck", "--exportcheck-update").assert_outcomes(passed=3)
    written = json.loads((recorded.path / RECORDING).read_text())["torch"]
    assert sorted(written) == ["2.14", "2.16", "2.9"]
    assert written["2.16"] == written["2.14"]


def test_no_section_at_all_skips_saying_how_to_record(recorded: pytest.Pytester) -> None:
    sections(recorded, {})
    result = recorded.runpytest("--exportcheck", "-rs")
    result.assert_outcomes(skipped=3)
    result.stdout.fnmatch_lines(
        [
            "SKIPPED * main.recorded.json has no section for any torch; record it with "
            "pytest --exportcheck --exportcheck-update"
        ]
    )
    result.stdout.no_fnmatch_line(SUMMARY)


def test_the_report_carries_the_summary_before_the_matrix(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    sections(recorded, {"2.9": "p_old_weight"})
    pretend(monkeypatch, "2.12.1")
    recorded.runpytest("--exportcheck", "--exportcheck-report=report.json")
    doc = json.loads((recorded.path / "report.json").read_text())
    assert doc["recordings"] == {
        "torch": "2.12.1",
        "minor": "2.12",
        "compared_with": {"2.9": 3},
        "compared": 3,
        "differing": 1,
        "groups": [
            {
                "kind": "export placeholder names",
                "items": 1,
                "example": "cases/main.yaml::counter::recorded[export-cpu]: "
                "p_old_weight now p_lin_weight",
            }
        ],
    }
    markdown = (recorded.path / "report.md").read_text()
    assert markdown.index("### No recordings for this torch") < markdown.index("### Matrix")
