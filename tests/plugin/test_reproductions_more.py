"""``--exportcheck-repro``: the scripts of the mode, hierarchy, loaded and moved findings,
and of program chains that move a program or retrace it with ``dynamic:``.

One run of a project holds a model per finding, each broken on purpose: a batch norm
whose forward always normalizes with batch statistics (mode: the program carries
training mode in an eval model), a block whose output is dropped (hierarchy: export
records no call of it), a head returning a named tuple its parent reads one field of
(hierarchy: the unflattened head returns a bare tensor), and a count kept in a Python
int that the program bakes, run as ``move:cpu>module`` and ``retrace`` of a dynamic
batch (parity), and saved by an "older" torch (loaded: this torch's files, renamed, as
``test_loaded_programs.py`` plays one). Each script is then run by itself before and
after the model is fixed (a saved program is fixed by saving it again). The ``moved``
check runs on accelerators only: its script is written by ``python -m
pytest_exportcheck repro`` for the CPU, which the same code moves to.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import childkit
import pytest
from reprokit import (
    BAKED,
    BAKED_FIXED,
    copied_project,
    project_run,
    run_scripts,
    shown_then_not_once_fixed,
)

MODELS = (
    """
import typing

import torch
import torch.nn.functional as F
from torch import nn


class StuckNorm(nn.BatchNorm1d):
    \"\"\"Normalizes with batch statistics in eval mode too.\"\"\"

    def forward(self, x):
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            True, 0.1, self.eps)


class Normed(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.bn = StuckNorm(4)

    def forward(self, x):
        return self.bn(self.lin(x))


class Unused(nn.Module):
    \"\"\"Calls a block whose output it drops: export records no call of it.\"\"\"

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.aux = nn.Linear(4, 4)

    def forward(self, x):
        self.aux(x)
        return self.lin(x)


class Out(typing.NamedTuple):
    logits: torch.Tensor
    hidden: torch.Tensor


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return Out(self.lin(x), x * 2)


class Headed(nn.Module):
    \"\"\"Reads one field of its head's return: the unflattened head returns a bare tensor.\"\"\"

    def __init__(self):
        super().__init__()
        self.head = Head()

    def forward(self, x):
        return self.head(x).logits


"""
    + BAKED
    + """
"""
)

FIXED = (
    """
import torch
from torch import nn


class Normed(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn(self.lin(x))


class Unused(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.aux = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x) + self.aux(x)


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)


class Headed(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = Head()

    def forward(self, x):
        return self.head(x)


"""
    + BAKED_FIXED
    + """
"""
)

CASES = """
cases:
  stuck:
    description: a batch norm stuck in training mode
    model: {target: models.py:Normed}
    inputs: {args: [{shape: [3, 4]}]}
    checks: [mode]
  unused:
    description: a block called for nothing
    model: {target: models.py:Unused}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [hierarchy]
  headed:
    description: a head returning a named tuple
    model: {target: models.py:Headed}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [hierarchy]
  chained:
    description: a baked count, moved, retraced with its dims, and saved by an older torch
    model: {target: models.py:Baked}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [parity]
    programs: [module, "move:cpu>module", retrace]
    expect: {parity: {steps: 2}}
    dynamic:
      dims: {batch: {min: 1, max: 8}}
      shapes: {"args[0]": {0: batch}}
"""

OLDER = "2.1"  # the torch the saved program plays to come from


def _save_as_older(root: Path, models: str, name: str) -> None:
    """``chained``'s program exported from ``models`` here, with its inputs and eager's
    outputs over two calls, saved as torch ``OLDER`` would have left it."""
    import copy

    import torch

    from pytest_exportcheck.saved_programs.store import save_program

    (root / f"{name}.py").write_text(models)
    spec = importlib.util.spec_from_file_location(name, root / f"{name}.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[name] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    torch.manual_seed(0)
    model, x = module.Baked(), torch.randn(2, 4)
    program = torch.export.export(copy.deepcopy(model), (x,))
    outputs = [model(x.clone()).detach() for _ in range(2)]
    folder = save_program(
        root / "progs", program=program, case="chained", capture="export", device="cpu",
        inputs=((x,), {}), outputs=outputs, about={"steps": 2, "seed": 0},
    )  # fmt: skip
    older = root / "progs" / f"torch-{OLDER}"
    shutil.rmtree(older, ignore_errors=True)
    shutil.move(folder.parent.parent, older)
    about = older / "chained" / "export-cpu" / "about.json"
    about.write_text(json.dumps({**json.loads(about.read_text()), "torch": f"{OLDER}.0"}))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict]:
    """The project, the run's output and its JSON report's items by node id."""
    root = tmp_path_factory.mktemp("repro_more")
    return project_run(
        root, MODELS, CASES,
        "--exportcheck-load-programs=progs",
        # Written only: the tests below run them, before and after the fix (the
        # plugin's own run of a script is test_reproductions.py's).
        "--exportcheck-repro-run=no",
        before=lambda: _save_as_older(root, MODELS, "saving_broken"),
    )  # fmt: skip


SCRIPTS = {
    "cases/main.yaml::stuck::mode[export-cpu]": "stuck-mode-export-cpu.py",
    "cases/main.yaml::unused::hierarchy[export-cpu]": "unused-hierarchy-export-cpu.py",
    "cases/main.yaml::headed::hierarchy[export-cpu]": "headed-hierarchy-export-cpu.py",
    "cases/main.yaml::chained::parity[export-cpu]": "chained-parity-export-cpu.py",
    f"cases/main.yaml::chained::loaded[{OLDER}-export-cpu]": "chained-loaded-export-cpu.py",
}


def test_each_finding_gets_its_script(project: tuple) -> None:
    root, out, items = project
    for nodeid, script in SCRIPTS.items():
        item = items[nodeid]
        assert item["outcome"] == "failed", item
        assert item["repro"] == str(root / "repro" / script)
        assert item["repro_outcome"] == "not run", item["text"]
    assert (
        "of 5 failures, 0 reproduced in plain torch, 0 not reproduced outside the plugin, " in out
    )
    assert "5 not run, 0 with no plain reproduction yet" in out, out


SHOWN = {
    "stuck-mode-export-cpu.py": "runs with training=True, where eager's module 'bn' runs",
    "unused-hierarchy-export-cpu.py": (
        "'aux': eager called it 1 time(s), the unflattened module calls it 0 time(s)"
    ),
    "headed-hierarchy-export-cpu.py": (
        "head: the return type changed: it returns Tensor where eager's returns "
        "Out(.logits, .hidden)"
    ),
    "chained-parity-export-cpu.py": "move:cpu>module, step 2/2: the output differs",
    # written by the command below: the moved check runs on accelerators only
    "moved.py": "reproduced: the program moved to cpu, after step 2/2:",
}


def test_a_script_shows_the_finding_then_not_once_the_model_is_fixed(
    project: tuple, tmp_path: Path
) -> None:
    copy = copied_project(project[0], tmp_path, ("cases", "repro", "progs"))
    out = copy / "repro" / "moved.py"
    done = childkit.run(
        [
            sys.executable, "-m", "pytest_exportcheck", "repro",
            "cases/main.yaml::chained::moved[export-cpu]", "-o", str(out),
        ],
        cwd=copy, capture_output=True, text=True, timeout=120, warm=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "move_to_device_pass" in out.read_text()
    before, after = shown_then_not_once_fixed(copy, SHOWN, FIXED)
    # the retrace, with the case's dims, too
    assert "retrace, step 2/2: the output differs" in before["chained-parity-export-cpu.py"][1]
    assert "the program moved to cpu agrees with eager" in after["moved.py"][1]


def test_a_loaded_script_loads_the_stored_program_until_it_is_saved_again(
    project: tuple, tmp_path: Path
) -> None:
    copy = copied_project(project[0], tmp_path, ("cases", "repro", "progs"))
    path = copy / "repro" / "chained-loaded-export-cpu.py"
    assert f"/progs/torch-{OLDER}/chained/export-cpu'" in path.read_text()
    ((status, printed),) = run_scripts(copy, [path]).values()
    assert status == 1, printed
    assert f"call 2/2: the output differs from eager's on torch {OLDER}.0" in printed, printed
    _save_as_older(copy, FIXED, "saving_fixed")
    ((status, printed),) = run_scripts(copy, [path]).values()
    assert status == 0, printed
    assert "not reproduced: the program torch 2.1.0 saved" in printed, printed
