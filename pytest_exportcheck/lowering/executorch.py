"""``executorch``: the ``.pte`` program ExecuTorch's runtime runs on a phone or a board.

``executorch.exir.to_edge(ep).to_executorch()`` lowers the program to the Edge
dialect and then to ExecuTorch's format, run here by its portable kernels through
its Python bindings, the reference every delegate (XNNPACK, Core ML, ...) is
tested against. Its weights and mutable buffers live inside the program: a buffer
update it drops (pytorch/executorch#7515: a trailing ``buffer.copy_(x)`` removed
on the way down) shows only in its outputs over several calls.

The runtime takes the program's inputs flat, in the order of ``ep``'s input spec,
and gives its outputs flat: they are put back into ``ep``'s output structure, so
the check compares the same tree as eager's.

Measured here: executorch 1.5.1 from the package registry installs beside torch
2.13.0+cpu without replacing it, and lowers a small model in about a second (no
C++ compile: the kernels are prebuilt); a program lowered from the same program by
an earlier run is loaded from the run's cache (``artifact_cache.py``), with which
user inputs it mutates beside it. Not installed: n/a, naming the package.
CPU only: its GPU backends are not part of the Python bindings.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import torch
from torch.utils import _pytree as pytree

from pytest_exportcheck.lowering import artifact_cache
from pytest_exportcheck.lowering.target import Lowered, raising_at, timed


class ExecuTorch:
    name = "executorch"

    def unavailable(self, device: str) -> str | None:
        if importlib.util.find_spec("executorch") is None:
            return "ExecuTorch is not installed (pip install executorch)"
        if device != "cpu":
            return "ExecuTorch's portable runtime runs on the CPU only"
        return None

    def lower(self, program: torch.export.ExportedProgram, directory: Path) -> Lowered:
        cache = artifact_cache.packages()
        key = None if cache is None else cache.key(program, target=self.name, **_versions())
        cached = None if key is None or cache is None else cache.get(key, ".pte")
        kept = None if key is None or cache is None else cache.get(key, ".json")
        path, lowering = directory / "program.pte", 0.0
        if cached is not None and kept is not None:
            path, mutated = cached, json.loads(kept.read_text())["mutated_inputs"]
        else:
            with raising_at("lower", "executorch.exir.to_edge(ep).to_executorch()"):
                from executorch.exir import to_edge

                built, lowering = timed(lambda: to_edge(program).to_executorch())
            mutated = mutated_inputs(built.exported_program())
            path.write_bytes(built.buffer)
            if key is not None and cache is not None:
                described = directory / "program.json"
                described.write_text(json.dumps({"mutated_inputs": mutated}))
                cache.put(key, described, ".json")  # first: a .pte is read only beside it
                path = cache.put(key, path, ".pte")
        call = _Flat(program, mutated)
        with raising_at("load", "executorch's _load_for_executorch"):
            from executorch.extension.pybindings.portable_lib import _load_for_executorch

            call.loaded, loading = timed(lambda: _load_for_executorch(str(path)))
        return Lowered(
            call=call,
            state=None,
            seconds=lowering + loading,
            size_bytes=path.stat().st_size,
            from_cache=cached is not None and kept is not None,
        )


def _versions() -> dict[str, str]:
    """What else the program depends on, for its cache key: ExecuTorch's version."""
    from importlib.metadata import version

    return {"executorch": version("executorch")}


def mutated_inputs(lowered: Any) -> list[int]:
    """Which user inputs the lowered program mutates, by index, in the order their new
    values come out: torch 2.13's export may keep an input's mutation inside the
    graph, which the Edge dialect makes an output."""
    from torch.export.graph_signature import InputKind, OutputKind

    signature = lowered.graph_signature
    user_inputs = [
        spec.arg.name for spec in signature.input_specs if spec.kind == InputKind.USER_INPUT
    ]
    return [
        user_inputs.index(spec.target)
        for spec in signature.output_specs
        if spec.kind == OutputKind.USER_INPUT_MUTATION
    ]


class _Flat:
    """ExecuTorch's method called as the program is: tree inputs in, tree outputs out.

    Its outputs are the graph's less the buffer updates it applies inside: first the
    new values of the user inputs the program mutates, then the user outputs. The
    first are written back into the inputs, as ``ep.module()`` does.
    """

    def __init__(self, program: Any, mutated: list[int]) -> None:
        self.loaded: Any = None
        self.in_spec, self.out_spec = program.call_spec.in_spec, program.call_spec.out_spec
        self.mutated = mutated  # mutated_inputs() of the lowered program

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from torch.export._tree_utils import reorder_kwargs

        flat, _ = pytree.tree_flatten((args, reorder_kwargs(kwargs, self.in_spec)))
        outputs = list(self.loaded.forward(tuple(flat)))
        with torch.no_grad():
            for index, value in zip(self.mutated, outputs, strict=False):
                flat[index].copy_(value)
        return pytree.tree_unflatten(outputs[len(self.mutated) :], self.out_spec)
