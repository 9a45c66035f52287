"""``aoti``: the AOTInductor package (``.pt2``) a C++ or Python server loads.

``torch._inductor.aoti_compile_and_package(ep)`` compiles the program ahead of time
into a package, and ``aoti_load_package`` loads it as a callable. Its weights and
buffers live inside the package: a buffer update the package drops shows only in
its outputs over several calls (pytorch/pytorch#165444: a counter buffer that
starts uniform is folded into a constant, so every call sees its first value).
A package compiled from the same program in an earlier run is loaded from the
run's cache instead (``artifact_cache.py``).
"""

from __future__ import annotations

import platform
from pathlib import Path

import torch

from pytest_exportcheck.lowering import artifact_cache
from pytest_exportcheck.lowering.compilers import missing_for
from pytest_exportcheck.lowering.target import SAME_RANDOM_NUMBERS, Lowered, raising_at, timed

# What else the package depends on, for its cache key: the compile options, and
# the machine the C++ was compiled for.
OPTIONS = {"inductor_configs": dict(SAME_RANDOM_NUMBERS), "machine": platform.machine()}


class AOTInductor:
    name = "aoti"

    def unavailable(self, device: str) -> str | None:
        return missing_for(device, "AOTInductor")

    def lower(self, program: torch.export.ExportedProgram, directory: Path) -> Lowered:
        from torch._inductor import aoti_compile_and_package, aoti_load_package

        cache = artifact_cache.packages()
        key = None if cache is None else cache.key(program, target=self.name, **OPTIONS)
        cached = None if key is None or cache is None else cache.get(key)
        path, compiling = cached or directory / "program.pt2", 0.0
        if cached is None:
            with raising_at("lower", "torch._inductor.aoti_compile_and_package"):
                _, compiling = timed(
                    lambda: aoti_compile_and_package(
                        program, package_path=str(path), inductor_configs=dict(SAME_RANDOM_NUMBERS)
                    )
                )
            if key is not None and cache is not None:
                path = cache.put(key, path)
        with raising_at("load", "torch._inductor.aoti_load_package"):
            loaded, loading = timed(lambda: aoti_load_package(str(path)))
        return Lowered(
            call=loaded,
            state=None,
            seconds=compiling + loading,
            size_bytes=path.stat().st_size,
            package=path,
            from_cache=cached is not None,
            kept=key is not None and cache is not None,
        )
