"""Make torchvision importable before any case runs, where it is installed.

transformers imports torchvision when it is installed (its image utilities), and on
torch 2.13.0+cpu torchvision 0.28.0 only imports through ``torchvision_cpu.py``: without
this, ``from transformers import BertModel`` raises ``ModuleNotFoundError: Could not
import module 'BertModel'`` (caused by ``operator torchvision::nms does not exist``) in a
worker that has not built a torchvision or timm model yet, so the Hugging Face cases of
cases/thirdparty would pass or fail by scheduling order in a field run.

As in cases/conftest.py, this runs as each process that runs cases is configured, not in
the xdist controller, and only where torchvision is installed: a CI run without it
imports nothing here.
"""

import importlib.metadata
import importlib.util
import sys
from pathlib import Path

import pytest


def pytest_configure(config: pytest.Config) -> None:
    controller = getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput")
    if controller:
        return
    try:
        importlib.metadata.distribution("torchvision")
    except importlib.metadata.PackageNotFoundError:
        return
    name = "exportcheck_field_zoo"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("zoo.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    sys.modules[name]._torchvision()
