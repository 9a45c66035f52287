"""Which of the package's functions a test run calls: the quick loop's coverage probe.

Loaded as a pytest plugin by ``tests/quick_coverage.py`` (``-p quick_trace``, and
``PYTEST_PLUGINS=quick_trace`` for the pytest processes the tests start). Importing it
installs a call tracer that appends one line per package code object the first time it
runs (``file<TAB>first line<TAB>qualified name``) to the file ``EXPORTCHECK_QUICK_TRACE``
names; its one hook puts the tracer back before a test where something unset it.

A call tracer, not a line tracer: returning None from the tracer keeps Python from
tracing lines, so a traced run costs one Python call per function call. The file is
opened ``O_APPEND`` and written with one ``os.write`` per line, so forked children (the
supervisor's, the fork server's) and subprocesses append to it safely, and a child that
leaves through ``os._exit`` has written all it saw already.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

TRACE_ENV = "EXPORTCHECK_QUICK_TRACE"


def _package_dir() -> str | None:
    # find_spec without importing the package: its own import must be traced too.
    spec = importlib.util.find_spec("pytest_exportcheck")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(os.path.realpath(next(iter(spec.submodule_search_locations))), "")


_tracer: Callable[[FrameType, str, Any], None] | None = None


def _install(path: str, package: str) -> None:
    global _tracer
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    seen: set[CodeType] = set()

    def tracer(frame: FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        if code in seen or not code.co_filename.startswith(package):
            return None
        seen.add(code)
        line = f"{code.co_filename}\t{code.co_firstlineno}\t{code.co_qualname}\n"
        os.write(fd, line.encode("utf-8", "replace"))
        return None

    tracer.quick_trace = True  # type: ignore[attr-defined]
    _tracer = tracer
    sys.settrace(tracer)
    threading.settrace(tracer)


def _installed() -> bool:
    # pytester drops this module after an in-process run and the next run imports it
    # again: one tracer per process is enough.
    return bool(getattr(sys.gettrace(), "quick_trace", False))


if os.environ.get(TRACE_ENV) and not _installed():
    _package = _package_dir()
    if _package is not None:
        _install(os.environ[TRACE_ENV], _package)


def pytest_runtest_setup(item: object) -> None:
    # Python unsets a tracer that raises, and at the recursion limit it raises
    # RecursionError (tests/unit/test_unit_nesting.py goes there on purpose).
    if _tracer is not None and sys.gettrace() is None:
        sys.settrace(_tracer)
