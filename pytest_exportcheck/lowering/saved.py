"""``saved``: the program as ``torch.export.save`` writes it, loaded by a server.

Not a compile: the ``.pt2`` file a serving process reads with
``torch.export.load(path).module()``. Parity already saves and loads each program
in the process that made it; this target loads the file where a server does, in a
fresh interpreter (``fresh_process.py``), which has not imported the model's code:
an output type registered only in the saving process, or a custom op its library
defines, makes the file fail to load there (huggingface/transformers#27871). In
this process the loaded module's parameters and buffers are its own, so its
state is compared after every call. Saved and loaded through ``program_files.py``:
a failure quotes what torch logged meanwhile.
"""

from __future__ import annotations

from pathlib import Path

import torch

from pytest_exportcheck.lowering import artifact_cache
from pytest_exportcheck.lowering.target import Lowered, raising_at, timed
from pytest_exportcheck.model.program_files import load_program, save_program


class Saved:
    name = "saved"

    def unavailable(self, device: str) -> str | None:
        return None  # torch itself saves and loads, on any device

    def lower(self, program: torch.export.ExportedProgram, directory: Path) -> Lowered:
        path = directory / "program.pt2"
        with raising_at("lower", "torch.export.save"):
            _, saving = timed(lambda: save_program(program, path))
        # Kept in the run's cache under its bytes' digest, so that what a fresh process
        # gave for it is kept beside it and a later run need not start one again.
        cache = artifact_cache.packages()
        if cache is not None:
            key = cache.key_of_saved(path, target=self.name)
            path = cache.get(key) or cache.put(key, path)
        with raising_at("load", "torch.export.load(path).module()"):
            module, loading = timed(lambda: load_program(path).module())
        return Lowered(
            call=module,
            state=module,
            seconds=saving + loading,
            size_bytes=path.stat().st_size,
            package=path,
            loader="saved",
            kept=cache is not None,
        )
