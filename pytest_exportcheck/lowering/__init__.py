"""Lowering targets: what users ship a program as, run and compared like the program.

A target takes the capture's ``ExportedProgram`` and gives something that runs:
``aoti`` (``torch._inductor.aoti_compile_and_package``, then ``aoti_load_package``:
the package a C++ or Python server loads), ``inductor`` (``torch.compile`` of
``ep.module()``), ``executorch`` (the ``.pte`` ExecuTorch's runtime runs) and
``onnx`` (``torch.onnx.export``, run by ONNX Runtime) and ``saved`` (the
``torch.export.save`` file a server loads, loaded in a fresh process too). Each
target is a check of its own, ``lowered-<target>``, named
``lowered[<target>-<capture>-<device>]`` (``items/item_names.py``), opted into by a
case's ``lower:`` key or the run's ``--exportcheck-lower``: lowering compiles C++
and costs seconds to minutes a program. The check (``checks/lowered.py``) compares
the lowered program with eager over the case's steps; a call that raises is a
failure at its stage, ``[lower]``, ``[load]`` or ``[run]``.

One module per target; ``target.py`` holds what they share. May import:
``model/``, ``containment/``, ``spec/`` and torch (lazily: targets import their
backends only when they lower).
"""

from __future__ import annotations

from pytest_exportcheck.lowering.aoti import AOTInductor
from pytest_exportcheck.lowering.executorch import ExecuTorch
from pytest_exportcheck.lowering.inductor import Inductor
from pytest_exportcheck.lowering.onnx import Onnx
from pytest_exportcheck.lowering.saved import Saved
from pytest_exportcheck.lowering.target import Target
from pytest_exportcheck.spec.case import LOWERED_PREFIX, lowered_check

# One per name in spec/case.py's LOWERING_TARGETS (what the schema's `lower:` takes).
TARGETS: dict[str, Target] = {
    "inductor": Inductor(),
    "aoti": AOTInductor(),
    "executorch": ExecuTorch(),
    "onnx": Onnx(),
    "saved": Saved(),
}

__all__ = ["TARGETS", "lowered_check", "target_of"]


def target_of(check: str) -> Target | None:
    """The target a ``lowered-*`` check lowers to; None for any other check."""
    if not check.startswith(LOWERED_PREFIX):
        return None
    return TARGETS.get(check.removeprefix(LOWERED_PREFIX))
