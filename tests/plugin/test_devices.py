"""Devices: items per device, skips that name absent devices, meta, and GPU ownership under xdist."""

from __future__ import annotations

import re

import pytest
from casekit import MLP_CASE, write_cases

from pytest_exportcheck.model.devices import SIMULATE_ENV
from pytest_exportcheck.parallel.gpu_sharing import SIMULATE_FREE_ENV

# Names no machine has, so their items skip on a machine with GPUs too.
GPU_BOX = "cpu,cuda:96,cuda:97"


@pytest.fixture
def gpu_box(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project on a pretend machine with two GPUs that no real machine has: their items
    skip here and on a machine with GPUs alike."""
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
            "cases/main.yaml::mlp::signature[[]export-cuda:96[]]",
            "cases/main.yaml::mlp::moved[[]export-cuda:96[]]",
            "cases/main.yaml::mlp::moved[[]export-cuda:97[]]",
            "17 tests collected*",
        ]
    )
    result.stdout.no_fnmatch_line("*moved[[]export-cpu[]]*")


def test_absent_devices_skip_naming_the_device(gpu_box: pytest.Pytester) -> None:
    write_cases(gpu_box, MLP_CASE)
    result = gpu_box.runpytest("--exportcheck", "--exportcheck-devices", "cpu,cuda", "-rs")
    result.assert_outcomes(passed=5, skipped=12)
    result.stdout.fnmatch_lines(
        [
            "SKIPPED [[]6[]] cases/main.yaml:2: device cuda:96 is not available here: torch sees *",
            "SKIPPED [[]6[]] cases/main.yaml:2: device cuda:97 is not available here: torch sees *",
        ]
    )


def test_a_kind_nobody_has_still_yields_items_that_skip(project: pytest.Pytester) -> None:
    import torch

    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        pytest.skip("this machine has an XPU: the kind is not one nobody has here")
    write_cases(project, MLP_CASE)
    result = project.runpytest("--exportcheck", "--exportcheck-devices", "xpu", "-rs")
    result.assert_outcomes(skipped=6)
    result.stdout.fnmatch_lines(["SKIPPED [[]6[]] *device xpu is not available here*"])


def test_meta_checks_structure_and_says_values_are_not_applicable(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE.replace("Mlp", "Counter"))
    result = project.runpytest("--exportcheck", "--exportcheck-devices", "meta", "-rs")
    result.assert_outcomes(passed=2, skipped=3)
    result.stdout.fnmatch_lines(
        ["SKIPPED [[]3[]] cases/main.yaml:2: not applicable: meta tensors carry no values*"]
    )


def test_a_case_narrows_the_devices(gpu_box: pytest.Pytester) -> None:
    write_cases(gpu_box, MLP_CASE + "    devices: [cuda:97]\n")
    result = gpu_box.runpytest(
        "--exportcheck", "--exportcheck-devices", "all", "--collect-only", "-q"
    )
    result.stdout.fnmatch_lines(["*mlp::signature[[]export-cuda:97[]]", "6 tests collected*"])


def test_the_ini_sets_the_default_devices(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    project.makeini("[pytest]\nexportcheck_devices = cpu, meta\n")
    result = project.runpytest("--exportcheck", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*signature[[]export-meta[]]", "10 tests collected*"])


def test_an_unknown_device_is_a_usage_error(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    result = project.runpytest("--exportcheck", "--exportcheck-devices", "gpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--exportcheck-devices: unknown device 'gpu'*"])


WORKER_LINE = re.compile(r"^\[(gw\d+)\] .*(?:PASSED|SKIPPED|FAILED) (\S+)")


def test_under_xdist_a_cap_of_one_gives_each_gpu_one_worker(gpu_box: pytest.Pytester) -> None:
    write_cases(
        gpu_box,
        MLP_CASE
        + """  counter:
    description: second case
    model: {target: models.py:Counter}
    inputs: {args: [{shape: [2, 4]}]}
""",
    )
    result = gpu_box.runpytest(
        "--exportcheck", "--exportcheck-devices", "all", "-n", "2", "-v",
        "--exportcheck-gpu-workers", "1",
    )  # fmt: skip
    result.assert_outcomes(passed=10, skipped=24)
    workers: dict[str, set[str]] = {}
    for line in result.outlines:
        match = WORKER_LINE.match(line)
        if match:
            device = match.group(2).rsplit("-", 1)[1].rstrip("]")
            workers.setdefault(device, set()).add(match.group(1))
    assert len(workers["cuda:96"]) == 1
    assert len(workers["cuda:97"]) == 1
    assert workers["cuda:96"] != workers["cuda:97"]


def test_under_xdist_workers_share_a_gpu_as_its_free_memory_allows(
    gpu_box: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SIMULATE_FREE_ENV, "cuda:96=80GiB,cuda:97=6GiB")
    write_cases(gpu_box, MLP_CASE)
    result = gpu_box.runpytest("--exportcheck", "--exportcheck-devices", "all", "-n", "2")
    result.assert_outcomes(passed=5, skipped=12)
    result.stdout.fnmatch_lines(
        [
            "*exportcheck GPU sharing*",
            "cuda:96: 2 of 2 workers (auto: 80.0 GiB free x 0.9 / 4.0 GiB per worker "
            "(default) = 18, at most the 2 workers)",
            "cuda:97: 1 of 2 workers (auto: 6.0 GiB free x 0.9 / 4.0 GiB per worker (default) = 1)",
        ]
    )


def test_the_ini_sizes_a_worker_s_share(
    gpu_box: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SIMULATE_FREE_ENV, "cuda:96=80GiB,cuda:97=6GiB")
    gpu_box.makeini("[pytest]\nexportcheck_gpu_memory_per_worker = 40GiB\n")
    write_cases(gpu_box, MLP_CASE)
    result = gpu_box.runpytest("--exportcheck", "--exportcheck-devices", "all", "-n", "2")
    result.stdout.fnmatch_lines(
        ["cuda:96: 1 of 2 workers (auto: 80.0 GiB free x 0.9 / 40.0 GiB per worker "
         "(exportcheck_gpu_memory_per_worker) = 1)"]
    )  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--exportcheck-gpu-workers", "some"],
            "workers per GPU 'some': use auto, all or a number from 1",
        ),
        (["--exportcheck-gpu-workers", "0"], "workers per GPU '0'*"),
        (["-o", "exportcheck_gpu_memory_per_worker=lots"], "memory size 'lots': use e.g. 4GiB*"),
    ],
)
def test_a_sharing_setting_nobody_can_read_is_a_usage_error(
    project: pytest.Pytester, args: list[str], message: str
) -> None:
    write_cases(project, MLP_CASE)
    result = project.runpytest("--exportcheck", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--exportcheck-gpu-workers / exportcheck_gpu_*: {message}"])
