"""On a machine with a CUDA GPU: what simulated devices cannot show. Elsewhere these skip.

Simulated GPUs (``test_devices.py``) cover discovery, skips, scheduling and the
sharing arithmetic everywhere; these run the real thing: models built and
exported on the GPU, cuDNN's noise arbitrated, portability failing as torch
raises it, workers sharing one GPU, memory handed back.
"""

from __future__ import annotations

import gc

import pytest
import torch
from casekit import MLP_CASE, write_cases

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU: torch sees none here"
)

GRU_CASE = """
cases:
  gru:
    description: a bidirectional GRU (cuDNN on the GPU)
    model: {target: gru.py:Gru}
    inputs: {args: [{shape: [2, 8, 16]}]}
    captures: [export]
    checks: [parity]
"""

GRU = """
import torch
from torch import nn


class Gru(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(16, 24, num_layers=2, batch_first=True, bidirectional=True)

    def forward(self, x):
        return self.gru(x)[0]
"""


def test_a_case_passes_every_check_on_the_gpu_moved_included(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    result = project.runpytest("--exportcheck", "--exportcheck-devices", "cuda:0", "-v")
    result.assert_outcomes(passed=6)  # the five default checks of one capture, and moved
    result.stdout.fnmatch_lines_random(
        [f"*mlp::{check}[[]export-cuda:0[]] PASSED*" for check in ("mode", "moved")]
    )


def test_cudnn_noise_is_arbitrated_by_float64(project: pytest.Pytester) -> None:
    (project.path / "cases" / "gru.py").write_text(GRU)
    write_cases(project, GRU_CASE)
    project.runpytest("--exportcheck", "--exportcheck-devices", "cuda:0").assert_outcomes(passed=1)


def test_a_tensor_left_on_the_cpu_fails_eager_as_torch_raises(project: pytest.Pytester) -> None:
    (project.path / "cases" / "stray.py").write_text(
        "import torch\nfrom torch import nn\nTABLE = torch.ones(4, 4)\n"
        "class Stray(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.table = TABLE\n    def forward(self, x):\n        return x @ self.table\n"
    )
    write_cases(
        project,
        "cases:\n  stray:\n    description: d\n    model: {target: stray.py:Stray}\n"
        "    inputs: {args: [{shape: [2, 4]}]}\n    captures: [export]\n",
    )
    result = project.runpytest("--exportcheck", "--exportcheck-devices", "cuda:0")
    result.stdout.fnmatch_lines(
        [
            "*[[]eager[]] cases/main.yaml:2: the model is not portable to cuda:0: model.table: a "
            "plain tensor attribute, still on cpu; register it as a buffer*The eager forward on "
            "cuda:0 raised RuntimeError: *"
        ]
    )


def test_workers_share_the_gpu_by_default(project: pytest.Pytester) -> None:
    write_cases(
        project,
        MLP_CASE + "  counter:\n    description: d\n    model: {target: models.py:Counter}\n"
        "    inputs: {args: [{shape: [2, 4]}]}\n",
    )
    args = ("--exportcheck", "--exportcheck-devices", "cuda:0")
    # Every item the two cases have on cuda:0 passes; counted by collection, so a check
    # added to the defaults does not leave this test stale where CI (no GPU) never runs it.
    collected = project.runpytest(*args, "--collect-only", "-q").stdout.str()
    items = collected.count("[export-cuda:0]")
    assert items >= 10, collected
    result = project.runpytest(*args, "-n", "2")
    result.assert_outcomes(passed=items)
    result.stdout.fnmatch_lines(
        [
            "cuda:0: 2 of 2 workers (auto: * GiB free x 0.9 / * = *",
            "largest GPU memory one worker reserved: * GiB*",
        ]
    )


def test_gpu_memory_is_handed_back_once_a_capture_is_released(project: pytest.Pytester) -> None:
    from pytest_exportcheck.capture import capture
    from pytest_exportcheck.checks.parity import check_parity
    from pytest_exportcheck.model.devices import free_memory
    from pytest_exportcheck.model.subject import Subject
    from pytest_exportcheck.spec import load_case_file

    write_cases(project, MLP_CASE)
    (entry,) = load_case_file(project.path / "cases" / "main.yaml")

    def capture_check_release() -> None:
        subject = Subject(entry.case, "cuda:0")
        record = capture("export", subject)
        assert check_parity(entry.case, record) == []
        assert torch.cuda.memory_allocated("cuda:0") > before
        del record, subject
        free_memory("cuda:0")

    # torch keeps workspaces per handle and stream in the caching allocator for the life
    # of the process: cuBLAS's for a matmul (32 MiB on an H100), and more for other
    # kernels (1 MiB more after this MLP's capture and parity run, seen on the GPU machine
    # with a matmul as the only warm-up). They are torch's, not the capture's: a first
    # round makes them part of the baseline, and the second must hand back all it took.
    before = 0
    capture_check_release()
    gc.collect()
    before = torch.cuda.memory_allocated("cuda:0")
    capture_check_release()
    assert torch.cuda.memory_allocated("cuda:0") == before
