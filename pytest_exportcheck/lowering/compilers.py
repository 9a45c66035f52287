"""Whether Inductor can build code for a device here: a C++ compiler for the CPU, Triton
for CUDA. Found without importing them (a missing one is an n/a, never an error)."""

from __future__ import annotations

import importlib.util
import os
import shutil


def missing_for(device: str, who: str) -> str | None:
    """Why ``who`` (a target's name) cannot compile for ``device`` here, or None."""
    if device == "cpu":
        compiler = os.environ.get("CXX") or "g++"
        if shutil.which(compiler) is None and shutil.which("clang++") is None:
            return f"{who} compiles C++ for the CPU and finds no compiler ({compiler}, clang++)"
        return None
    if device.startswith("cuda"):
        if importlib.util.find_spec("triton") is None:
            return f"{who} compiles Triton kernels for CUDA and triton is not installed"
        return None
    return f"{who} is not run on {device.split(':')[0]} by pytest-exportcheck yet"
