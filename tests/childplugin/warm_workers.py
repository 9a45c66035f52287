"""Warm xdist workers (``tests/warmstart.py``): the suite's in-process pytester runs'
(``tests/conftest.py`` installs :func:`warm_popen_args`), and, as ``-p warm_workers``,
those of a pytest run that a test started as a warm child.

A warm child that runs pytest with ``-n`` started its workers cold: ~2 s of CPU each,
and one more for each worker a crash replaced (the hostile runs end a worker per
item on purpose). :func:`environment` puts this folder on such a child's
``PYTHONPATH``, this plugin in its ``PYTEST_ADDOPTS``, and the command that starts a
warm child in :data:`PREFIX_VARIABLE`; where the server refuses a worker, it starts
cold.

Nothing here imports the suite's modules: this folder alone is on the child's path.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

import execnet.gateway_io

PREFIX_VARIABLE = "EXPORTCHECK_TESTS_WARM_PREFIX"  # JSON: the launcher's argv before ARGS
FOLDER = os.path.dirname(os.path.abspath(__file__))
_cold_popen_args = execnet.gateway_io.popen_args


def warm_popen_args(prefix: Callable[[], list[str] | None]) -> Callable[[Any], list[str]]:
    """execnet's ``popen_args`` for a worker started as ``prefix() + ARGS`` (the command
    that starts a warm child; None: as execnet starts it)."""

    def popen_args(spec: Any) -> list[str]:
        args = _cold_popen_args(spec)
        start = None if spec.python or args[0] != sys.executable else prefix()
        return args if not start else [*start, *args[1:]]

    return popen_args


def environment(env: dict[str, str], prefix: list[str]) -> dict[str, str]:
    """``env`` for a warm child (started by ``prefix``) whose pytest runs start their
    xdist workers warm too."""
    path = os.pathsep.join(filter(None, [FOLDER, env.get("PYTHONPATH")]))
    addopts = " ".join(filter(None, [env.get("PYTEST_ADDOPTS"), "-p", "warm_workers"]))
    return {
        **env, "PYTHONPATH": path, "PYTEST_ADDOPTS": addopts, PREFIX_VARIABLE: json.dumps(prefix),
    }  # fmt: skip


def _prefix_given() -> list[str] | None:
    return json.loads(os.environ.get(PREFIX_VARIABLE) or "null")


def pytest_configure(config: Any) -> None:
    if not hasattr(config, "workerinput"):  # the controller starts the workers
        execnet.gateway_io.popen_args = warm_popen_args(_prefix_given)
