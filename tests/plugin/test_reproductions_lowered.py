"""``--exportcheck-repro=DIR`` for a lowered program's values: ONNX Runtime's, run by its
script in plain torch and onnxruntime.

A BatchNorm in train mode: the ONNX model computes as eval mode does, so its values
differ from eager's; with the norm gone, they agree. ONNX rather than AOTInductor,
whose compile costs ~30 s a script: the script's loader and comparison are one
(``repro/lowered_kind.py``); the AOTInductor ones are run on the corpus
(benchmarks/README.md, "Issue 48, second step").
"""

from __future__ import annotations

from pathlib import Path

import pytest
from reprokit import copied_project, project_run, run_scripts

for needed in ("onnx", "onnxscript", "onnxruntime"):
    pytest.importorskip(needed, reason="the onnx target's packages (the lowering extra)")


MODELS = """
import torch
from torch import nn


class TrainNorm(nn.Module):
    \"\"\"Normalizes by the batch in train mode: the ONNX model by its running statistics.\"\"\"

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.norm = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.norm(self.lin(x))
"""

FIXED = """
import torch
from torch import nn


class TrainNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)
"""

CASES = """
cases:
  norm:
    description: a batch norm in train mode, lowered to ONNX
    model: {target: models.py:TrainNorm, mode: train}
    inputs: {args: [{shape: [4, 4]}]}
    checks: [parity]
    lower: [onnx]
"""
SCRIPT = "norm-lowered-onnx-export-cpu.py"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict]:
    root = tmp_path_factory.mktemp("repro-lowered")
    return project_run(root, MODELS, CASES, "--exportcheck-repro-run=no")


def test_a_lowered_programs_values_are_shown_then_not_once_the_model_is_fixed(
    project: tuple, tmp_path: Path
) -> None:
    root, _, items = project
    item = items["cases/main.yaml::norm::lowered[onnx-export-cpu]"]
    assert item["outcome"] == "failed" and item["repro"] == str(root / "repro" / SCRIPT), item
    copy = copied_project(root, tmp_path)
    script = copy / "repro" / SCRIPT
    assert "onnxruntime.InferenceSession" in script.read_text()
    ((status, printed),) = run_scripts(copy, [script]).values()
    assert status == 1, printed
    assert "reproduced: the program lowered to onnx, after call 1/1:" in printed, printed
    (copy / "cases" / "models.py").write_text(FIXED)
    ((status, printed),) = run_scripts(copy, [script]).values()
    assert status == 0 and "not reproduced: the program lowered to onnx agrees" in printed, printed
