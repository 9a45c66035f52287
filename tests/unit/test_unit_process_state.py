"""process_state: what a model changed is put back and named; what torch itself left
behind is put back without blaming anyone."""

from __future__ import annotations

import torch
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
