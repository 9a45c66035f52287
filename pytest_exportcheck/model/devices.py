"""Which devices a run checks: discovery, selection, and availability in this process.

Discovery happens once, on the process that collects first (the xdist
controller, or the only process), and is handed to xdist workers unchanged, so
every worker collects the same items whatever it can see itself. Whether a
device really works is asked at run time, per item: an absent device is a skip
that names it, never a missing item.

Spellings: ``cpu``, ``meta``, ``cuda`` (every discovered CUDA device) or
``cuda:N``, likewise ``xpu`` / ``xpu:N``, ``mps``, and ``all`` (every
discovered device; ``meta`` only when named).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from functools import cached_property
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_exportcheck.spec import Case

# Lets tests (and curious users) pretend a machine has other devices: the list
# replaces discovery; items for devices this process cannot use then skip.
SIMULATE_ENV = "EXPORTCHECK_SIMULATE_DEVICES"
ACCELERATORS = ("cuda", "xpu", "mps")
KNOWN_KINDS = ("cpu", "meta", *ACCELERATORS)
WORKER_DEVICES = "exportcheck_devices"  # workerinput key: the controller's discovery


class DeviceError(ValueError):
    """A device request that names no device kind we know."""


def parse_request(text: str | Iterable[str]) -> list[str]:
    """``"cpu, cuda"`` or ``["cpu", "cuda"]`` → ``["cpu", "cuda"]``, validated."""
    parts = text.split(",") if isinstance(text, str) else list(text)
    request = [part.strip() for part in parts if part.strip()]
    for entry in request:
        kind, _, index = entry.partition(":")
        if entry != "all" and (kind not in KNOWN_KINDS or (index and not index.isdigit())):
            raise DeviceError(
                f"unknown device {entry!r}: use all, {', '.join(KNOWN_KINDS)} or e.g. cuda:1"
            )
    return request or ["cpu"]


def discover() -> list[str]:
    """Every device this machine offers, in a stable order (imports torch)."""
    simulated = os.environ.get(SIMULATE_ENV)
    if simulated:
        return parse_request(simulated)
    import torch

    found = ["cpu"]
    found += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        found += [f"xpu:{i}" for i in range(xpu.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.append("mps")
    return found


def select(
    request: list[str], discovered: list[str], narrowed_to: Iterable[str] | None = None
) -> list[str]:
    """The concrete devices to check, in request order, without repeats.

    A kind with nothing discovered stays as itself (``cuda``) so that its items
    exist and skip naming it. ``narrowed_to`` (a case's ``devices:``) keeps only
    devices it matches by kind or by exact name.
    """
    chosen: list[str] = []
    for entry in request:
        if entry == "all":
            expanded = list(discovered)
        elif ":" in entry or entry in ("cpu", "meta", "mps"):
            expanded = [entry]
        else:
            expanded = [d for d in discovered if d.split(":")[0] == entry] or [entry]
        chosen += [d for d in expanded if d not in chosen]
    if narrowed_to is not None:
        allowed = list(narrowed_to)
        chosen = [d for d in chosen if d in allowed or d.split(":")[0] in allowed]
    return chosen


def is_accelerator(device: str) -> bool:
    return device.split(":")[0] in ACCELERATORS


def unavailable_reason(device: str) -> str | None:
    """Why ``device`` cannot be used in this process, or ``None`` if it can (imports torch)."""
    import torch

    kind, _, index = device.partition(":")
    if kind in ("cpu", "meta"):
        return None
    if kind == "mps":
        mps = getattr(torch.backends, "mps", None)
        return None if mps is not None and mps.is_available() else "mps is not available here"
    module = getattr(torch, kind, None)
    count = module.device_count() if module is not None and module.is_available() else 0
    if count == 0:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES") if kind == "cuda" else None
        hint = f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""
        return f"device {device} is not available here: torch sees no {kind} device{hint}"
    if index and int(index) >= count:
        return f"device {device} is not available here: torch sees {count} {kind} device(s)"
    return None


def free_memory(device: str) -> None:
    """Return cached blocks of an accelerator to the driver after its captures are dropped."""
    import gc

    import torch

    gc.collect()
    kind = device.split(":")[0]
    module = getattr(torch, kind, None)
    empty_cache = getattr(module, "empty_cache", None)
    if empty_cache is not None and kind != "cpu":
        empty_cache()


class DeviceSelection:
    """The devices this run checks, identical on the controller and every worker."""

    def __init__(self, config: pytest.Config) -> None:
        text = config.getoption("exportcheck_devices") or config.getini("exportcheck_devices")
        try:
            self.request = parse_request(text)
        except DeviceError as exc:
            raise pytest.UsageError(f"--exportcheck-devices: {exc}") from None
        workerinput = getattr(config, "workerinput", {})
        self._handed_down = workerinput.get(WORKER_DEVICES)

    @cached_property
    def discovered(self) -> list[str]:
        """What the machine offers: the controller's answer on workers (collections must match)."""
        if self._handed_down is not None:
            return parse_request(self._handed_down)
        return discover()

    @property
    def needs_discovery(self) -> bool:
        """Only `all` and bare kinds (`cuda`) need to know the machine (and so torch)."""
        return any(":" not in e and e not in ("cpu", "meta") for e in self.request)

    def for_case(self, case: Case) -> list[str]:
        return select(self.request, self.discovered if self.needs_discovery else [], case.devices)
