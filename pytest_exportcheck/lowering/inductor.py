"""``inductor``: ``torch.compile(ep.module())``, the program compiled just in time.

``torch.compile`` compiles at the first call, not when it is called: a program
Inductor cannot compile raises there, and the check reports that call's error at
the ``lower`` stage (``Lowered.compiles_at_first_call``). The module's parameters
and buffers stay in the module, so its state is compared after every call.
"""

from __future__ import annotations

from pathlib import Path

import torch

from pytest_exportcheck.lowering.compilers import missing_for
from pytest_exportcheck.lowering.target import SAME_RANDOM_NUMBERS, Lowered, raising_at


class Inductor:
    name = "inductor"

    def unavailable(self, device: str) -> str | None:
        return missing_for(device, "Inductor")

    def lower(self, program: torch.export.ExportedProgram, directory: Path) -> Lowered:
        with raising_at("lower", "ep.module()"):
            module = program.module()
        with raising_at("lower", "torch.compile"):
            compiled = torch.compile(module, backend="inductor", options=dict(SAME_RANDOM_NUMBERS))
        return Lowered(
            call=compiled, state=module, seconds=0.0, size_bytes=None, compiles_at_first_call=True
        )
