"""Programs across torch versions: a run saves every export's program with its inputs
and eager's outputs (``--exportcheck-save-programs``); a later torch loads what older
ones saved (``--exportcheck-load-programs``) and compares. A program that loads but
computes otherwise, and one that does not load, fail naming both torch versions;
programs of this torch or a newer one are not loaded, and the run says why.

An older torch is played by renaming this torch's folder (``torch-2.13`` →
``torch-2.1``) and its ``about.json``: the files are this torch's own, so what the
test changes in them is the only difference.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from casekit import MLP_CASE, load_older, saved_as_older, write_cases

from pytest_exportcheck.saved_programs.store import minor_label, minor_of

THIS = minor_label(minor_of(torch.__version__))
COUNTER_CASE = """
cases:
  counter:
    description: a buffer updated at every call, over three calls
    model: {target: models.py:Counter}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [parity]
    expect: {parity: {steps: 3}}
"""


def _save_as(project: pytest.Pytester, case: str, torch_version: str) -> Path:
    """Save ``case``'s programs with this torch, then make them look saved by ``torch_version``."""
    write_cases(project, case)
    return saved_as_older(project, torch_version)[0]


def _load(project: pytest.Pytester, *extra: str) -> pytest.RunResult:
    return load_older(project, *extra)


@pytest.mark.quick
def test_a_program_an_older_torch_saved_loads_runs_and_agrees(project: pytest.Pytester) -> None:
    _save_as(project, COUNTER_CASE, "2.1.0")
    result = _load(project, "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*counter::loaded[[]2.1-export-cpu[]] PASSED*",
            f"programs older torches saved in {project.path / 'progs'}: 1 (torch 2.1)",
        ]
    )
    summary = json.loads((project.path / "progs" / f"loaded-by-torch-{THIS}.json").read_text())
    assert summary["by_saving_minor"] == {"2.1": {"judged": 1, "failed": []}}


def test_a_tied_weight_is_compared_with_this_torchs_eager_too(project: pytest.Pytester) -> None:
    # head.weight is emb.weight: the loaded program holds it under both names.
    tied = MLP_CASE.replace("Mlp", "Tied").replace(
        "{shape: [2, 4]}", "{shape: [2, 5], dtype: int64, high: 16}"
    )
    _save_as(project, tied, "2.1.0")
    result = _load(project, "--exportcheck-strict-gaps")
    result.assert_outcomes(passed=1)


def test_one_that_loads_but_computes_otherwise_fails_naming_both_torches(
    project: pytest.Pytester,
) -> None:
    # What the older torch's eager gave at the second call, changed: the program loaded
    # here agrees with this torch's eager, and not with what was saved.
    older = _save_as(project, COUNTER_CASE, "2.1.0")
    values_file = older / "counter" / "export-cpu" / "values.pt"
    values = torch.load(values_file, weights_only=True)
    leaves, text, dumped = values["outputs"][1]
    values["outputs"][1] = ([leaves[0] + 1.0], text, dumped)
    torch.save(values, values_file)
    result = _load(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*call 2/3: output*eager on torch 2.1.0*loaded by torch " + torch.__version__ + "*",
        ]
    )
    summary = json.loads((project.path / "progs" / f"loaded-by-torch-{THIS}.json").read_text())
    (failed,) = summary["by_saving_minor"]["2.1"]["failed"]
    assert failed["item"].endswith("counter::loaded[2.1-export-cpu]")
    assert "eager on torch 2.1.0" in failed["why"]


def test_one_that_cannot_be_loaded_fails_at_load_naming_both_torches(
    project: pytest.Pytester,
) -> None:
    older = _save_as(project, MLP_CASE, "2.4.1")
    (older / "mlp" / "export-cpu" / "program.pt2").write_bytes(b"not a zip archive")
    result = _load(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*[[]load[]] torch {torch.__version__} loading the program torch 2.4.1 saved (*"
            "program.pt2) with torch.export.load().module() raised BadZipFile: *",
        ]
    )


def test_programs_of_this_torch_or_a_newer_one_are_not_loaded_and_the_run_says_so(
    project: pytest.Pytester,
) -> None:
    _save_as(project, MLP_CASE, "99.0.0")
    root = project.path / "progs"
    shutil.copytree(root / "torch-99.0", root / f"torch-{THIS}")
    result = _load(project)
    result.assert_outcomes()  # nothing collected: neither is older than this torch
    result.stdout.fnmatch_lines(
        [
            f"programs older torches saved in {project.path / 'progs'}: 0",
            "not loaded: the programs torch 99.0 saved (newer than this torch: torch promises "
            "no forward compatibility)",
        ]
    )


def test_a_directory_that_is_not_there_is_a_usage_error(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    result = project.runpytest("--exportcheck", "--exportcheck-load-programs=missing")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--exportcheck-load-programs: *missing is not a directory"])


def test_an_xfail_for_this_torchs_capture_does_not_cover_a_loaded_program(
    project: pytest.Pytester,
) -> None:
    # Strict export of the case fails on this torch (say): an older torch's program of it
    # still loads and agrees, and is judged; only an xfail naming `loaded` covers it.
    _save_as(project, MLP_CASE, "2.1.0")
    write_cases(project, MLP_CASE + "    xfail: {reason: capture fails here, stage: capture}\n")
    result = _load(project, "-v")
    result.assert_outcomes(passed=1)
    named = "    xfail: {reason: older programs differ, checks: [loaded]}\n"
    write_cases(project, MLP_CASE + named)
    strict = _load(project)
    strict.assert_outcomes(failed=1)  # XPASS(strict): the xfail named it, and it passed
