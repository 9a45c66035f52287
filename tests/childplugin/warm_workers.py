"""``-p warm_workers``: the xdist workers of a pytest run that a test started as a
child start warm, from the test process's server (``tests/warmstart.py``).

A warm child that runs pytest with ``-n`` started its workers cold: ~2 s of CPU each,
and one more for each worker a crash replaced (the hostile runs end a worker per
item on purpose). ``childkit`` puts this folder on such a child's ``PYTHONPATH``,
this plugin in its ``PYTEST_ADDOPTS``, and the command that starts a warm child in
:data:`PREFIX_VARIABLE`; where the server refuses a worker, it starts cold.

Nothing here imports the suite's modules: this folder alone is on the child's path.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import execnet.gateway_io

PREFIX_VARIABLE = "EXPORTCHECK_TESTS_WARM_PREFIX"  # JSON: the launcher's argv before ARGS
_cold_popen_args = execnet.gateway_io.popen_args


def _warm_popen_args(spec: Any) -> list[str]:
    args = _cold_popen_args(spec)
    prefix = json.loads(os.environ.get(PREFIX_VARIABLE) or "null")
    if spec.python or args[0] != sys.executable or not prefix:
        return args
    return [*prefix, *args[1:]]


def pytest_configure(config: Any) -> None:
    if not hasattr(config, "workerinput"):  # the controller starts the workers
        execnet.gateway_io.popen_args = _warm_popen_args
