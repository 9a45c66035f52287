"""The corpus imports one of its model files itself, as users' tests import theirs.

``models/verdicts.py`` registers a custom op when it runs, so a second execution in
this process raises: the cases in ``verdicts.yaml`` pass only if the plugin uses the
module imported here instead of executing the file again.

It is imported as pytest configures each process that runs cases, not when this file
loads: the xdist controller loads it too but runs none, and importing torch there (as
verdicts.py does first) held back every worker's start by that import (~4 s on a
16-core machine, where the controller configured at 6.2 s; benchmarks/README.md).
"""

import importlib.util
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).parent / "models" / "verdicts.py"


def pytest_configure(config: pytest.Config) -> None:
    controller = getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput")
    if controller or "corpus_verdicts" in sys.modules:
        return
    spec = importlib.util.spec_from_file_location("corpus_verdicts", _PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["corpus_verdicts"] = module
    spec.loader.exec_module(module)
