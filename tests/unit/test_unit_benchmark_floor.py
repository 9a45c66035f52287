"""benchmarks/floor.py, the plugin's cost floor, reuses the package's pure helpers by
name: a helper moved in a regroup once broke it at import (AttributeError on
``signature.TRACED_CONSTANT``) and nothing noticed. It must import, and answer."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

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


def _run_module():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import run
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return run


def test_a_floor_that_exits_1_stops_the_benchmark_instead_of_being_timed() -> None:
    # Python's status for an uncaught exception is 1, the status of a pytest run with
    # failing items: the floor accepts 0 alone.
    run = _run_module()
    floor = run.Series("floor", [sys.executable, "-c", "raise AttributeError('moved')"])
    floor.statuses = (0,)
    with pytest.raises(SystemExit, match="floor failed \\(rc 1\\)"):
        run.run_series([floor], 1, dict(os.environ))
    assert floor.samples == []


def test_a_floor_that_ran_no_case_is_no_floor() -> None:
    run = _run_module()
    assert run.floor_counts("floor: 2 cases, 3 captures, 12 checks, 0 not passed, wall 3.8 s") == (
        2,
        3,
        12,
        0,
    )
    for tail in ("floor: 0 cases, 0 captures, 0 checks, 0 not passed, wall 2.1 s", "Traceback"):
        with pytest.raises(SystemExit, match="the floor ran no case"):
            run.floor_counts(tail)
