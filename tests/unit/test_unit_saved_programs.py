"""The programs directory: what a loading run finds there, and the table made of what the
loading runs concluded (differences grouped by cause, one example each)."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from pytest_exportcheck.saved_programs.store import flat, minor_of, saved_programs
from pytest_exportcheck.saved_programs.summary import cause_of, render_markdown


def saved(folder: Path, about: str = "{}") -> Path:
    folder.mkdir(parents=True)
    for name in ("program.pt2", "values.pt"):
        (folder / name).write_bytes(b"")
    (folder / "about.json").write_text(about)
    return folder


def test_a_folder_being_written_or_without_its_files_is_not_a_saved_program(
    tmp_path: Path,
) -> None:
    saved(tmp_path / "torch-2.9" / "mlp" / "export-strict-cuda:0")
    (tmp_path / "torch-2.9" / "mlp" / ".export-cpu.writing-1").mkdir()
    (tmp_path / "torch-2.9" / "mlp" / "export-cpu").mkdir()  # no about.json: unfinished
    (tmp_path / "not-a-minor" / "mlp" / "export-cpu").mkdir(parents=True)
    found = saved_programs(tmp_path)
    (program,) = found.programs
    assert (program.minor, program.case, program.capture, program.device) == (
        (2, 9), "mlp", "export-strict", "cuda:0",
    )  # fmt: skip
    assert program.label == "2.9" and minor_of("2.10.0+cu128") == (2, 10)
    assert [line.split(": ", 1)[1] for line in found.skipped] == [
        "being written (or left by a writer that was killed)",
        "no about.json: not a complete saved program",
    ]


def test_only_regular_files_in_real_folders_inside_the_directory_are_loaded(
    tmp_path: Path,
) -> None:
    root, elsewhere = tmp_path / "programs", tmp_path / "elsewhere"
    outside = saved(elsewhere / "mlp" / "export-cpu")
    saved(root / "torch-2.9" / "kept" / "export-cpu")
    (root / "torch-2.9" / "linked_case").symlink_to(elsewhere / "mlp")
    (root / "torch-2.9" / "mlp").mkdir()
    (root / "torch-2.9" / "mlp" / "export-cpu").symlink_to(outside)
    (root / "torch-2.8").symlink_to(elsewhere)
    file_link = saved(root / "torch-2.9" / "file_link" / "export-cpu")
    (file_link / "program.pt2").unlink()
    (file_link / "program.pt2").symlink_to(outside / "program.pt2")
    saved(root / "torch-2.9" / "garbled" / "export-cpu", about="{not json")
    found = saved_programs(root)
    assert [p.case for p in found.programs] == ["kept"]
    assert sorted(line.split(str(root) + "/", 1)[1] for line in found.skipped) == [
        "torch-2.8: a symbolic link: not followed",
        "torch-2.9/file_link/export-cpu: program.pt2 is not a regular file "
        "(a symbolic link is not followed)",
        "torch-2.9/garbled/export-cpu: about.json unreadable: Expecting property name "
        "enclosed in double quotes: line 1 column 2 (char 1)",
        "torch-2.9/linked_case/export-cpu: its case folder: a symbolic link: not followed",
        "torch-2.9/mlp/export-cpu: a symbolic link: not followed",
    ]


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
