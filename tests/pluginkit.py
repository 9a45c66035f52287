"""The pytest runs a test starts load this plugin and what it works with, not the rest
of the environment.

The project's own environment installs packages that bring pytest plugins of their own
(hypothesis for the property tests; executorch's dependencies bring anyio, hydra, kgb,
platformdirs). Each is loaded by every pytest run a test starts, and by each of its
xdist workers: anyio's imports trio (0.3 s), hypothesis's imports all of hypothesis at
the terminal summary (0.8 s), measured on a one-item run of 4.8 s. None of it is what
a test here is about, so the runs block them (``-p no:NAME``), as a user's CI without
them would run. The plugins the tests do use stay: this one, xdist, pytest-split.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

USED = frozenset({"pytest-exportcheck", "pytest-xdist", "pytest-split"})


def _unrelated() -> list[str]:
    names = []
    for entry in importlib.metadata.entry_points(group="pytest11"):
        distribution = entry.dist.name if entry.dist is not None else None
        if distribution is not None and distribution.lower() not in USED:
            names.append(entry.name)
    return sorted(names)


UNRELATED = _unrelated()
BLOCKING_ARGS = tuple(arg for name in UNRELATED for arg in ("-p", f"no:{name}"))


def child_environment(env: dict[str, str]) -> dict[str, str]:
    """``env`` with the blocks added to its ``PYTEST_ADDOPTS`` (a child that runs pytest
    reads them; its xdist workers get them from it)."""
    env["PYTEST_ADDOPTS"] = " ".join(filter(None, [env.get("PYTEST_ADDOPTS"), *BLOCKING_ARGS]))
    return env


# An in-process run imports this plugin before its own pytest can mark it for assertion
# rewriting: the plugin is already in the test process. Where pytest then finds the
# package among those to rewrite, it warns so (seen on CI's workers, where the editable
# install's egg-info can be found too), adding a warning the user's run never has.
ALREADY_IMPORTED = (
    "-W",
    "ignore:Module already imported so cannot be rewritten; pytest_exportcheck"
    ":pytest.PytestAssertRewriteWarning",
)


def blocking_in_process(run: Any) -> Any:
    """``Pytester.runpytest_inprocess`` with the blocks first among its arguments (the
    run's xdist workers start from its arguments), and without the warning above."""

    def run_blocking(self: Any, *args: Any, **kwargs: Any) -> Any:
        return run(self, *BLOCKING_ARGS, *ALREADY_IMPORTED, *args, **kwargs)

    return run_blocking
