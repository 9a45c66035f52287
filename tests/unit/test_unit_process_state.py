"""process_state: what a model changed is put back and named; what torch itself left
behind is put back without blaming anyone."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import torch
from torch._dynamo import eval_frame
from torch.nn.modules import module

from pytest_exportcheck.containment.process_state import restore_changed, snapshot


def test_a_global_hook_a_model_left_is_removed_and_named() -> None:
    before = snapshot()

    def scale(mod, args, output):
        return output

    module.register_module_forward_hook(scale)
    changed = restore_changed(before)

    assert changed == [
        "torch.nn.modules.module._global_forward_hooks: 0 hook(s) -> 1 hook(s) "
        "(test_a_global_hook_a_model_left_is_removed_and_named.<locals>.scale)"
    ]
    assert not module._global_forward_hooks


def test_a_hook_torch_left_behind_is_removed_without_blame() -> None:
    # As torch 2.6's non-strict export leaves its buffer-assignment hook when it raises.
    before = snapshot()

    def torch_hook(mod, name, buffer):
        return buffer

    torch_hook.__module__ = "torch._functorch._aot_autograd.utils"
    module.register_module_buffer_registration_hook(torch_hook)

    assert restore_changed(before) == []
    assert not module._global_buffer_registration_hooks


def test_the_default_dtype_is_put_back() -> None:
    before = snapshot()
    torch.set_default_dtype(torch.float64)

    assert restore_changed(before) == ["torch.get_default_dtype(): torch.float32 -> torch.float64"]
    assert torch.get_default_dtype() == torch.float32


def _dynamo_not_imported_yet(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The process as an item finds it before anything imported Dynamo: ``torch._dynamo``
    out of ``sys.modules`` (put back after the test)."""
    dynamo = sys.modules["torch._dynamo"]
    monkeypatch.delitem(sys.modules, "torch._dynamo")
    return dynamo


def test_a_snapshot_imports_no_dynamo() -> None:
    # An item that ends before its capture (a model failing in eager) never needs Dynamo,
    # ~1.2 s of CPU to import: read in a process that has not imported it.
    code = (
        "import sys, torch\n"
        "from pytest_exportcheck.containment.process_state import restore_changed, snapshot\n"
        "before = snapshot()\n"
        "assert restore_changed(before) == []\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert (done.returncode, done.stdout) == (0, "False\n"), done.stderr


def test_dynamo_imported_by_the_item_is_torchs_doing(monkeypatch: pytest.MonkeyPatch) -> None:
    dynamo = _dynamo_not_imported_yet(monkeypatch)
    before = snapshot()
    monkeypatch.setitem(sys.modules, "torch._dynamo", dynamo)  # as a capture imports it
    assert restore_changed(before) == []
    assert dynamo.export is eval_frame.export


def test_an_export_replaced_where_dynamo_was_not_imported_is_named_and_put_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dynamo = _dynamo_not_imported_yet(monkeypatch)
    before = snapshot()
    monkeypatch.setitem(sys.modules, "torch._dynamo", dynamo)

    def replaced(*args: Any, **kwargs: Any) -> None:
        return None

    monkeypatch.setattr(dynamo, "export", replaced)
    assert restore_changed(before) == [
        "torch._dynamo.export: (torch._dynamo not imported yet) -> "
        f"{__name__}.test_an_export_replaced_where_dynamo_was_not_imported_is_named_and_put_back"
        ".<locals>.replaced"
    ]
    assert dynamo.export is eval_frame.export
