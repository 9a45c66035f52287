"""Check a model defined in Python exactly as a YAML case is checked.

A YAML case names a model target and input specs; many models live in test
code instead, built by fixtures or with weights a YAML file cannot describe.
:func:`check_model` takes the model object and its inputs and runs the same
(capture x check x device) items, with the same messages:

    report = check_model(model, args=(torch.randn(2, 8),), captures=["export", "export-strict"],
                         expect={"mutated_buffers": ["bn.running_mean"]})

The call's arguments become the raw mapping a YAML case would be and go
through the same schema and loader, so a misspelt ``expect`` key gets the same
did-you-mean. The case is located at the caller's ``file:line``, so every
message names the test's line where a YAML case names its own. Failures of all
items are collected and raised once, as :class:`ExportCheckFailed` (an
``AssertionError``: pytest shows it as an ordinary test failure).

This module imports neither torch nor jsonschema until a check is asked for:
the package root re-exports it lazily and the ``exportcheck`` fixture is
registered in every pytest run.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_exportcheck.api.results import ExportCheckFailed, InvalidCase, Report
from pytest_exportcheck.items.gaps import strict_source
from pytest_exportcheck.items.item_results import API_CALL_PROPERTY

if TYPE_CHECKING:
    import torch

    from pytest_exportcheck.spec import Case

# The schema requires a model target; a given model has none. Never resolved.
GIVEN_MODEL_TARGET = "<python>:model"
# Checks a model given from Python cannot have, and why.
NOT_FROM_PYTHON = {
    "recorded": "it compares with <case file>.recorded.json, which only YAML cases have"
}
# The package root (this file lives in api/): frames under it are the plugin's, not the user's.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def check_model(
    model: torch.nn.Module,
    args: tuple[Any, ...] | list[Any] = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    captures: Iterable[str] | str = ("export",),
    checks: Iterable[str] | str | None = None,
    expect: Mapping[str, Any] | None = None,
    devices: Iterable[str] | str = ("cpu",),
    seed: int = 0,
    loss_output: int | None = None,
    name: str | None = None,
    timeout: float | None = None,
    xfail: Mapping[str, Any] | Iterable[Mapping[str, Any]] | None = None,
    dynamic: Mapping[str, Any] | None = None,
    lower: Iterable[str] | str | None = None,
    preserve_signatures: Iterable[str] | str | None = None,
    strict_gaps: bool = False,
    repro: str | os.PathLike[str] | None = None,
    repro_run: bool = True,
) -> Report:
    """Capture ``model`` and run every applicable check, as a YAML case with these keys would.

    ``model(*args, **kwargs)`` is never called: every run (eager included)
    uses a private copy, so the model's parameters, buffers and the inputs are
    unchanged afterwards. ``checks`` defaults to every check but ``recorded``;
    ``expect`` is the YAML ``expect:`` mapping; ``devices`` takes what
    ``--exportcheck-devices`` takes (``all`` and bare kinds expand to what
    torch sees); ``xfail`` is the YAML ``xfail:`` (a mapping or a list of them,
    ``{"reason": ..., "checks": ["parity"], "stage": "parity", "match": "..."}``):
    an item it covers that fails as expected is ``xfailed``, one that passes
    fails (strict, as in YAML); ``dynamic`` is the YAML ``dynamic:`` (its ``shapes``
    paths name ``args``/``kwargs`` as given here); ``lower`` is the YAML ``lower:``
    (``["aoti", "inductor"]``: each an item ``lowered[aoti-export-cpu]``);
    ``preserve_signatures`` is the YAML ``preserve_signatures:`` (``["inner"]``:
    submodules whose calling convention the export captures keep);
    ``strict_gaps=True`` fails an item that passed with gaps (what its check did not
    verify, and why), naming them, as ``--exportcheck-strict-gaps`` does.
    ``repro=DIR`` writes each failed item's plain-torch script under DIR, as
    ``--exportcheck-repro`` does, beside ``<script>.pt`` (the model and inputs as given,
    ``torch.save``'d for the script to load), and runs it (``repro_run=False``: only
    writes it); its verdict joins the item's message, and the item's ``repro`` /
    ``repro_outcome`` say where and what. Returns
    the :class:`Report` (``str()`` of it lists each item, and each gap under its pass);
    raises :class:`ExportCheckFailed` if any item failed and :class:`InvalidCase` if
    the arguments are invalid.
    """
    __tracebackhide__ = True
    return _check(
        model, args, kwargs, captures=captures, checks=checks, expect=expect, devices=devices,
        seed=seed, loss_output=loss_output, name=name, timeout=timeout, xfail=xfail,
        dynamic=dynamic, lower=lower, preserve_signatures=preserve_signatures,
        timeout_source="the timeout argument", strict_gaps=_strict(strict_gaps),
        repro=repro, repro_run=repro_run,
    )  # fmt: skip


def fixture_checker(config: Any, node: Any = None) -> Callable[..., Report]:
    """What the ``exportcheck`` fixture returns: :func:`check_model` as a test uses it.

    Three differences, all to behave like the plugin's own items: the time limit
    defaults to the run's ``--exportcheck-timeout`` / ``exportcheck_timeout``,
    ``strict_gaps`` to the run's ``--exportcheck-strict-gaps`` / ``exportcheck_strict_gaps``
    and ``repro`` / ``repro_run`` to ``--exportcheck-repro`` / ``exportcheck_repro`` and
    ``--exportcheck-repro-run`` / ``exportcheck_repro_run`` (scripts named after the test);
    a call of which nothing ran (every item skipped, e.g. no GPU here) skips
    the test naming why, rather than passing having checked nothing; and each
    call's items are left on the test's report (``node.user_properties``), so
    that they appear in the matrix, the JSON/Markdown report and
    ``--exportcheck-compare`` beside the YAML items.
    """
    text = config.getoption("exportcheck_timeout") or config.getini("exportcheck_timeout")
    try:
        run_timeout = max(0.0, float(text))
    except (TypeError, ValueError):
        run_timeout = 0.0
    run_strict = strict_source(config)
    from pytest_exportcheck.items.option_values import new_reproductions

    run_repro = new_reproductions(config)  # --exportcheck-repro: where, and whether they run

    def exportcheck(
        model: torch.nn.Module,
        args: tuple[Any, ...] | list[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> Report:
        __tracebackhide__ = True
        if options.get("timeout") is None:
            options["timeout"] = run_timeout or None
            options["timeout_source"] = "exportcheck_timeout"
        strict = options.pop("strict_gaps", None)
        options["strict_gaps"] = run_strict if strict is None else _strict(strict)
        if "repro" not in options and run_repro is not None:
            options["repro"], options["repro_cwd"] = run_repro.directory, run_repro.cwd
            options.setdefault("repro_run", run_repro.run)
        if node is not None:
            options["call"] = getattr(node, "name", None)
        try:
            report = _check(model, args, kwargs, **options)
        except ExportCheckFailed as failed:
            _leave_on(node, failed.report)
            raise
        _leave_on(node, report)
        if not report.ran:
            import pytest

            reasons = sorted({f"{item.name}: {item.message}" for item in report.items})
            pytest.skip("exportcheck: nothing to check here; " + "; ".join(reasons))
        return report

    functools.update_wrapper(exportcheck, check_model)  # its signature and docs in help()
    return exportcheck


def _leave_on(node: Any, report: Report) -> None:
    if node is not None:
        node.user_properties.append((API_CALL_PROPERTY, json.dumps(report.to_json())))


def _strict(strict_gaps: bool) -> str | None:
    """The setting a strict gap's finding names, or None (gaps do not fail)."""
    if not isinstance(strict_gaps, bool):
        raise TypeError(f"strict_gaps must be True or False, not {type(strict_gaps).__name__}")
    return "strict_gaps=True" if strict_gaps else None


def _check(
    model: torch.nn.Module,
    args: tuple[Any, ...] | list[Any],
    kwargs: Mapping[str, Any] | None,
    *,
    timeout_source: str = "the timeout argument",
    strict_gaps: str | None = None,
    repro: str | os.PathLike[str] | None = None,
    repro_run: bool = True,
    repro_cwd: Path | None = None,
    call: str | None = None,
    **options: Any,
) -> Report:
    __tracebackhide__ = True
    import torch

    from pytest_exportcheck.api.given import GivenRun

    path, line = _caller()
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"check_model needs a torch.nn.Module, not {type(model).__name__}")
    if not isinstance(args, (tuple, list)):
        # A tensor or a dict is iterable too: iterated, it would check the model on
        # inputs the caller never gave (a tensor's rows, a dict's keys).
        raise TypeError(
            f"args must be a tuple or list of positional inputs (model(*args)), not "
            f"{type(args).__name__}: for one input write args=(x,)"
        )
    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise TypeError(f"kwargs must be a mapping of keyword inputs, not {type(kwargs).__name__}")
    case, devices = make_case(model, path=path, line=line, **options)
    inputs = (tuple(args), dict(kwargs or {}))
    explicit_moved = "moved" in _names(options.get("checks") or ())
    from pytest_exportcheck.api.reproduce import reproductions

    if not isinstance(repro_run, bool):
        raise TypeError(f"repro_run must be True or False, not {type(repro_run).__name__}")
    run = GivenRun(
        case, model, inputs, devices, case.timeout, timeout_source,
        report_cpu_moved=explicit_moved, strict_gaps=strict_gaps,
        reproductions=reproductions(repro, repro_run, repro_cwd),
        call=f"{call or path.stem}-{line}",  # this call's scripts, apart from another's
    )  # fmt: skip
    report = Report(case, tuple(run.run()))
    if report.failed:
        raise ExportCheckFailed(report)
    return report


def make_case(
    model: torch.nn.Module,
    *,
    path: Path,
    line: int,
    captures: Iterable[str] | str = ("export",),
    checks: Iterable[str] | str | None = None,
    expect: Mapping[str, Any] | None = None,
    devices: Iterable[str] | str = ("cpu",),
    seed: int = 0,
    loss_output: int | None = None,
    name: str | None = None,
    timeout: float | None = None,
    xfail: Mapping[str, Any] | Iterable[Mapping[str, Any]] | None = None,
    dynamic: Mapping[str, Any] | None = None,
    lower: Iterable[str] | str | None = None,
    preserve_signatures: Iterable[str] | str | None = None,
) -> tuple[Case, list[str]]:
    """The validated :class:`Case` a YAML file with these keys would give, and the devices.

    The raw mapping goes through the loader's own steps — JSON Schema, the
    ``torch:`` specifiers, the cross-field rules, ``_build_case`` — so errors
    read as they do for YAML, located at ``path:line`` (the caller).
    """
    __tracebackhide__ = True
    from pytest_exportcheck.model.devices import DeviceError, discover, parse_request, select
    from pytest_exportcheck.spec import SpecError
    from pytest_exportcheck.spec.load import case_from_mapping

    name = name or type(model).__name__
    raw: dict[str, Any] = {
        "description": f"{name}, checked from Python",
        "model": {"target": GIVEN_MODEL_TARGET, "mode": "train" if model.training else "eval"},
        "inputs": {},
        "seed": seed,
        "captures": _names(captures),
    }
    optional = {
        "checks": checks, "expect": expect, "loss_output": loss_output, "timeout": timeout,
        "xfail": xfail if xfail is None or isinstance(xfail, Mapping) else list(xfail),
        "dynamic": dynamic, "lower": None if lower is None else _names(lower),
        "preserve_signatures": None if preserve_signatures is None else _names(preserve_signatures),
    }  # fmt: skip
    raw.update({key: _plain(value) for key, value in optional.items() if value is not None})
    if isinstance(raw.get("checks"), str):
        raw["checks"] = [raw["checks"]]
    for check, why in NOT_FROM_PYTHON.items():
        if check in raw.get("checks", ()):
            raise InvalidCase(
                f"checks: {check!r} cannot run on a model given from Python: {why}", path, line
            )
    if checks is None:
        raw["checks"] = [
            c
            for c in _all_checks()
            if c not in NOT_FROM_PYTHON and (c != "shapes" or dynamic is not None)
        ]
    try:
        case = case_from_mapping(name, raw, path, line)
    except SpecError as exc:
        raise InvalidCase(exc.message, path, line) from None
    try:
        request = parse_request(_names(devices))
    except DeviceError as exc:
        raise InvalidCase(f"devices: {exc}", path, line) from None
    needs_discovery = any(":" not in e and e not in ("cpu", "meta") for e in request)
    chosen = select(request, discover() if needs_discovery else [])
    return case, chosen


def _names(value: Iterable[str] | str) -> list[str]:
    """``"export"`` and ``["export"]`` alike (a bare string is one name, not its letters)."""
    return [value] if isinstance(value, str) else list(value)


def _plain(value: Any) -> Any:
    """Tuples as lists, mappings as dicts: JSON Schema's ``array`` is a list only."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _all_checks() -> tuple[str, ...]:
    from pytest_exportcheck.spec.case import ALL_CHECKS

    return ALL_CHECKS


def _caller() -> tuple[Path, int]:
    """The first frame outside this package: the user's test line, as a YAML case's line."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:  # pragma: no cover - only from inside the package itself
        return Path("<python>"), 1
    return Path(frame.f_code.co_filename), frame.f_lineno
