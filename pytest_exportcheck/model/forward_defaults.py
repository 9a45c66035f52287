"""Tensors a model's ``forward`` takes by default: lifted as constants, left behind by ``.to()``."""

from __future__ import annotations

import inspect

import torch

DEFAULT_PREFIX = "default:"


def forward_defaults(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Tensors the root's forward takes by default, as ``default:<parameter>``.

    ``def forward(self, x, y=torch.randn(2, 3))``: a call without ``y`` reads
    that one tensor, and export lifts it as a constant. Non-strict export names
    it ``lifted_tensor_0``, strict export after its Dynamo source
    (``dict_type_L__self______dict_____forward_____defaults___0``), Dynamo's
    graph capture feeds it through ``L_y_``: the adapters recognise it by
    identity and spell it ``default:y`` on every path.
    """
    try:
        parameters = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):  # a builtin or C-level forward: no defaults to read
        return {}
    return {
        DEFAULT_PREFIX + name: parameter.default
        for name, parameter in parameters.items()
        if isinstance(parameter.default, torch.Tensor)
    }
