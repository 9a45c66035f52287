"""Who started a thread: the case's code, or torch, this plugin or pytest.

A non-daemon thread an item leaves running fails its case (``process_state.py``),
but only a thread the case's code started is the case's fault. torch starts
threads of its own that outlive the call that started them: a
``ThreadPoolExecutor``'s workers are non-daemon and wait for more work until the
interpreter exits (``torch.utils._functools._prefetch_executor``, inductor's
compile pool), and the first ``submit`` to such a pool starts one in whichever
item makes it. Judged by "new since the item began" alone, a detection model
whose export truly fails was reported 1 time in 13 as ``[case] ... 1 non-daemon
thread(s) left running: 'ThreadPoolExecutor-1_0'`` instead of the capture's error.

So while an item runs, ``threading.Thread.start`` records where each thread was
started: the innermost frame of the starting call that is not the standard
library's (``concurrent.futures`` and ``threading`` start a pool's workers on
behalf of their caller). A frame in torch, this plugin, pytest or xdist makes
the thread theirs; any other (the model's file, a model library such as
transformers) the case's. A thread started from the standard library alone takes
the origin of the thread that started it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import sysconfig
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType

_ATTRIBUTE = "_exportcheck_origin"
# Packages whose threads are never a case's fault, by top-level module name.
LIBRARIES = ("torch", "pytest_exportcheck", "_pytest", "pluggy", "xdist", "execnet")


@dataclass(frozen=True)
class Origin:
    """Where a thread was started: ``library`` names the package that started it (None:
    the case's code), ``where`` the file and line."""

    library: str | None
    where: str

    @property
    def cases_fault(self) -> bool:
        return self.library is None


@contextmanager
def recording_origins() -> Iterator[None]:
    """Record the origin of every thread started in the block (``origin_of``)."""
    original = threading.Thread.start

    def start(thread: threading.Thread) -> None:
        # A Thread subclass with __slots__, ...: its origin stays unknown (the case's).
        with contextlib.suppress(Exception):
            setattr(thread, _ATTRIBUTE, _origin(sys._getframe(1)))
        original(thread)

    threading.Thread.start = start  # type: ignore[method-assign]
    try:
        yield
    finally:
        threading.Thread.start = original  # type: ignore[method-assign]


def origin_of(thread: threading.Thread) -> Origin | None:
    """Where ``thread`` was started, if it was started while origins were recorded."""
    origin = getattr(thread, _ATTRIBUTE, None)
    return origin if isinstance(origin, Origin) else None


def _origin(frame: FrameType | None) -> Origin | None:
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith("<"):
            filename = os.path.abspath(filename)
        if not _is_stdlib(filename):
            where = f"{_short(filename)}:{frame.f_lineno}"
            return Origin(_library(filename), where)
        frame = frame.f_back
    return origin_of(threading.current_thread())


def _library(filename: str) -> str | None:
    for name in LIBRARIES:
        root = _root(name)
        if root is not None and filename.startswith(root):
            return name
    return None


def _root(name: str) -> str | None:
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    return os.path.dirname(os.path.abspath(path)) + os.sep if path else None


_STDLIB = tuple(
    os.path.abspath(sysconfig.get_paths()[key]) + os.sep for key in ("stdlib", "platstdlib")
)
_SITE = tuple(
    os.path.abspath(sysconfig.get_paths()[key]) + os.sep for key in ("purelib", "platlib")
)


def _is_stdlib(filename: str) -> bool:
    if filename.startswith("<"):  # <frozen importlib._bootstrap>; <string> is exec'd code
        return filename.startswith("<frozen ")
    return filename.startswith(_STDLIB) and not filename.startswith(_SITE)


def _short(filename: str) -> str:
    try:
        return os.path.relpath(filename)
    except ValueError:  # another drive (Windows)
        return filename
