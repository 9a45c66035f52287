"""Process-wide state a model may change, kept from leaking into the cases after it.

Every case runs in the same process as the others (an xdist worker runs many).
A forward that calls ``torch.set_default_dtype(torch.float64)`` or registers a
global module hook passes itself, and every case built after it fails under its
own name (``mat1 and mat2 must have the same dtype``, ``eager is not
deterministic``). So each item runs between a snapshot of the state torch
exposes and a restore of it; an item that changed something fails, naming what
and saying it was put back::

    [case] cases/leaky.yaml:3: the model changed process-wide state and left it changed:
    torch.get_default_dtype(): torch.float32 -> torch.float64 (put back: the cases after
    it run as they would alone)
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from pytest_exportcheck.containment import child_processes, torch_namespaces
from pytest_exportcheck.containment.failures import CaseError
from pytest_exportcheck.containment.stages import StageTimeout
from pytest_exportcheck.containment.thread_origins import origin_of, recording_origins


@dataclass(frozen=True)
class Setting:
    """One piece of process-wide state: how to read it and how to put it back."""

    name: str
    read: Callable[[], Any]
    restore: Callable[[Any], None]
    # How a value is shown (hooks: how many and whose).
    show: Callable[[Any], str] = repr
    # Whether a change from ``saved`` to ``now`` is torch's own leftover rather than the
    # model's: restored all the same, but no case is blamed for it.
    torch_left_it: Callable[[Any, Any], bool] = lambda saved, now: False
    # For state read as many values at once (a namespace): the changes, each named.
    changes: Callable[[Any, Any], list[str]] | None = None


def _hooks(attribute: str) -> Setting:
    """A global hook registry of ``torch.nn.modules.module`` (a dict keyed by handle id)."""
    from torch.nn.modules import module

    def read() -> dict[int, Any]:
        return dict(getattr(module, attribute))

    def restore(saved: dict[int, Any]) -> None:
        registry = getattr(module, attribute)
        registry.clear()
        registry.update(saved)

    def show(hooks: dict[int, Any]) -> str:
        names = [getattr(h, "__qualname__", type(h).__name__) for h in hooks.values()]
        return f"{len(hooks)} hook(s)" + (f" ({', '.join(names[:3])})" if names else "")

    def torch_left_it(saved: dict[int, Any], now: dict[int, Any]) -> bool:
        # torch 2.6's non-strict export leaves its buffer-assignment hook registered when
        # the capture raises: torch's leftover, not the model's doing.
        added = [hook for key, hook in now.items() if key not in saved]
        return bool(added) and all(_is_torchs(hook) for hook in added)

    return Setting(f"torch.nn.modules.module.{attribute}", read, restore, show, torch_left_it)


def _is_torchs(function: Any) -> bool:
    module = getattr(function, "__module__", None) or ""
    return module == "torch" or module.startswith("torch.")


def _attribute(owner: Any, owner_name: str, name: str) -> Setting:
    """A function of torch's a model may replace (``torch.export.export = ...``)."""

    def show(value: Any) -> str:
        return f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', value)}"

    return Setting(
        f"{owner_name}.{name}",
        lambda: getattr(owner, name, None),
        lambda saved: setattr(owner, name, saved),
        show,
    )


def _settings() -> list[Setting]:
    from torch.nn.modules import module

    settings = [
        Setting("torch.get_default_dtype()", torch.get_default_dtype, torch.set_default_dtype),
        Setting("torch.is_grad_enabled()", torch.is_grad_enabled, torch.set_grad_enabled),
        Setting(
            "torch.are_deterministic_algorithms_enabled()",
            lambda: (
                torch.are_deterministic_algorithms_enabled(),
                torch.is_deterministic_algorithms_warn_only_enabled(),
            ),
            lambda saved: torch.use_deterministic_algorithms(saved[0], warn_only=saved[1]),
        ),
        Setting("torch.is_anomaly_enabled()", torch.is_anomaly_enabled, torch.set_anomaly_enabled),
        Setting(
            "torch.get_float32_matmul_precision()",
            torch.get_float32_matmul_precision,
            torch.set_float32_matmul_precision,
        ),
        Setting("os.getcwd()", os.getcwd, os.chdir),
    ]
    if hasattr(torch, "get_default_device"):
        settings.append(
            Setting("torch.get_default_device()", torch.get_default_device, _set_default_device)
        )
    settings += [_hooks(name) for name in sorted(vars(module)) if _is_hook_registry(name)]
    settings += [
        _attribute(torch._dynamo, "torch._dynamo", "export"),
        Setting(
            "torch's function mode stack",
            torch_namespaces.function_modes,
            torch_namespaces.pop_function_modes,
            torch_namespaces.show_modes,
        ),
        Setting(
            "torch's dispatch mode stack",
            torch_namespaces.dispatch_modes,
            torch_namespaces.pop_dispatch_modes,
            torch_namespaces.show_modes,
        ),
    ]
    # torch.export.export, torch.nn.functional.linear, sys.modules["torch"].export, ...
    for namespace in torch_namespaces.namespaces():
        settings.append(
            Setting(namespace.label, namespace.read, namespace.restore, changes=namespace.changes)
        )
    return settings


def _is_hook_registry(name: str) -> bool:
    from torch.nn.modules import module

    return name.startswith("_global_") and isinstance(getattr(module, name), dict)


def _set_default_device(device: torch.device) -> None:
    # The default is a device object; cpu is also what "no default" reads as.
    torch.set_default_device(None if device == torch.device("cpu") else device)


_SETTINGS: list[Setting] | None = None


def settings() -> list[Setting]:
    global _SETTINGS
    if _SETTINGS is None:
        _SETTINGS = _settings()
    return _SETTINGS


def snapshot() -> list[Any]:
    return [setting.read() for setting in settings()]


def restore_changed(before: list[Any]) -> list[str]:
    """Put back every setting that differs from ``before``; what each was and became."""
    changed = []
    for setting, saved in zip(settings(), before, strict=True):
        now = setting.read()
        if setting.changes is not None:
            found = setting.changes(saved, now)
            if found:
                changed += found
                setting.restore(saved)
            continue
        if _same(now, saved):
            continue
        if not setting.torch_left_it(saved, now):
            changed.append(f"{setting.name}: {setting.show(saved)} -> {setting.show(now)}")
        setting.restore(saved)
    return changed


def _same(now: Any, saved: Any) -> bool:
    if isinstance(saved, dict):
        return isinstance(now, dict) and now.keys() == saved.keys()
    if callable(saved):
        return now is saved
    return bool(now == saved)


class LeakedState(CaseError):
    """The model changed process-wide state and left it changed (now restored), or left
    threads running."""


@contextmanager
def kept(location: str) -> Iterator[None]:
    """Run the block; put back what it changed, detach the threads it left running, and
    fail it with :class:`LeakedState` (chained to the block's own error, which the leak
    may well explain). A time limit or Ctrl-C goes on as it was, after the restore."""
    before = snapshot()
    threads = set(threading.enumerate())
    processes = child_processes.children()
    try:
        with child_processes.no_returning_fork(location), recording_origins():
            yield
    except (KeyboardInterrupt, StageTimeout):
        restore_changed(before)
        left_running(threads)
        raise
    except BaseException as exc:
        changed = _leftovers(before, threads, processes)
        if changed:
            raise leaked(location, changed) from exc
        raise
    changed = _leftovers(before, threads, processes)
    if changed:
        raise leaked(location, changed)


def _leftovers(before: list[Any], threads: set[threading.Thread], processes: set[int]) -> list[str]:
    return (
        restore_changed(before)
        + left_running(threads)
        + child_processes.started_and_running(processes)
    )


def left_running(before: set[threading.Thread]) -> list[str]:
    """Non-daemon threads the case's code started since ``before`` and still running,
    each detached.

    Python waits for every non-daemon thread before the process exits: one that never
    ends would keep pytest alive after its summary ("12 passed", then nothing).
    A thread torch, this plugin or pytest started (a thread pool's idle worker) is
    not the case's and is left as it is (``thread_origins.py``).
    """
    left = [
        t
        for t in threading.enumerate()
        if t not in before and t.is_alive() and not t.daemon and _cases(t)
    ]
    if not left:
        return []
    detached = all(_detach(thread) for thread in left)
    names = ", ".join(_named(thread) for thread in left[:3])
    how = "detached, so the run can end" if detached else "the run ends without waiting for it"
    if not detached:
        _UNDETACHED.extend(left)
    return [f"{len(left)} non-daemon thread(s) left running: {names} ({how})"]


def _cases(thread: threading.Thread) -> bool:
    origin = origin_of(thread)
    return origin is None or origin.cases_fault  # unknown: as before, the case's


def _named(thread: threading.Thread) -> str:
    origin = origin_of(thread)
    return repr(thread.name) + (f" (started at {origin.where})" if origin else "")


# Threads this Python gives no way to detach: the run's end exits without them.
_UNDETACHED: list[threading.Thread] = []


def _detach(thread: threading.Thread) -> bool:
    """Stop the interpreter's exit from waiting for ``thread`` (CPython up to 3.12 keeps
    one lock per non-daemon thread in ``threading._shutdown_locks``; newer versions
    keep handles this cannot reach)."""
    locks = getattr(threading, "_shutdown_locks", None)
    guard = getattr(threading, "_shutdown_locks_lock", None)
    lock = getattr(thread, "_tstate_lock", None)
    if locks is None or guard is None or lock is None:
        return False
    with guard:
        locks.discard(lock)
    return True


def undetached_threads() -> list[threading.Thread]:
    """Threads left running by cases that could not be detached and are still alive."""
    return [thread for thread in _UNDETACHED if thread.is_alive()]


def leaked(location: str, changed: list[str]) -> LeakedState:
    return LeakedState(
        f"{location}: the model changed process-wide state and left it changed: "
        + "; ".join(changed)
        + " (put back: the cases after it run as they would alone)"
    )
