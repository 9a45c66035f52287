"""A deep copy of the model shares nothing with it, or what it shares is named."""

import pytest
import torch

from pytest_exportcheck.model.independence import shared_with_copy
from pytest_exportcheck.model.isolation import private_copy


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.jit.script(torch.nn.Linear(3, 3)),
        lambda: torch.fx.symbolic_trace(torch.nn.Sequential(torch.nn.Linear(3, 3))),
        lambda: torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(3, 3)),
        lambda: torch.nn.Linear(3, 3, device="meta"),
        lambda: torch.nn.LSTM(3, 3),
    ],
    ids=["scripted", "graph module", "parametrized", "meta", "lstm"],
)
def test_torchs_own_deep_copies_share_nothing(make):
    model = make()
    assert shared_with_copy(model, private_copy(model)) is None


class SharesBuffer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(3))

    def __deepcopy__(self, memo):
        copied = SharesBuffer()
        copied.count = self.count.view(3)  # a new tensor over the model's memory
        return copied


def test_a_deep_copy_over_the_models_memory_is_named():
    model = SharesBuffer()
    assert shared_with_copy(model, private_copy(model)) == (
        "copy.deepcopy(model)'s `count` shares its memory with the model's `count` "
        "(SharesBuffer.__deepcopy__)"
    )
