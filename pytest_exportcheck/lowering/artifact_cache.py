"""Compiled artifacts kept between runs, under pytest's cache directory.

Lowering compiles C++: 20-50 s for a small model on this project's 2-core
machines. A program that has not changed need not be compiled again, so a run
that lowers keeps two caches under ``.pytest_cache/d/exportcheck-lowering/``
(``pytest --cache-clear`` empties them with the rest of pytest's cache):

- ``inductor/``: Inductor's own caches (its FX graph and AOTAutograd caches and
  compiled kernels), which ``torch.compile`` reads at its first call: the run sets
  ``TORCHINDUCTOR_CACHE_DIR`` there unless the user set it.
- ``packages/``: AOTInductor packages, each under the digest of what it was
  compiled from. Inductor's caches hardly help ``aoti_compile_and_package``
  (measured on torch 2.13: 27.1 s cold, 22.9 s with them warm, for an MLP), so the
  package itself is kept, and loaded where the program is the same. ONNX models
  are kept there too (``.onnx``: the exporter takes seconds a program), and
  ``saved`` programs (nothing to compile: so that what a fresh process gave for
  one is kept beside it, as for a package).

The key is the digest of the program as ``torch.export.save`` writes it (graph,
signature, weights, node metadata: the same bytes in two processes for the same
seeded model, measured; written to an unnamed file, not held in memory), with
torch's and Python's versions, the target and its options, and the target's own
packages' versions (the device is in the program). An item lowered from the cache
says so in its report: its lowering time is a load's. A run with
``-p no:cacheprovider`` keeps nothing.

Each entry's file name carries the digest of its own bytes beside its key
(``<key>-<bytes>.pt2``): an entry whose bytes are no longer those that were kept (a
file truncated by a full disk or a copy, edited, swapped) is removed and is a miss,
so what it held is made again, and the item says so once (:func:`take_dropped`),
rather than a damaged package being loaded and blamed on the model. One file per
entry, renamed into place whole: a reader never sees half of one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from pytest_exportcheck.model.program_files import SerializationError, save_program

CACHE_NAME = "exportcheck-lowering"  # under pytest's cache: config.cache.mkdir(CACHE_NAME)
INDUCTOR_CACHE_VARIABLE = "TORCHINDUCTOR_CACHE_DIR"


# How many hex digits of an entry's own digest its name carries.
CONTENT_DIGITS = 16


class PackageCache:
    """Compiled artifacts by key, each written whole under a name that carries the
    digest of its bytes (two xdist workers may compile the same program: each renames
    its own complete file into place, and a reader takes either)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.dropped: list[str] = []  # entries found damaged and removed, not yet told

    def key(self, program: torch.export.ExportedProgram, **options: Any) -> str | None:
        """The digest of ``program`` and ``options``; None where torch cannot save it."""
        self.root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=self.root) as archive:
            try:
                save_program(program, archive)
            except SerializationError:  # parity's saved-and-loaded program reports why
                return None
            archive.seek(0)
            return _digest(archive, options)

    def key_of_saved(self, saved: Path, **options: Any) -> str:
        """The key of a program ``torch.export.save`` already wrote to ``saved``."""
        with saved.open("rb") as archive:
            return _digest(archive, options)

    def get(self, key: str, suffix: str = ".pt2") -> Path | None:
        """The entry kept under ``key`` whose bytes are those that were kept; one that
        is not (truncated, changed) is removed, noted in :attr:`dropped`, and a miss."""
        found = None
        named = re.compile(re.escape(key) + f"-([0-9a-f]{{{CONTENT_DIGITS}}})" + re.escape(suffix))
        for path in sorted(self._folder().glob(f"{key}-*{suffix}")):  # keys are hex
            match = named.fullmatch(path.name)
            if match is None:
                continue
            try:
                whole = _file_digest(path)[:CONTENT_DIGITS] == match.group(1)
            except OSError:  # removed meanwhile by another worker that found it damaged
                continue
            if whole:
                found = path
            else:
                self.drop(path)
        return found

    def put(self, key: str, package: Path, suffix: str = ".pt2") -> Path:
        """Keep a copy of ``package`` under ``key``; the kept file's path."""
        folder = self._folder()
        folder.mkdir(parents=True, exist_ok=True)
        handle, partial = tempfile.mkstemp(dir=folder, suffix=".partial")
        digest = hashlib.sha256()
        try:
            with os.fdopen(handle, "wb") as kept, package.open("rb") as source:
                while chunk := source.read(1 << 20):
                    digest.update(chunk)
                    kept.write(chunk)
            path = folder / f"{key}-{digest.hexdigest()[:CONTENT_DIGITS]}{suffix}"
            os.replace(partial, path)
        finally:
            if os.path.exists(partial):
                os.unlink(partial)
        return path

    def drop(self, path: Path, *, damaged: bool = True) -> None:
        """Remove the entry at ``path``; ``damaged``: say so once, in :attr:`dropped`."""
        try:
            path.unlink()
        except FileNotFoundError:  # another worker removed it first, and says so
            return
        if damaged:
            self.dropped.append(path.name)

    def _folder(self) -> Path:
        return self.root / "packages"


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _digest(archive: Any, options: dict[str, Any]) -> str:
    digest = hashlib.sha256()
    described = {"torch": torch.__version__, "python": sys.version, **options}
    digest.update(json.dumps(described, sort_keys=True, default=str).encode())
    while chunk := archive.read(1 << 20):
        digest.update(chunk)
    return digest.hexdigest()


_packages: PackageCache | None = None
_variable_set: str | None = None  # what use() put in TORCHINDUCTOR_CACHE_DIR, to take back


def use(root: Path | None, *, inductor: bool = True) -> None:
    """Keep this process's compiled artifacts under ``root``; None: keep none, and take
    back the Inductor cache variable this set (a run inside a user's process ends).
    ``inductor=False``: packages only, Inductor's caches left where they are."""
    global _packages, _variable_set
    _packages = None if root is None else PackageCache(root)
    if root is None:
        if _variable_set is not None and os.environ.get(INDUCTOR_CACHE_VARIABLE) == _variable_set:
            del os.environ[INDUCTOR_CACHE_VARIABLE]
        _variable_set = None
    elif inductor and INDUCTOR_CACHE_VARIABLE not in os.environ:
        # Read by Inductor at each compile (torch/_inductor/runtime/cache_dir_utils.py).
        _variable_set = os.environ[INDUCTOR_CACHE_VARIABLE] = str(root / "inductor")


@contextlib.contextmanager
def kept_under(root: Path, *, inductor: bool = True) -> Iterator[PackageCache]:
    """:func:`use` ``root`` within the block, and keep none after it, however it ends."""
    use(root, inductor=inductor)
    try:
        cache = packages()
        assert cache is not None  # use() just made it
        yield cache
    finally:
        use(None)


def packages() -> PackageCache | None:
    """The process's package cache, where the run keeps one."""
    return _packages


# What each kind of entry is, by its name's end (a fresh process's result: fresh_kept.py).
KINDS = {
    ".pt": "fresh process's result",
    ".pt2": "package",
    ".onnx": "ONNX model",
    ".pte": "ExecuTorch program",
    ".json": "ExecuTorch program's description",
}


def kind_of(name: str) -> str:
    """What the entry named ``name`` holds, in words."""
    return KINDS.get(Path(name).suffix, "entry")


def take_dropped() -> list[str]:
    """The damaged entries removed since the last call (each told once, by the item
    that found it)."""
    if _packages is None:
        return []
    dropped, _packages.dropped = _packages.dropped, []
    return dropped
