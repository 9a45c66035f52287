"""Where a saved program lives, and what is saved with it.

``DIR/torch-2.9/<case>/<capture>-<device>/`` holds, for one capture of one case:

- ``program.pt2``: ``torch.export.save`` of the captured program;
- ``values.pt``: the case's inputs and eager's outputs over the case's parity
  steps on the saving torch, each as pytree leaves with the structure as text
  (``torch.save``; read back with ``weights_only=True``, so reading it runs no
  pickled code — the ``.pt2`` itself is another matter, see the README);
- ``about.json``: the saving torch's version, the case's file and line, the
  steps and the seed.

A folder is written beside its final place and renamed into it, so a loading run
never sees half of one. Case names are unique across a run's files, so one folder
per case name is unambiguous.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT = 1
PROGRAM, VALUES, ABOUT = "program.pt2", "values.pt", "about.json"
MINOR_FOLDER = re.compile(r"torch-(\d+)\.(\d+)")
# What torch.load(weights_only=True) reads back without running pickled code.
PLAIN_LEAVES = (int, float, bool, str, type(None))


def minor_of(version: str) -> tuple[int, int]:
    """``2.9.1+cu128`` → ``(2, 9)``."""
    major, minor = re.match(r"(\d+)\.(\d+)", version).groups()  # type: ignore[union-attr]
    return int(major), int(minor)


def minor_label(minor: tuple[int, int]) -> str:
    return f"{minor[0]}.{minor[1]}"


@dataclass(frozen=True)
class SavedProgram:
    """One program a torch saved, as a loading run finds it."""

    folder: Path
    minor: tuple[int, int]  # the saving torch's, from its folder's name
    case: str
    capture: str
    device: str

    @property
    def label(self) -> str:
        return minor_label(self.minor)

    @property
    def program(self) -> Path:
        return self.folder / PROGRAM

    def about(self) -> dict[str, Any]:
        return json.loads((self.folder / ABOUT).read_text())

    def values(self) -> dict[str, Any]:
        """Inputs and outputs as the saving torch wrote them (plain data only)."""
        import torch

        return torch.load(self.folder / VALUES, weights_only=True, map_location="cpu")


@dataclass
class ProgramsFound:
    """What a loading run takes from a programs directory, and what it leaves, saying why."""

    programs: list[SavedProgram]
    skipped: list[str]  # "<folder>: why", for the run's summary


def saved_programs(root: Path) -> ProgramsFound:
    """Every complete saved program under ``root``: regular files in real folders inside
    it. A symbolic link is not followed (loading a ``.pt2`` runs what it holds: only
    what was put in the directory is loaded), and every folder left is said, with why."""
    root = root.resolve()
    found = ProgramsFound([], [])
    for minor_folder in sorted(root.glob("torch-*")):
        match = MINOR_FOLDER.fullmatch(minor_folder.name)
        why = "not named torch-MAJOR.MINOR" if match is None else _not_a_folder(minor_folder)
        if why is not None:
            found.skipped.append(f"{minor_folder}: {why}")
            continue
        minor = (int(match[1]), int(match[2]))
        for folder in sorted(minor_folder.glob("*/*")):
            why = _why_not_loaded(folder, root)
            if why is not None:
                found.skipped.append(f"{folder}: {why}")
                continue
            capture, _, device = folder.name.rpartition("-")
            found.programs.append(SavedProgram(folder, minor, folder.parent.name, capture, device))
    return found


def _not_a_folder(path: Path) -> str | None:
    if path.is_symlink():
        return "a symbolic link: not followed"
    return None if path.is_dir() else "not a folder"


def _why_not_loaded(folder: Path, root: Path) -> str | None:
    if folder.name.startswith("."):
        return "being written (or left by a writer that was killed)"
    for path, whose in ((folder.parent, "its case folder: "), (folder, "")):
        why = _not_a_folder(path)
        if why is not None:
            return whose + why
    if not folder.resolve().is_relative_to(root):
        return "outside the directory"
    for name in (ABOUT, PROGRAM, VALUES):
        path = folder / name
        if not os.path.lexists(path):
            return f"no {name}: not a complete saved program"
        if path.is_symlink() or not path.is_file():
            return f"{name} is not a regular file (a symbolic link is not followed)"
    try:
        about = json.loads((folder / ABOUT).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"{ABOUT} unreadable: {exc}"
    return None if isinstance(about, dict) else f"{ABOUT} holds no JSON object"


def flat(value: Any) -> tuple[list[Any], str, str | None]:
    """``value`` as its pytree leaves (tensors detached, on the CPU), its structure's text,
    and the structure as ``treespec_dumps`` writes it (None for a type it cannot write)."""
    import torch
    from torch.utils import _pytree as pytree

    leaves, spec = pytree.tree_flatten(value)
    plain = []
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            leaf = leaf.detach().to("cpu").clone()
        elif not isinstance(leaf, PLAIN_LEAVES):
            raise TypeError(
                f"a leaf of type {type(leaf).__name__} cannot be saved as plain data "
                "(tensors, numbers, strings and None can)"
            )
        plain.append(leaf)
    try:
        dumped: str | None = pytree.treespec_dumps(spec)
    except Exception:  # a registered type without a serialized name: the text still says
        dumped = None
    return plain, str(spec), dumped


def save_program(
    root: Path,
    *,
    program: Any,
    case: str,
    capture: str,
    device: str,
    inputs: Any,
    outputs: list[Any],
    about: dict[str, Any],
) -> Path:
    """Write one saved program under ``root/torch-<this minor>``; return its folder."""
    import torch

    from pytest_exportcheck.model import program_files

    folder = root / f"torch-{minor_label(minor_of(torch.__version__))}" / case
    folder = folder / f"{capture}-{device}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    writing = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.writing-"))
    try:
        program_files.save_program(program, writing / PROGRAM)
        values = {"format": FORMAT, "inputs": flat(inputs), "outputs": [flat(o) for o in outputs]}
        torch.save(values, writing / VALUES)
        about = {"format": FORMAT, "torch": torch.__version__, **about}
        (writing / ABOUT).write_text(json.dumps(about, indent=1, sort_keys=True) + "\n")
        _replace_folder(writing, folder)
    except BaseException:
        shutil.rmtree(writing, ignore_errors=True)
        raise
    return folder


def _replace_folder(new: Path, final: Path) -> None:
    """Put ``new`` at ``final``: a reader sees the old folder or the new one, whole."""
    if not final.exists():
        try:
            os.rename(new, final)
            return
        except OSError:  # another worker got there first
            pass
    old = final.with_name(f".{final.name}.old-{os.getpid()}")
    os.rename(final, old)
    os.rename(new, final)
    shutil.rmtree(old, ignore_errors=True)
