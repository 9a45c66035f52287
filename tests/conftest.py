"""Fixtures for the plugin's own tests (helpers to write cases live in ``casekit.py``).

Plugin behaviour is tested through ``pytester`` in-process wherever isolation is
not the point, so the whole suite shares one torch import.
"""

from __future__ import annotations

import compileall
import fcntl
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import _pytest.pytester
import childkit
import execnet.gateway_io
import pluginkit
import pytest
import remembered_metadata
import suite_bytecode
import warmstart
from casekit import MODELS
from childplugin import warm_workers

import pytest_exportcheck
from pytest_exportcheck.spec.compat import dynamo_graph_capture

# Installed modules already found so, by name: they stay for the test process's life.
_INSTALLED: dict[str, object] = {}


class _KeepInstalledModules(_pytest.pytester.SysModulesSnapshot):
    """In-process pytester runs drop the modules a run imported when it ends.

    That would include torch submodules that export imports lazily (they then
    fail to register their operators a second time), and submodules of this
    plugin, leaving stale attributes on the kept package (``from
    pytest_exportcheck import capture`` would then see last run's registry).
    Installed packages and the plugin are kept; the test projects' own files
    (conftests, model files) are still dropped.
    """

    def __init__(self, preserve=None) -> None:
        def keep(name: str) -> bool:
            if name.startswith("pytest_exportcheck"):
                return True
            module = sys.modules.get(name)
            if module is not None and _INSTALLED.get(name) is module:
                return True  # asked at the end of every in-process run, of ~4000 modules
            # A namespace package (executorch) has no __file__, only a __path__ (torch's op
            # namespaces answer any attribute: only real strings and path lists are read).
            file, path = getattr(module, "__file__", None), getattr(module, "__path__", None)
            paths = [file] if isinstance(file, str) else []
            if isinstance(path, list) or type(path).__name__ == "_NamespacePath":
                paths += [entry for entry in path if isinstance(entry, str)]
            if any("site-packages" in entry for entry in paths):
                _INSTALLED[name] = module
                return True
            return bool(preserve and preserve(name))

        super().__init__(preserve=keep)


@pytest.fixture(autouse=True)
def _keep_installed_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_pytest.pytester, "SysModulesSnapshot", _KeepInstalledModules)


@pytest.fixture
def warm_subprocesses(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test's pytest subprocesses start warm (``tests/warmstart.py``): forked from an
    interpreter that imported torch, ~3 s of CPU less each. For tests whose subject is
    what the run does, not how its process started (a fresh interpreter's imports, its
    parent, the signals it gets: those tests start theirs as a user does)."""
    monkeypatch.setattr(childkit, "warm_by_default", True)


@pytest.fixture(autouse=True)
def _children_end_with_their_test(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every process a test starts is bounded and ends with the test (childkit.py):
    pytester's subprocesses included, in a process group of their own."""
    monkeypatch.setattr(pytest.Pytester, "popen", childkit.pytester_popen)
    monkeypatch.setattr(pytest.Pytester, "run", childkit.bounded(pytest.Pytester.run))
    monkeypatch.setattr(
        pytest.Pytester,
        "runpytest_inprocess",
        pluginkit.blocking_in_process(pytest.Pytester.runpytest_inprocess),
    )
    yield
    childkit.end_all()


def pytest_keyboard_interrupt() -> None:
    # In the process running the tests (one process, or an xdist worker): the test's
    # children go now. On the xdist controller: the workers hear of it now, not in 5 s.
    childkit.end_all()
    if _controller is not None:
        childkit.interrupt_workers(_controller)


_controller: pytest.Config | None = None


def _warm_worker_prefix() -> list[str] | None:
    """An xdist worker of a pytester run, started as its own Python but forked from one
    that imported torch once (``tests/warmstart.py``), its process start not being what
    the test reads."""
    return warmstart.launcher() if childkit.warm_xdist_workers else None


def pytest_configure(config: pytest.Config) -> None:
    global _controller
    # -n, not --dist: pyproject's addopts always name a --dist mode.
    controller = bool(config.getoption("numprocesses", None)) and not hasattr(config, "workerinput")
    if not controller:
        # torch cannot be imported twice into one interpreter (its C extension refuses),
        # so the process running the tests imports it once, now, for every in-process
        # run. Not the controller, which runs no test.
        import torch  # noqa: F401

        # Each in-process run reads every installed package's metadata: read once.
        remembered_metadata.install()
        # The xdist workers of the pytester runs start warm (tests/warmstart.py).
        execnet.gateway_io.popen_args = warm_workers.warm_popen_args(_warm_worker_prefix)
    if not hasattr(config, "workerinput"):
        # The plugin's bytecode, written once, as installing a package does: every
        # pytest run a test starts imports ~120 of its modules, and where bytecode is not
        # written (PYTHONDONTWRITEBYTECODE, as on CI's machine) each compiled them again.
        compileall.compile_dir(Path(pytest_exportcheck.__file__).parent, quiet=1)
        suite_bytecode.write_helper_bytecode()
    if controller:
        _controller = config
        # One warm server for the run, started now, and the suite's own workers forked
        # from it once it listens: a worker then collects without importing torch, and
        # the controller runs no test, so it imports no torch either (~3 s of CPU each).
        warmstart.share_server()
        execnet.gateway_io.popen_args = warm_workers.warm_popen_args(warmstart.launcher)
        # While the server starts: each worker collects the whole suite, and would
        # rewrite every test module's asserts where bytecode is not written.
        suite_bytecode.write_rewritten_test_modules(config)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` for this suite: one worker more than the cores. Part of the suite
    waits rather than computes (time limits that must fire, children starting and
    ending), so two workers on 2 cores left the CPU idle ~15 % of the run
    (benchmarks/README.md, issue 47)."""
    return len(os.sched_getaffinity(0)) + 1 if hasattr(os, "sched_getaffinity") else 2


UNIT_TESTS = Path(__file__).resolve().parent / "unit"


@pytest.hookimpl(tryfirst=True)  # ahead of -m, which deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every unit test is in the quick loop (``-m quick``); plugin tests are marked one by one."""
    for item in items:
        if UNIT_TESTS in item.path.parents:
            item.add_marker(pytest.mark.quick)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("needs_dynamo") and dynamo_graph_capture() is None:
        pytest.skip(
            "this torch has no torch._dynamo.functional_export.dynamo_graph_capture_for_export"
        )


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester dir with ``cases/models.py``; tests add YAML with :func:`write_cases`."""
    pytester.mkdir("cases")
    (pytester.path / "cases" / "models.py").write_text(MODELS)
    return pytester


@pytest.fixture(params=["one-process", "xdist"])
def dist(request: pytest.FixtureRequest) -> list[str]:
    """Extra pytest args: the same behaviour must hold with and without pytest-xdist.

    One worker: it takes every path xdist adds to a run (items, reports, gaps and
    recordings handed from the worker to the controller), and each worker started
    costs ~2.3 s of CPU (torch's import, collection). What a second worker adds —
    merging two workers' parts, scheduling, one worker dying while another runs — is
    tested with ``-n 2`` by the tests about it (test_xdist.py, test_reports.py,
    test_worker_crash.py, test_shards.py, the hostile worker tests)."""
    return ["-n", "1"] if request.param == "xdist" else ["-p", "no:xdist"]


@pytest.fixture
def real_compiles(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A test that compiles C++ for real (AOTInductor): without precompiled headers, and
    waiting for any other doing so.

    Inductor's default cache is shared, and cold on CI's fresh machine: its first
    compile with precompiled headers built them first (~10 s of CPU), which a suite
    with two real compiles never earns back (measured on a cold cache, the scaffold's
    and the lowered check's tests one after the other: 39.6 s of CPU with them, 29.4 s
    without; warm, no slower). Two side by side each built their own kernels; one after
    the other, the second reads the first's. What is tested is the plugin's handling of
    what torch builds, not how torch builds it. A wait is bounded: past it, the test
    compiles beside the other."""
    import torch._inductor.config

    no_headers = {"aot_inductor.precompile_headers": False, "cpp_cache_precompile_headers": False}
    lock = tmp_path_factory.getbasetemp().parent / "real-compiles.lock"
    with open(lock, "a") as held, torch._inductor.config.patch(no_headers):
        deadline = time.monotonic() + 120
        while True:
            try:
                fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.2)
        yield  # the lock ends with the file, however the test ends
