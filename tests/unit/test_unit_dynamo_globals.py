"""What Dynamo keeps after a strict export, and that dropping the capture lets it go."""

from __future__ import annotations

import gc
import sys
import weakref

import torch
from torch import nn

from pytest_exportcheck.capture.dynamo_globals import noting, remove, reset_dynamo


def _exported_weight() -> tuple[weakref.ref[torch.Tensor], list[tuple[str, str]]]:
    model = nn.Linear(8, 8)
    with noting() as added:
        torch.export.export(model, (torch.randn(2, 8),), strict=True)
    return weakref.ref(model.weight), added


def test_a_strict_exports_weights_outlive_it_until_its_graph_globals_go() -> None:
    weight, added = _exported_weight()
    gc.collect()
    assert weight() is not None, "nothing of Dynamo's kept the weights: nothing to let go"
    assert added and all(name.startswith("__compiled_fn") for _, name in added)
    reset_dynamo()
    gc.collect()
    if weight() is not None:  # torch 2.13: no cache holds the global, so no reset evicts it
        remove(added)
        gc.collect()
        # The name stays, bound to None: a cleanup Dynamo registered deletes it later
        # (it raised KeyError in a bundled case when the name had gone first).
        module_name, name = added[0]
        assert vars(sys.modules[module_name])[name] is None
    assert weight() is None  # (torch 2.9: the reset evicted it, the global with it)


def test_a_capture_without_dynamo_adds_no_globals() -> None:
    with noting() as added:
        torch.export.export(nn.Linear(8, 8), (torch.randn(2, 8),), strict=False)
    assert added == []
