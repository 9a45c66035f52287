"""The values of the plugin's options and ini settings, checked once at configure time:
a bad value is pytest's usage error naming it and the range allowed, never a crash later
(``plugin.py`` declares the options; this module reads them)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from pytest_exportcheck.containment.stages import MAX_TIMEOUT_SECONDS
from pytest_exportcheck.items.reproductions import Reproductions


def whole_number(config: pytest.Config, name: str) -> int:
    """An ini setting that must be a whole number (``exportcheck_cache_size``, ...)."""
    value = config.getini(name)
    try:
        return int(value)
    except ValueError:
        raise pytest.UsageError(f"{name} must be a whole number, not {value!r}") from None


def resolved_argument(arg: str) -> Path:
    """A command-line path, resolved; a symlink loop is refused as pytest refuses a path
    that does not exist (resolving it would raise deep inside the configuration)."""
    path = Path(arg.split("::")[0])
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        raise pytest.UsageError(
            f"file or directory not found: {arg} (a symlink loop: it never reaches a file)"
        ) from None


def seconds(value: Any) -> float:
    """``--exportcheck-timeout`` / ``exportcheck_timeout``: finite seconds, 0 for no limit
    (inf, nan or a negative number would each mean "no limit" without saying so)."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0 or seconds > MAX_TIMEOUT_SECONDS:
        raise pytest.UsageError(
            f"--exportcheck-timeout / exportcheck_timeout must be a number of seconds from 0 "
            f"(no limit) to {MAX_TIMEOUT_SECONDS}, not {value!r}"
        )
    return seconds


def check_gpu_sharing(config: pytest.Config) -> None:
    """Bad sharing settings are usage errors now, not a scheduler crash under xdist."""
    from pytest_exportcheck.parallel.gpu_sharing import (
        SharingError,
        parse_size,
        requested_workers_per_gpu,
    )

    try:
        requested_workers_per_gpu(config)
        size = config.getini("exportcheck_gpu_memory_per_worker")
        if size.strip():
            parse_size(size)
    except SharingError as exc:
        raise pytest.UsageError(f"--exportcheck-gpu-workers / exportcheck_gpu_*: {exc}") from None


def memory_limit(config: pytest.Config) -> tuple[int | None, bool]:
    """``--exportcheck-memory-limit`` / ``exportcheck_memory_limit`` in bytes (None: none),
    and whether it is the default derived from the machine (neither was given)."""
    from pytest_exportcheck.containment.memory_limit import derived, parse

    text = config.getoption("exportcheck_memory_limit") or config.getini("exportcheck_memory_limit")
    if not str(text).strip():
        return derived(), True
    try:
        return parse(str(text)), False
    except ValueError as exc:
        raise pytest.UsageError(f"--exportcheck-memory-limit / {exc}") from None


def run_programs(config: pytest.Config) -> tuple[str, ...]:
    """``--exportcheck-programs``: chains every export capture also runs as (``programs:``)."""
    import re

    from pytest_exportcheck.spec.load import case_schema

    pattern = case_schema()["$defs"]["case"]["properties"]["programs"]["items"]["pattern"]
    text = config.getoption("exportcheck_programs") or ""
    chains = [chain.strip() for chain in str(text).split(",") if chain.strip()]
    for chain in chains:
        ends = [s for s in chain.split(">")[:-1] if s in ("module", "unflatten")]
        if re.fullmatch(pattern, chain) is None or ends:
            raise pytest.UsageError(
                f"--exportcheck-programs: {chain!r} is not a chain of decompose, save, retrace, "
                "move:<device>, ending in module or unflatten (e.g. decompose>save)"
            )
    return tuple(chains)


def lowering_targets(config: pytest.Config) -> tuple[str, ...]:
    """The run's lowering targets (--exportcheck-lower, or the ini option), as checks."""
    from pytest_exportcheck.spec.case import LOWERING_TARGETS, lowered_check

    text = config.getoption("exportcheck_lower") or config.getini("exportcheck_lower") or ""
    names = [name.strip() for name in str(text).split(",") if name.strip()]
    unknown = [name for name in names if name not in LOWERING_TARGETS]
    if unknown:
        raise pytest.UsageError(
            f"--exportcheck-lower: unknown target {unknown[0]!r}; "
            f"known: {', '.join(LOWERING_TARGETS)}"
        )
    return tuple(map(lowered_check, names))


def reproductions(config: pytest.Config) -> Reproductions | None:
    """The run's reproductions, registered for their summary; None where unset."""
    found = new_reproductions(config)
    if found is not None:
        config.pluginmanager.register(found, "exportcheck-reproductions")
    return found


def new_reproductions(config: pytest.Config) -> Reproductions | None:
    """``--exportcheck-repro`` (relative to where pytest was started) or the ini's (to the
    ini file), with ``exportcheck_repro_run``: where scripts go, and whether they run."""
    option = config.getoption("exportcheck_repro")
    text = option or config.getini("exportcheck_repro")
    if not text:
        return None
    run = config.getoption("exportcheck_repro_run") or config.getini("exportcheck_repro_run")
    if run not in ("yes", "no"):
        raise pytest.UsageError(f"exportcheck_repro_run must be yes or no, not {run!r}")
    here = config.invocation_params.dir  # where the scripts run, as the items did
    base = config.inipath.parent if not option and config.inipath is not None else here
    return Reproductions((base / text).resolve(), run=run == "yes", cwd=here)
