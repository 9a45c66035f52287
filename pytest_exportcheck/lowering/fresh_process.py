"""A lowered artifact loaded and run in a fresh interpreter, as a server loads it.

The process that lowered a program has imported the model's code, registered its
pytree nodes and custom ops, and holds torch's caches: an artifact that loads there
may not load anywhere else (huggingface/transformers#27871: an output type
registered only in the saving process). So the artifact is also loaded by a new
``python`` that imports torch and nothing of the case, and called on the case's
inputs over the same steps; its outputs come back through a file for the check to
compare with eager's.

The child is given the inputs through ``torch.save`` (loaded with
``weights_only=False``: they are this run's own inputs) and writes
``{"outputs": [...]}`` or ``{"error": "<stage>: <message>"}``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

# Run by the child: only torch, the artifact and the inputs.
CHILD = """
import random, sys, traceback
import torch

package, inputs_file, result_file, steps, seed = sys.argv[1:6]

def fail(stage):
    error = "".join(traceback.format_exception_only(*sys.exc_info()[:2]))
    torch.save({"error": stage + ": " + error}, result_file)
    sys.exit(0)

try:
    loaded = torch._inductor.aoti_load_package(package)
except Exception:
    fail("load")
outputs = []
for _ in range(int(steps)):
    args, kwargs = torch.load(inputs_file, weights_only=False)  # fresh copies each call
    random.seed(int(seed))
    torch.manual_seed(int(seed))
    try:
        with torch.no_grad():
            outputs.append(loaded(*args, **kwargs))
    except Exception:
        fail("run")
torch.save({"outputs": outputs}, result_file)
"""

# A fresh interpreter imports torch (~2-5 s here) before it loads anything.
CHILD_SECONDS = 300


@dataclass
class FreshRun:
    """What the fresh process gave: each step's outputs, or the stage that raised and why."""

    outputs: list[Any] | None
    stage: str | None = None
    error: str | None = None
    from_cache: bool = False  # what an earlier run's fresh process gave for the same package


def run_in_fresh_process(
    package: Path,
    inputs: tuple[tuple[Any, ...], dict[str, Any]],
    *,
    steps: int,
    seed: int,
    directory: Path,
    kept: bool = False,
) -> FreshRun:
    """Load ``package`` in a new ``python``; the files it exchanges go in ``directory``
    (the item's own: a cached package is shared between workers).

    ``kept``: the package lives in the run's cache (``artifact_cache.py``), so what the
    fresh process gave is kept beside it, under the digest of the inputs, steps and
    seed, and a later run with the same package and inputs reads it instead of
    starting a Python again (``FreshRun.from_cache`` says so).
    """
    inputs_file, result_file = directory / "inputs.pt", directory / "fresh-result.pt"
    torch.save(inputs, inputs_file)
    kept_file = _kept_result(package, inputs_file, steps, seed) if kept else None
    if kept_file is not None and kept_file.is_file():
        return _read(kept_file, from_cache=True)
    command = [sys.executable, "-c", CHILD, str(package), str(inputs_file), str(result_file)]
    command += [str(steps), str(seed)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=CHILD_SECONDS)
    except subprocess.TimeoutExpired:
        return FreshRun(None, "run", f"no result after {CHILD_SECONDS} s")
    if not result_file.exists():
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return FreshRun(None, "load", f"the process ended without a result: {last}")
    if kept_file is not None:
        partial = kept_file.with_name(f"{kept_file.name}.{os.getpid()}.partial")
        shutil.copyfile(result_file, partial)
        os.replace(partial, kept_file)  # atomic: another worker may read it
    return _read(result_file, from_cache=False)


def _kept_result(package: Path, inputs_file: Path, steps: int, seed: int) -> Path:
    digest = hashlib.sha256(inputs_file.read_bytes())
    digest.update(f"{steps} {seed} {torch.__version__}".encode())
    return package.with_name(f"{package.stem}.fresh-{digest.hexdigest()[:32]}.pt")


def _read(result_file: Path, *, from_cache: bool) -> FreshRun:
    result = torch.load(result_file, weights_only=False)
    if "error" in result:
        stage, _, error = result["error"].partition(": ")
        return FreshRun(None, stage, error.strip(), from_cache=from_cache)
    return FreshRun(result["outputs"], from_cache=from_cache)
