"""What a fresh process gave, kept between runs beside the package it loaded.

A package in the run's cache (``artifact_cache.py``) is loaded in a fresh process
for every item that lowers to it; what that process gave for the same inputs is
kept, so a later run need not start one again. A kept result stands for a run that
did not happen, so its key covers everything that run's result depends on that
this process can name beforehand: the package's bytes (its name carries their
digest), the inputs' bytes, the steps, the seed, the ``load_imports`` names and the
text of each file named, torch's and Python's versions, the thread count, and where
a module name is looked for (the working directory, ``PYTHONPATH``).

What the case's modules import is known only after the process ran: the result
keeps every file the process imported after torch (``fresh_child.py``), with each
file's digest (a ``.py`` file's text; another, an extension module, by size and
modification time), and a kept result is read only while every one of them is as it
was. So a ``load_imports`` module edited since, or a file it imports from the
project, or a library upgraded under it, makes the fresh process run again, as
``--cache-clear`` would. Only results with outputs are kept: a failure is run again
each time (what made it fail may be a module that was not there to fingerprint).

A kept result that cannot be read back (truncated, not one the child writes) is
removed and run again, and the item says so once (``artifact_cache.take_dropped``).
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

from pytest_exportcheck.lowering.artifact_cache import PackageCache
from pytest_exportcheck.lowering.fresh_child import FORMAT, well_formed

SUFFIX = ".pt"


def kept_key(package: Path, inputs_file: Path, how: list[str]) -> str:
    """The key of what a fresh process gives for ``package`` (a cache entry: its name
    carries its bytes' digest) on ``inputs_file``, run as ``how`` says."""
    digest = hashlib.sha256(inputs_file.read_bytes())
    where = [os.getcwd(), os.environ.get("PYTHONPATH", "")]
    described = [FORMAT, *how, *where, torch.__version__, sys.version]
    digest.update("\0".join(described).encode())
    return f"{package.stem}.fresh-{digest.hexdigest()[:32]}"


def read_kept(cache: PackageCache, key: str) -> list[Any] | None:
    """The outputs kept under ``key``, where they are whole and every file they depend
    on is as it was; None (a miss) otherwise, the entry removed."""
    entry = cache.get(key, SUFFIX)
    if entry is None:
        return None
    try:
        result = torch.load(entry, weights_only=False)
    except Exception:
        result = None
    files = result.get("files") if isinstance(result, dict) else None
    whole = (
        isinstance(files, dict)
        and all(isinstance(f, str) and isinstance(d, str) for f, d in files.items())
        and "outputs" in result
        and well_formed({"outputs": result["outputs"]})
    )
    if not whole:
        cache.drop(entry)  # damaged: said once
        return None
    if fingerprints(list(files)) != files:
        cache.drop(entry, damaged=False)  # stale: a file it depends on changed
        return None
    return result["outputs"]


def keep(cache: PackageCache, key: str, outputs: list[Any], files: list[str]) -> None:
    """Keep ``outputs`` under ``key``, with the digests of the ``files`` they depend on."""
    handle, partial = tempfile.mkstemp(suffix=SUFFIX)
    os.close(handle)
    try:
        torch.save({"outputs": outputs, "files": fingerprints(files)}, partial)
        cache.put(key, Path(partial), SUFFIX)
    finally:
        os.unlink(partial)


def fingerprints(files: list[str]) -> dict[str, str]:
    """Each file's digest: a ``.py`` file's text, another's size and modification time
    (an extension module can be hundreds of MB); "missing" where it is gone."""
    found = {}
    for name in files:
        path = Path(name)
        try:
            if path.suffix == ".py":
                found[name] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                stat = path.stat()
                found[name] = f"{stat.st_size} {stat.st_mtime_ns}"
        except OSError:
            found[name] = "missing"
    return found
