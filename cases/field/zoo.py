"""Model factories of the field corpus: torchvision and timm models at random init.

Nothing is downloaded: torchvision models are built with ``weights=None`` (and the
case passes ``weights_backbone: null`` where a builder would otherwise fetch ImageNet
backbone weights), timm models with ``pretrained=False``. Weights come from each
library's own initializer under the case's seed.

torchvision 0.28.0 does not import on torch 2.13.0+cpu by itself (its operators are
a CUDA build): ``torchvision_cpu.py``, next to this file, makes it import. timm
imports torchvision too, so both factories go through it. Both libraries are imported
inside the factories, so this file imports without them (the cases say
``requires:`` and skip before any factory runs).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

_SHIM_NAME = "exportcheck_field_torchvision_cpu"


def _torchvision() -> ModuleType:
    shim = sys.modules.get(_SHIM_NAME)
    if shim is None:
        path = Path(__file__).with_name("torchvision_cpu.py")
        spec = importlib.util.spec_from_file_location(_SHIM_NAME, path)
        assert spec is not None and spec.loader is not None
        shim = importlib.util.module_from_spec(spec)
        sys.modules[_SHIM_NAME] = shim
        spec.loader.exec_module(shim)
    return shim.load()


def tv(name: str, **kwargs: Any) -> torch.nn.Module:
    """``torchvision.models.get_model(name, weights=None, **kwargs)``."""
    torchvision = _torchvision()
    return torchvision.models.get_model(name, weights=None, **kwargs)


def timm_model(name: str, **kwargs: Any) -> torch.nn.Module:
    """``timm.create_model(name, pretrained=False, **kwargs)``."""
    _torchvision()
    import timm

    return timm.create_model(name, pretrained=False, **kwargs)
