"""The programs directory: what a loading run finds there, and the table made of what the
loading runs concluded (differences grouped by cause, one example each)."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from pytest_exportcheck.saved_programs.store import flat, minor_of, saved_programs
from pytest_exportcheck.saved_programs.summary import cause_of, render_markdown


def test_a_folder_being_written_or_without_its_about_file_is_not_a_saved_program(
    tmp_path: Path,
) -> None:
    whole = tmp_path / "torch-2.9" / "mlp" / "export-strict-cuda:0"
    whole.mkdir(parents=True)
    (whole / "about.json").write_text("{}")
    (tmp_path / "torch-2.9" / "mlp" / ".export-cpu.writing-1").mkdir()
    (tmp_path / "torch-2.9" / "mlp" / "export-cpu").mkdir()  # no about.json: unfinished
    (tmp_path / "not-a-minor" / "mlp" / "export-cpu").mkdir(parents=True)
    (found,) = saved_programs(tmp_path)
    assert (found.minor, found.case, found.capture, found.device) == (
        (2, 9), "mlp", "export-strict", "cuda:0",
    )  # fmt: skip
    assert found.label == "2.9" and minor_of("2.10.0+cu128") == (2, 10)


def test_values_are_saved_as_plain_leaves_with_their_structure() -> None:
    leaves, text, dumped = flat({"logits": torch.ones(2, requires_grad=True), "n": 3})
    assert [type(leaf) for leaf in leaves] == [torch.Tensor, int]
    assert not leaves[0].requires_grad
    assert "logits" in text and dumped is not None


def test_failures_are_grouped_by_stage_and_what_raised() -> None:
    cond = (
        "[load] torch 2.8.0 loading the program torch 2.6.0 saved (/p/program.pt2) with "
        "torch.export.load().module() raised SerializeError: Failed deserializing node "
        "Node(target='torch.ops.higher_order.cond', inputs=[...])"
    )
    assert cause_of(cond) == "load: SerializeError on torch.ops.higher_order.cond"
    assert cause_of("[loaded] call 2/3: output: 8 / 8 elements outside tolerance") == (
        "loaded: outputs differ"
    )


def test_the_table_has_a_row_per_loading_and_saving_minor(tmp_path: Path) -> None:
    failure = {
        "item": "cases/a.yaml::c::loaded[2.6-export-cpu]",
        "outcome": "failed",
        "why": "[load] torch 2.8.0 loading the program torch 2.6.0 saved (/p) with "
        "torch.export.load().module() raised KeyError: 'x'",
    }
    xpass = {"item": "cases/a.yaml::d::loaded[2.6-export-cpu]", "why": "[XPASS(strict)] ..."}
    summary = {
        "torch": "2.8.0",
        "by_saving_minor": {"2.6": {"judged": 3, "failed": [failure, xpass]}},
    }
    (tmp_path / "loaded-by-torch-2.8.json").write_text(json.dumps(summary))
    rows = render_markdown(tmp_path)
    assert rows[2] == (
        "| 2.8.0 | 2.6 | 3 | 2 | load: KeyError: 1, e.g. `a.yaml::c::loaded[2.6-export-cpu]`: "
        "KeyError: 'x' |"
    )
