"""``--exportcheck-repro=DIR`` for ``shapes`` and ``signature`` findings.

One run of a project holds a model per finding, each broken on purpose: a program that
bakes the example's batch (its outputs differ from eager's at the other sizes), one
whose export keeps a guard that refuses a size inside the declared range, one that
computes a size eager refuses, and a tensor attribute the case expects as a buffer
(``expect.placeholders``). Each script is then run by itself, as a user would, before
and after its model is fixed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from reprokit import copied_project, project_run, shown_then_not_once_fixed

MODELS = """
import torch
from torch import nn


class Baked(nn.Module):
    \"\"\"Scales by the batch in eager, by the example's batch (2) in the program.\"\"\"

    def forward(self, x):
        if torch.compiler.is_exporting():
            return x * 2
        return x * x.shape[0]


class OneBranch(nn.Module):
    \"\"\"A Python branch on a batch of one: Dynamo's graph keeps the example's branch.\"\"\"

    def forward(self, x):
        return x * 2 if x.shape[0] == 1 else x - x.mean(0)


class Guarded(nn.Module):
    \"\"\"A guard only the capture sees: the program refuses a batch of 7.\"\"\"

    def forward(self, x):
        if torch.compiler.is_exporting():
            torch._check(x.shape[0] % 4 != 3)
        return x + 1


class Lax(nn.Module):
    \"\"\"Eager refuses a batch of one; the program computes it.\"\"\"

    def forward(self, x):
        if not torch.compiler.is_exporting() and x.shape[0] == 1:
            raise ValueError("a batch of one")
        return x + 1


class Scaled(nn.Module):
    \"\"\"A scale kept as a plain attribute: export lifts it as a constant, not a buffer.\"\"\"

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.scale = torch.ones(4)

    def forward(self, x):
        return self.lin(x) * self.scale
"""

FIXED = """
import torch
from torch import nn


class Baked(nn.Module):
    def forward(self, x):
        return x * x.shape[0]


class OneBranch(nn.Module):
    def forward(self, x):
        return x - x.mean(0)


class Guarded(nn.Module):
    def forward(self, x):
        return x + 1


class Lax(nn.Module):
    def forward(self, x):
        return x + 1


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("scale", torch.ones(4))

    def forward(self, x):
        return self.lin(x) * self.scale
"""

BATCH = """
    dynamic:
      dims: {batch: {min: 1, max: 8}}
      shapes: {"args[0]": {0: batch}}
"""

CASES = f"""
cases:
  baked:
    description: the example's batch baked in
    model: {{target: models.py:Baked}}
    inputs: {{args: [{{shape: [2, 4]}}]}}
    checks: [shapes]
{BATCH}
  guarded:
    description: a guard that refuses a batch inside the range
    model: {{target: models.py:Guarded}}
    inputs: {{args: [{{shape: [2, 4]}}]}}
    checks: [shapes]
    captures: [export-strict]
    dynamic:
      shapes: {{"args[0]": {{0: {{dynamic: {{min: 1, max: 8}}}}}}}}
  one_branch:
    description: a branch on a batch of one, in Dynamo's graph
    model: {{target: models.py:OneBranch}}
    inputs: {{args: [{{shape: [2, 4]}}]}}
    checks: [shapes]
    captures: [dynamo-legacy]
{BATCH}
  lax:
    description: a batch eager refuses
    model: {{target: models.py:Lax}}
    inputs: {{args: [{{shape: [2, 4]}}]}}
    checks: [shapes]
{BATCH}
  scaled:
    description: a scale expected as a buffer
    model: {{target: models.py:Scaled}}
    inputs: {{args: [{{shape: [2, 4]}}]}}
    checks: [signature]
    expect:
      placeholders:
        - {{name: p_lin_weight, kind: parameter, target: lin.weight}}
        - {{name: p_lin_bias, kind: parameter, target: lin.bias}}
        - {{name: b_scale, kind: buffer, target: scale}}
        - {{name: x, kind: user_input}}
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict]:
    """The project, the run's output and its JSON report's items by node id."""
    root = tmp_path_factory.mktemp("repro-shapes")
    # Written only: the test below runs them, before and after the fix (the plugin's
    # own run of a script is test_reproductions.py's).
    return project_run(root, MODELS, CASES, "--exportcheck-repro-run=no")


def test_each_shapes_and_signature_failure_gets_its_script(project: tuple) -> None:
    root, out, items = project
    for nodeid, script in [
        ("cases/main.yaml::baked::shapes[export-cpu]", "baked-shapes-export-cpu.py"),
        (
            "cases/main.yaml::guarded::shapes[export-strict-cpu]",
            "guarded-shapes-export-strict-cpu.py",
        ),
        ("cases/main.yaml::lax::shapes[export-cpu]", "lax-shapes-export-cpu.py"),
        (
            "cases/main.yaml::one_branch::shapes[dynamo-legacy-cpu]",
            "one_branch-shapes-dynamo-legacy-cpu.py",
        ),
        ("cases/main.yaml::scaled::signature[export-cpu]", "scaled-signature-export-cpu.py"),
    ]:
        item = items[nodeid]
        assert item["outcome"] == "failed", item
        assert item["repro"] == str(root / "repro" / script)
        assert item["repro_outcome"] == "not run", item
    assert (
        "of 5 failures, 0 reproduced in plain torch, 0 not reproduced outside the plugin, " in out
    )
    assert "5 not run, 0 with no plain reproduction yet" in out, out


SHOWN = {
    "baked-shapes-export-cpu.py": "ep.module(): differs from eager:",
    "guarded-shapes-export-strict-cpu.py": "ep.module(): raised AssertionError: Guard failed",
    "lax-shapes-export-cpu.py": "eager: raised ValueError: a batch of one",
    "one_branch-shapes-dynamo-legacy-cpu.py": "graph module: differs from eager:",
    "scaled-signature-export-cpu.py": "c_scale: constant -> scale",
}


def test_a_script_shows_the_finding_then_not_once_the_model_is_fixed(
    project: tuple, tmp_path: Path
) -> None:
    copy = copied_project(project[0], tmp_path)
    before, _ = shown_then_not_once_fixed(copy, SHOWN, FIXED)
    for _, printed in before.values():
        assert any(line.startswith("reproduced: ") for line in printed.splitlines()), printed
