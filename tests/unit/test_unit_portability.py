"""What ``.to(device)`` leaves behind, found before running and moved for ``moved``."""

from __future__ import annotations

import uuid
from pathlib import Path

import torch
from torch import nn

from pytest_exportcheck.model.portability import move_strays, stray_tensors
from pytest_exportcheck.model.subject import Subject
from pytest_exportcheck.spec import load_case_file


class Holder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("registered", torch.ones(4))
        self.table = torch.ones(4)
        self.scale = torch.tensor(2.0)  # 0-dim: every device's kernels take a CPU scalar
        self.masks = {"a": torch.ones(2), "b": [torch.zeros(3)]}
        self.alias = self.lin.weight  # a parameter under another name: moved by .to()


def test_everything_left_off_the_device_is_found_with_its_path() -> None:
    model = Holder().to("meta")
    found = {stray.path: stray.what for stray in stray_tensors(model, "meta").values()}
    assert found == {
        "model.table": "a plain tensor attribute",
        "model.masks['a']": "a tensor in a dict attribute",
        "model.masks['b'][0]": "a tensor in a list attribute",
    }


def test_nothing_is_stray_on_the_device_it_was_built_for() -> None:
    assert stray_tensors(Holder(), "cpu") == {}


def test_moving_strays_moves_attributes_and_containers_not_parameters() -> None:
    model = Holder().to("meta")
    weight = model.lin.weight
    move_strays(model, "meta")
    assert stray_tensors(model, "meta") == {}
    assert model.lin.weight is weight
    assert model.masks["b"][0].device.type == "meta"


def test_a_module_first_imported_by_a_device_build_keeps_its_tensors_on_the_cpu(
    tmp_path: Path,
) -> None:
    # Imported under `with torch.device("meta")`, TABLE would be made on meta, and
    # every later CPU item of the process would meet it there.
    module = f"portable_{uuid.uuid4().hex}"
    (tmp_path / f"{module}.py").write_text(
        "import torch\nfrom torch import nn\nTABLE = torch.ones(4)\n"
        "class M(nn.Module):\n    def forward(self, x):\n        return x\n"
    )
    (tmp_path / "cases.yaml").write_text(
        "cases:\n  a:\n    description: d\n"
        f"    model: {{target: '{module}.py:M'}}\n    inputs: {{args: [{{shape: [2]}}]}}\n"
    )
    (entry,) = load_case_file(tmp_path / "cases.yaml")
    Subject(entry.case, "meta")
    table = Subject(entry.case, "cpu").pristine_model.forward.__globals__["TABLE"]
    assert table.device == torch.device("cpu")


def test_the_moved_reference_is_the_cpu_build_moved(tmp_path: Path) -> None:
    (tmp_path / "models.py").write_text(
        "import torch\nfrom torch import nn\nTABLE = torch.ones(4)\n"
        "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.lin = nn.Linear(4, 4)\n        self.table = TABLE\n"
        "    def forward(self, x):\n        return self.lin(x) + self.table\n"
    )
    (tmp_path / "cases.yaml").write_text(
        "cases:\n  a:\n    description: d\n"
        "    model: {target: 'models.py:M'}\n    inputs: {args: [{shape: [2, 4]}]}\n"
    )
    (entry,) = load_case_file(tmp_path / "cases.yaml")
    cpu = Subject(entry.case, "cpu")
    moved = cpu.moved_to("meta")
    assert moved.device == "meta"
    assert moved.pristine_model.table.device.type == "meta"
    assert moved.pristine_inputs[0][0].device.type == "meta"
    assert cpu.pristine_model.table.device.type == "cpu"  # the CPU subject is untouched
