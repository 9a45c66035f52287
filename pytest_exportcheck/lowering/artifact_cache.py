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
torch's version, the target and its options (the device is in the program). An
item lowered from the cache says so in its report: its lowering time is a load's.
A run with ``-p no:cacheprovider`` keeps nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from pytest_exportcheck.model.program_files import SerializationError, save_program

CACHE_NAME = "exportcheck-lowering"  # under pytest's cache: config.cache.mkdir(CACHE_NAME)
INDUCTOR_CACHE_VARIABLE = "TORCHINDUCTOR_CACHE_DIR"


class PackageCache:
    """AOTInductor packages by key, written atomically (two xdist workers may compile
    the same program: the last to finish replaces the first's identical file)."""

    def __init__(self, root: Path) -> None:
        self.root = root

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
        path = self._path(key, suffix)
        return path if path.is_file() else None

    def put(self, key: str, package: Path, suffix: str = ".pt2") -> Path:
        path = self._path(key, suffix)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, partial = tempfile.mkstemp(dir=path.parent, suffix=".partial")
        os.close(handle)
        try:
            shutil.copyfile(package, partial)
            os.replace(partial, path)
        finally:
            if os.path.exists(partial):
                os.unlink(partial)
        return path

    def _path(self, key: str, suffix: str) -> Path:
        return self.root / "packages" / f"{key}{suffix}"


def _digest(archive: Any, options: dict[str, Any]) -> str:
    digest = hashlib.sha256()
    described = {"torch": torch.__version__, **options}
    digest.update(json.dumps(described, sort_keys=True, default=str).encode())
    while chunk := archive.read(1 << 20):
        digest.update(chunk)
    return digest.hexdigest()


_packages: PackageCache | None = None
_variable_set: str | None = None  # what use() put in TORCHINDUCTOR_CACHE_DIR, to take back


def use(root: Path | None) -> None:
    """Keep this process's compiled artifacts under ``root``; None: keep none, and take
    back the Inductor cache variable this set (a run inside a user's process ends)."""
    global _packages, _variable_set
    _packages = None if root is None else PackageCache(root)
    if root is None:
        if _variable_set is not None and os.environ.get(INDUCTOR_CACHE_VARIABLE) == _variable_set:
            del os.environ[INDUCTOR_CACHE_VARIABLE]
        _variable_set = None
    elif INDUCTOR_CACHE_VARIABLE not in os.environ:
        # Read by Inductor at each compile (torch/_inductor/runtime/cache_dir_utils.py).
        _variable_set = os.environ[INDUCTOR_CACHE_VARIABLE] = str(root / "inductor")


def packages() -> PackageCache | None:
    """The process's package cache, where the run keeps one."""
    return _packages
