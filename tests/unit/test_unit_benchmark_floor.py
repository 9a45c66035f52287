"""benchmarks/floor.py, the plugin's cost floor, reuses the package's pure helpers by
name: a helper moved in a regroup once broke it at import (AttributeError on
``signature.TRACED_CONSTANT``) and nothing noticed. It must import, and answer."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_floor_imports_against_the_package_as_it_is() -> None:
    spec = importlib.util.spec_from_file_location(
        "exportcheck_floor", ROOT / "benchmarks" / "floor.py"
    )
    assert spec is not None and spec.loader is not None
    floor = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = floor
    try:
        spec.loader.exec_module(floor)
    finally:
        sys.modules.pop(spec.name, None)
    assert floor.TRACED_CONSTANT.fullmatch("lifted_tensor_0")
    assert callable(floor.main)
