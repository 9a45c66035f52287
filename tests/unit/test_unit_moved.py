"""The moved path (CPU export → move_to_device_pass → compare), driven on CPU here.

Machines without an accelerator cannot run it against a GPU, so it is
exercised with the CPU as the target: the same code runs for cuda:N.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_exportcheck.capture import capture
from pytest_exportcheck.capture.moved import move_capture
from pytest_exportcheck.checks.moved import check_moved
from pytest_exportcheck.containment.failures import CaptureError
from pytest_exportcheck.model.subject import Subject
from pytest_exportcheck.spec import load_case_file

MODEL = """
import torch
from torch import nn

class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("count", torch.zeros(()))

    def forward(self, x):
        self.count.add_(1)
        return self.lin(x) * self.count
"""

CASE = """
cases:
  counter:
    description: a counter buffer
    model: {target: models.py:Counter}
    inputs: {args: [{shape: [2, 4]}]}
    expect: {parity: {steps: 3}}
"""


@pytest.fixture
def cpu_record(tmp_path: Path):
    (tmp_path / "models.py").write_text(MODEL)
    (tmp_path / "cases.yaml").write_text(CASE)
    (entry,) = load_case_file(tmp_path / "cases.yaml")
    return capture("export", Subject(entry.case, "cpu"))


def test_a_moved_program_that_matches_eager_passes(cpu_record) -> None:
    moved = move_capture(cpu_record, "cpu")
    assert check_moved(cpu_record.subject.case, moved) == []


def test_the_moved_program_shares_nothing_with_the_cpu_capture(cpu_record) -> None:
    moved = move_capture(cpu_record, "cpu")
    original = cpu_record.program.state_dict["count"]
    assert moved.program.state_dict["count"] is not original
    check_moved(cpu_record.subject.case, moved)
    assert float(original) == 0.0


def test_a_moved_program_that_drifts_is_caught(cpu_record) -> None:
    moved = move_capture(cpu_record, "cpu")
    make = moved.fresh_module

    def drifting():
        module = make()
        module.register_forward_hook(lambda m, a, out: out + 1e-2)
        return module

    moved.fresh_module = drifting
    (finding,) = check_moved(cpu_record.subject.case, moved)
    assert finding.startswith("after step 1/3: output: 8 / 8 elements outside tolerance")
    assert "moved to cpu" in finding


def test_a_move_that_raises_is_a_capture_error(cpu_record, monkeypatch) -> None:
    import torch.export.passes

    def refuse(program, location):
        raise RuntimeError("no such device")

    monkeypatch.setattr(torch.export.passes, "move_to_device_pass", refuse)
    with pytest.raises(
        CaptureError,
        match=r"move_to_device_pass\(<CPU export>, 'cpu'\) raised: "
        r"RuntimeError: no such device",
    ):
        move_capture(cpu_record, "cpu")
