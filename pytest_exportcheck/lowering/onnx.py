"""``onnx``: the ONNX model ONNX Runtime serves, from ``torch.onnx.export(ep)``.

The exporter translates the program to ONNX (``onnxscript``), saved as a ``.onnx``
file and run by ONNX Runtime's CPU provider, whose float32 kernels are its own:
compared under the case's tolerance with float64 eager arbitrating, never a
loosened atol. An ONNX model carries no state between calls: a buffer the program
updates is not in it (measured on torch 2.13: the update is dropped, the outputs
are the user's only), so such a case is judged at its first call, and the item
says so (``Lowered.keeps_state``).

Inputs go in by the model's input names, in the order of ``ep``'s user inputs
(the exporter names them after the program's placeholders); outputs come back flat
and are put into ``ep``'s output structure. Needs ``onnx``, ``onnxscript`` and
``onnxruntime``; without them the target is n/a, naming them. The exporter takes
seconds a program: a model exported from the same program by an earlier run, with
the same onnx and onnxscript, is loaded from the run's cache (``artifact_cache.py``).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import torch
from torch.utils import _pytree as pytree

from pytest_exportcheck.lowering import artifact_cache
from pytest_exportcheck.lowering.target import Lowered, raising_at, timed

PACKAGES = ("onnx", "onnxscript", "onnxruntime")


class Onnx:
    name = "onnx"

    def unavailable(self, device: str) -> str | None:
        missing = [name for name in PACKAGES if importlib.util.find_spec(name) is None]
        if missing:
            return f"the onnx target needs {', '.join(missing)} (pip install {' '.join(missing)})"
        if device != "cpu":
            return "ONNX Runtime is run with its CPU provider only"
        return None

    def lower(self, program: torch.export.ExportedProgram, directory: Path) -> Lowered:
        call = _Named(program)  # the program's specs, read before the exporter changes it
        cache = artifact_cache.packages()
        key = None if cache is None else cache.key(program, target=self.name, **_versions())
        cached = None if key is None or cache is None else cache.get(key, ".onnx")
        path, lowering = cached or directory / "model.onnx", 0.0
        if cached is None:
            with raising_at("lower", "torch.onnx.export(ep)"):
                exported, lowering = timed(lambda: torch.onnx.export(program, dynamo=True))
                exported.save(str(path))
            if key is not None and cache is not None:
                path = cache.put(key, path, ".onnx")
        with raising_at("load", "onnxruntime.InferenceSession"):
            import onnxruntime

            call.session, loading = timed(
                lambda: onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
            )
        return Lowered(
            call=call,
            state=None,
            seconds=lowering + loading,
            size_bytes=path.stat().st_size,
            keeps_state=False,
            from_cache=cached is not None,
        )


def _versions() -> dict[str, str]:
    """What else the ONNX model depends on, for its cache key: the exporter's packages."""
    from importlib.metadata import version

    return {name: version(name) for name in ("onnx", "onnxscript")}


class _Named:
    """An ONNX Runtime session called as the program is: tree inputs in, tree outputs out."""

    def __init__(self, program: torch.export.ExportedProgram) -> None:
        self.session: Any = None
        self.in_spec, self.out_spec = program.call_spec.in_spec, program.call_spec.out_spec

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from torch.export._tree_utils import reorder_kwargs

        flat, _ = pytree.tree_flatten((args, reorder_kwargs(kwargs, self.in_spec)))
        tensors = [leaf for leaf in flat if isinstance(leaf, torch.Tensor)]
        names = [model_input.name for model_input in self.session.get_inputs()]
        if len(names) != len(tensors):
            raise RuntimeError(
                f"the ONNX model takes {len(names)} inputs ({', '.join(names)}); the program "
                f"was given {len(tensors)} tensors"
            )
        arrays = [tensor.detach().cpu().numpy() for tensor in tensors]
        feed = dict(zip(names, arrays, strict=True))
        outputs = [torch.from_numpy(value) for value in self.session.run(None, feed)]
        return pytree.tree_unflatten(outputs, self.out_spec)
