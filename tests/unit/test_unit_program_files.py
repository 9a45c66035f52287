"""Every save and load of a program goes through ``model/program_files.py``: under
pytest's log capture (this very run's: no ``-p no:logging``) torch 2.13's malformed
record while loading a dataclass input raises into a bare ``torch.export.load``."""

from __future__ import annotations

import ast
import dataclasses
import io
from pathlib import Path

import pytest
import torch

from pytest_exportcheck.model.program_files import (
    SerializationError,
    load_program,
    save_program,
    saved_and_loaded,
)

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_exportcheck"


@dataclasses.dataclass
class Pair:
    a: torch.Tensor
    b: torch.Tensor


torch.export.register_dataclass(Pair, serialized_type_name="test_unit_program_files.Pair")


class TakesPair(torch.nn.Module):
    def forward(self, pair: Pair) -> torch.Tensor:
        return pair.a + pair.b


class CommaKey(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.heads = torch.nn.ModuleDict({"a,b": torch.nn.Linear(2, 2)})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.heads["a,b"](x)


@pytest.fixture(scope="module")
def saved() -> bytes:
    pair = Pair(torch.ones(2), torch.ones(2))
    program = torch.export.export(TakesPair(), (pair,))
    buffer = io.BytesIO()
    save_program(program, buffer)
    return buffer.getvalue()


def test_a_bare_load_of_a_dataclass_input_raises_under_pytests_log_capture(saved: bytes) -> None:
    # What the plugin's loads did before: the record reaches pytest's handler, which
    # raises its formatting error into torch.
    with pytest.raises(TypeError, match="not enough arguments for format string"):
        torch.export.load(io.BytesIO(saved))


def test_load_program_loads_it(saved: bytes) -> None:
    program = load_program(io.BytesIO(saved))
    assert torch.equal(program.module()(Pair(torch.ones(2), torch.ones(2))), torch.full((2,), 2.0))


def test_saved_and_loaded_round_trips_a_path_too(tmp_path: Path) -> None:
    program = torch.export.export(TakesPair(), (Pair(torch.ones(2), torch.ones(2)),))
    save_program(program, tmp_path / "program.pt2")
    assert load_program(tmp_path / "program.pt2").module() is not None
    assert saved_and_loaded(program).module() is not None


def test_a_load_that_fails_says_what_torch_logged(tmp_path: Path) -> None:
    # A ModuleDict key with a comma: load raises "check the warnings above" only.
    program = torch.export.export(CommaKey(), (torch.ones(1, 2),))
    save_program(program, tmp_path / "program.pt2")
    with pytest.raises(SerializationError) as raised:
        load_program(tmp_path / "program.pt2")
    assert "torch.export.load raised: RuntimeError" in str(raised.value)
    assert "expected metadata_split to return 3 parts, got 5" in raised.value.logged


def test_no_module_calls_torch_export_save_or_load_but_program_files() -> None:
    # The fresh process's child (a string, run by a Python without pytest) keeps
    # torch's records itself: lowering/fresh_process.py.
    calls = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "program_files.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in (
                "torch.export.save",
                "torch.export.load",
            ):
                calls.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert calls == []
