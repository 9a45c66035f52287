"""What every lowering target shares: the lowered program, and failures by stage."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

import torch

from pytest_exportcheck.containment.crashes import doing
from pytest_exportcheck.containment.failures import CheckFailure, ExportCheckError, exception_text
from pytest_exportcheck.model.program_files import SerializationError

# Inductor draws random numbers with a generator of its own (philox), so a forward
# that draws (dropout in training mode) gives other numbers than eager for the same
# seed, by design. Its random ops fall back to aten's kernels here, so that what is
# compared is the program, not the generator (torchvision's squeezenet1_1 in
# training mode: every element apart without it).
# Read-only, and each compile is given a copy: aoti_compile_and_package adds its own
# settings to the dict it is given ("aot_inductor.package": True, torch 2.13), which
# changed the package cache's key after a process's first compile and handed
# torch.compile AOTInductor's settings.
SAME_RANDOM_NUMBERS: Mapping[str, object] = MappingProxyType({"fallback_random": True})
ANSI_COLOR = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class Lowered:
    """A lowered program, ready to call.

    ``state`` is the module whose parameters and buffers the lowered program
    reads and writes, where the target exposes them (``torch.compile`` of a
    module); None where they live inside it (an AOTInductor package), so only
    its outputs over several calls can show a buffer update it dropped.
    """

    call: Callable[..., Any]
    state: torch.nn.Module | None
    seconds: float  # lowering, load included (a just-in-time compile: its first call's)
    size_bytes: int | None  # the artifact users ship, where there is one
    # torch.compile compiles at the first call: an error there is the lowering's.
    compiles_at_first_call: bool = False
    # An artifact a fresh interpreter loads (lowering/fresh_process.py), where there is one.
    package: Path | None = None
    # How the fresh interpreter loads it: "aoti" (aoti_load_package) or "saved"
    # (torch.export.load(...).module()).
    loader: str = "aoti"
    # Compiled in an earlier run from the same program (artifact_cache.py): only loaded now.
    from_cache: bool = False
    # The package lives in the run's cache (artifact_cache.py), this run's or an earlier's.
    kept: bool = False
    # False where the artifact carries no state between calls (an ONNX model): a case
    # whose forward changes state is then judged at its first call only, and says so.
    keeps_state: bool = True


class Target(Protocol):
    name: str

    def unavailable(self, device: str) -> str | None:
        """Why this target cannot run here (n/a, never a pass), or None."""
        ...

    def lower(self, program: torch.export.ExportedProgram, directory: Path) -> Lowered:
        """Lower ``program`` (a private copy: a target may change it) into ``directory``."""
        ...


class LoweringError(CheckFailure):
    """A target's call raised: ``stage`` is ``lower``, ``load`` or ``run``.

    A CheckFailure, so an xfail of the check (``stage: lower``) can expect it.
    """

    def __init__(self, stage: str, message: str) -> None:
        ExportCheckError.__init__(self, message)
        self.stage = stage
        self.findings = [message]

    def as_dependency(self, first_reported_by: str) -> ExportCheckError:
        pointer = LoweringError(
            self.stage, f"{self.message.splitlines()[0]}\n(full report on {first_reported_by})"
        )
        pointer._full_text = self.match_text()
        return pointer


@contextmanager
def raising_at(stage: str, what: str) -> Iterator[None]:
    """An exception in the block is a :class:`LoweringError` at ``stage``, saying ``what``
    raised and torch's first lines (the rest is on the exception's chain), and for a
    save or load what torch logged meanwhile (``program_files.py``). The live
    progress line shows ``stage`` meanwhile: a compile can take minutes."""
    try:
        with doing(stage):
            yield
    except Exception as exc:
        # A save or load that raised: torch's error, and what torch logged meanwhile.
        told = exc.logged if isinstance(exc, SerializationError) else ""
        error = exc.__cause__ if told and isinstance(exc.__cause__, Exception) else exc
        first = _plain(exception_text(error)).splitlines()
        shown = "\n".join(first[:6]) + ("\n..." if len(first) > 6 else "")
        root = _root_cause(error)
        if root is not error:  # ONNX's ConversionError: its own text is advice, the cause is below
            cause = (_plain(exception_text(root)).splitlines() or [""])[0]
            shown += f"\ncaused by {type(root).__name__}: {cause}"
        message = f"{what} raised {type(error).__name__}: {shown}{told}"
        raise LoweringError(stage, message) from exc


def _root_cause(exc: BaseException) -> BaseException:
    seen = {id(exc)}
    while exc.__cause__ is not None and id(exc.__cause__) not in seen:
        exc = exc.__cause__
        seen.add(id(exc))
    return exc


def _plain(text: str) -> str:
    """``text`` without terminal colors (torch.onnx colors its messages)."""
    return ANSI_COLOR.sub("", text).strip()


def timed(function: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    value = function()
    return value, time.perf_counter() - started
