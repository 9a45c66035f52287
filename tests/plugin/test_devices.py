"""Devices: items per device, skips that name absent devices, meta, and GPU ownership under xdist."""

from __future__ import annotations

import re

import pytest
from casekit import MLP_CASE, write_cases

from pytest_exportcheck.devices import SIMULATE_ENV

GPU_BOX = "cpu,cuda:0,cuda:1"


@pytest.fixture
def gpu_box(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project on a pretend machine with two GPUs (this one has none: their items skip)."""
    monkeypatch.setenv(SIMULATE_ENV, GPU_BOX)
    return project


def test_one_item_set_per_device_and_moved_only_on_accelerators(gpu_box: pytest.Pytester) -> None:
    write_cases(gpu_box, MLP_CASE)
    result = gpu_box.runpytest(
        "--exportcheck", "--exportcheck-devices", "all", "--collect-only", "-q"
    )
    result.stdout.fnmatch_lines(
        [
            "cases/main.yaml::mlp::signature[[]export-cpu[]]",
            "cases/main.yaml::mlp::parity[[]export-cpu[]]",
            "cases/main.yaml::mlp::signature[[]export-cuda:0[]]",
            "cases/main.yaml::mlp::moved[[]export-cuda:0[]]",
            "cases/main.yaml::mlp::moved[[]export-cuda:1[]]",
            "14 tests collected*",
        ]
    )
    result.stdout.no_fnmatch_line("*moved[[]export-cpu[]]*")


def test_absent_devices_skip_naming_the_device(gpu_box: pytest.Pytester) -> None:
    write_cases(gpu_box, MLP_CASE)
    result = gpu_box.runpytest("--exportcheck", "--exportcheck-devices", "cpu,cuda", "-rs")
    result.assert_outcomes(passed=4, skipped=10)
    result.stdout.fnmatch_lines(
        [
            "SKIPPED [[]5[]] cases/main.yaml:2: device cuda:0 is not available here: torch sees no cuda device",
            "SKIPPED [[]5[]] cases/main.yaml:2: device cuda:1 is not available here: torch sees no cuda device",
        ]
    )


def test_a_kind_nobody_has_still_yields_items_that_skip(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    result = project.runpytest("--exportcheck", "--exportcheck-devices", "xpu", "-rs")
    result.assert_outcomes(skipped=5)
    result.stdout.fnmatch_lines(["SKIPPED [[]5[]] *device xpu is not available here*"])


def test_meta_checks_structure_and_says_values_are_not_applicable(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE.replace("Mlp", "Counter"))
    result = project.runpytest("--exportcheck", "--exportcheck-devices", "meta", "-rs")
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines(
        ["SKIPPED [[]2[]] cases/main.yaml:2: not applicable: meta tensors carry no values*"]
    )


def test_a_case_narrows_the_devices(gpu_box: pytest.Pytester) -> None:
    write_cases(gpu_box, MLP_CASE + "    devices: [cuda:1]\n")
    result = gpu_box.runpytest(
        "--exportcheck", "--exportcheck-devices", "all", "--collect-only", "-q"
    )
    result.stdout.fnmatch_lines(["*mlp::signature[[]export-cuda:1[]]", "5 tests collected*"])


def test_the_ini_sets_the_default_devices(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    project.makeini("[pytest]\nexportcheck_devices = cpu, meta\n")
    result = project.runpytest("--exportcheck", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*signature[[]export-meta[]]", "8 tests collected*"])


def test_an_unknown_device_is_a_usage_error(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    result = project.runpytest("--exportcheck", "--exportcheck-devices", "gpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--exportcheck-devices: unknown device 'gpu'*"])


WORKER_LINE = re.compile(r"^\[(gw\d+)\] .*(?:PASSED|SKIPPED|FAILED) (\S+)")


def test_under_xdist_each_gpu_belongs_to_one_worker(gpu_box: pytest.Pytester) -> None:
    write_cases(
        gpu_box,
        MLP_CASE
        + """  counter:
    description: second case
    model: {target: models.py:Counter}
    inputs: {args: [{shape: [2, 4]}]}
""",
    )
    result = gpu_box.runpytest("--exportcheck", "--exportcheck-devices", "all", "-n", "2", "-v")
    result.assert_outcomes(passed=8, skipped=20)
    workers: dict[str, set[str]] = {}
    for line in result.outlines:
        match = WORKER_LINE.match(line)
        if match:
            device = match.group(2).rsplit("-", 1)[1].rstrip("]")
            workers.setdefault(device, set()).add(match.group(1))
    assert len(workers["cuda:0"]) == 1
    assert len(workers["cuda:1"]) == 1
    assert workers["cuda:0"] != workers["cuda:1"]
