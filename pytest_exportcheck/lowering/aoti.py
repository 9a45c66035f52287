"""``aoti``: the AOTInductor package (``.pt2``) a C++ or Python server loads.

``torch._inductor.aoti_compile_and_package(ep)`` compiles the program ahead of time
into a package, and ``aoti_load_package`` loads it as a callable. Its weights and
buffers live inside the package: a buffer update the package drops shows only in
its outputs over several calls (pytorch/pytorch#165444: a counter buffer that
starts uniform is folded into a constant, so every call sees its first value).
"""

from __future__ import annotations

from pathlib import Path

import torch

from pytest_exportcheck.lowering.compilers import missing_for
from pytest_exportcheck.lowering.target import SAME_RANDOM_NUMBERS, Lowered, raising_at, timed


class AOTInductor:
    name = "aoti"

    def unavailable(self, device: str) -> str | None:
        return missing_for(device, "AOTInductor")

    def lower(self, program: torch.export.ExportedProgram, directory: Path) -> Lowered:
        from torch._inductor import aoti_compile_and_package, aoti_load_package

        path = directory / "program.pt2"
        with raising_at("lower", "torch._inductor.aoti_compile_and_package"):
            _, compiling = timed(
                lambda: aoti_compile_and_package(
                    program, package_path=str(path), inductor_configs=SAME_RANDOM_NUMBERS
                )
            )
        with raising_at("load", "torch._inductor.aoti_load_package"):
            loaded, loading = timed(lambda: aoti_load_package(str(path)))
        return Lowered(
            call=loaded,
            state=None,
            seconds=compiling + loading,
            size_bytes=path.stat().st_size,
            package=path,
        )
