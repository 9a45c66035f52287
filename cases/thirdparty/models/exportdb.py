"""Inputs for ExportDB examples (``torch._export.db.examples``), which ship with torch.

Each example module defines its model class and, at module level, ``example_args``
(and sometimes ``example_kwargs``): the inputs ExportDB exports it with. Those
tensors are drawn with ``torch.randn`` when the module is first imported, so their
values depend on whatever the RNG state was then. ``example_inputs`` keeps the
example's *structure* (tuples, lists, dicts, shapes, dtypes, non-tensor values)
and redraws every floating-point tensor from the case's seed (the plugin seeds
before it calls an input factory), so a run is reproducible. Integer and bool
tensors (``torch.tensor(4)``, ``torch.tensor(True)``) are values the example relies
on (a slice bound, a predicate) and are kept, cloned.
"""

from __future__ import annotations

import importlib
from typing import Any

import torch


def example_inputs(module: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``(args, kwargs)`` for ``torch._export.db.examples.<module>``, floats reseeded."""
    mod = importlib.import_module(f"torch._export.db.examples.{module}")
    args = getattr(mod, "example_args", ())
    kwargs = getattr(mod, "example_kwargs", {})
    return tuple(_redraw(a) for a in args), {k: _redraw(v) for k, v in kwargs.items()}


def _redraw(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        if value.dtype.is_floating_point:
            return torch.randn(value.shape, dtype=value.dtype)
        return value.clone()
    if isinstance(value, tuple):
        return tuple(_redraw(v) for v in value)
    if isinstance(value, list):
        return [_redraw(v) for v in value]
    if isinstance(value, dict):
        return {k: _redraw(v) for k, v in value.items()}
    return value
