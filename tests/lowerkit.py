"""What the lowering tests share: torch's lowering calls put back after each test, a
plain MLP case, and conftests that replace AOTInductor's compile."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

OFF = ["-p", "no:cacheprovider"]
INDUCTOR_CACHE = "TORCHINDUCTOR_CACHE_DIR"


@pytest.fixture(autouse=True)
def torch_left_as_found(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The test projects' conftests replace torch's lowering calls, and a run that lowers
    points Inductor's cache at its project: all of it is put back after each test."""
    import torch
    import torch._inductor

    from pytest_exportcheck.lowering import artifact_cache

    for name in ("aoti_compile_and_package", "aoti_load_package"):
        monkeypatch.setattr(torch._inductor, name, getattr(torch._inductor, name))
    monkeypatch.setattr(torch, "compile", torch.compile)
    monkeypatch.setattr(torch.export, "load", torch.export.load)
    monkeypatch.setattr(torch.onnx, "export", torch.onnx.export)
    cache_dir = os.environ.pop(INDUCTOR_CACHE, None)  # as a user's process starts
    yield
    artifact_cache.use(None)
    if cache_dir is None:
        os.environ.pop(INDUCTOR_CACHE, None)
    else:
        os.environ[INDUCTOR_CACHE] = cache_dir


MLP = """
cases:
  mlp:
    description: a plain MLP
    model: {target: models.py:Mlp}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [parity]
    lower: [aoti]
"""

# The package "compiled" is a file of garbage; aoti_load_package is replaced where a
# test says what the loaded program does.
FAKE_COMPILE = """
import torch._inductor

def fake_compile(program, package_path=None, **kwargs):
    with open(package_path, "wb") as package:
        package.write(b"not a package")
    return package_path

torch._inductor.aoti_compile_and_package = fake_compile
"""

# AOTInductor refuses the program, as it would an operator it has no kernel for.
REFUSE_COMPILE = """
import torch._inductor

def refuse(program, **kwargs):
    raise RuntimeError("unsupported operator aten::frobnicate")

torch._inductor.aoti_compile_and_package = refuse
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--exportcheck", *OFF, *args)


# The package "loads" as the case's MLP with its seed, whatever the file holds.
LOADS_AS_MLP = """
import sys, torch
sys.path.insert(0, "cases")
from models import Mlp

def fake_load(path, **kwargs):
    torch.manual_seed(0)
    return Mlp()

torch._inductor.aoti_load_package = fake_load
"""

COUNTER = """
cases:
  counter:
    description: a buffer counts the calls, starting at zero
    model: {target: models.py:Counter}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [mutation]
    lower: [aoti, inductor]
"""


def counting_conftest(module: str, name: str, log: str) -> str:
    """A conftest that writes a line to ``log`` at each call of ``module.name``: each
    in-process run executes it again, so it wraps the original, not the last wrapper."""
    return f"""
import {module}

original = getattr({module}.{name}, "counting", {module}.{name})

def counted(*args, **kwargs):
    with open("{log}", "a") as log:
        log.write("called\\n")
    return original(*args, **kwargs)

counted.counting = original
{module}.{name} = counted
"""
