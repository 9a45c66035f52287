"""``run_decompositions()``: the functional dialect, with the mutation records.

Shared by a capture's own decomposed program (``export.py``) and the ``decompose``
step of a chain (``chains.py``).
"""

from __future__ import annotations

import torch

from pytest_exportcheck.capture.cia_overrides import replaying_cia_overrides
from pytest_exportcheck.capture.operator_table import reusing_cia_ops
from pytest_exportcheck.capture.record import DecompositionError
from pytest_exportcheck.containment.failures import describe_exception
from pytest_exportcheck.model.isolation import quiet_torch_internals
from pytest_exportcheck.model.nesting import program_nesting, too_deep


def decomposed(program: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """``program.run_decompositions()`` (it reads the program's tensors and writes none).

    What torch derives alike for every program is derived once per process: the
    table of CompositeImplicitAutograd ops (``operator_table.py``) and the kernels
    it overrides them with (``cia_overrides.py``).
    """
    try:
        with quiet_torch_internals(), reusing_cia_ops(), replaying_cia_overrides():
            return program.run_decompositions()
    except RecursionError as exc:
        raise DecompositionError(
            too_deep("run_decompositions()", program_nesting(program))
        ) from exc
    except Exception as exc:
        raise DecompositionError(
            describe_exception(exc, context="run_decompositions() raised")
        ) from exc
