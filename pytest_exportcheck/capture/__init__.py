"""Capture paths: each turns a :class:`Subject` into a normalized :class:`CaptureRecord`.

To add a path: write an adapter module here (a capture function and, unless
an existing record class fits, a ``CaptureRecord`` subclass), register it in
``PATHS`` with the checks it cannot support, and add its name to
``captureName`` in ``case.schema.json``.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial

from pytest_exportcheck.capture.record import CaptureRecord, Placeholder
from pytest_exportcheck.containment.failures import CaptureError
from pytest_exportcheck.model.nesting import recursion_in, with_nesting
from pytest_exportcheck.model.subject import Subject

# torch's structured-trace logger emits DEBUG records on every export; under
# pytest they reach the log capture and bury each failure report under empty
# "DEBUG torch.__trace" lines. Silenced unless the user asked for a trace.
if not os.environ.get("TORCH_TRACE"):
    logging.getLogger("torch.__trace").disabled = True

CaptureFn = Callable[[Subject], CaptureRecord]


def _always_available() -> str | None:
    return None


@dataclass(frozen=True)
class CapturePath:
    """A capture path: how to capture, and which checks mean nothing for its graphs."""

    capture: CaptureFn
    not_applicable: Mapping[str, str] = field(default_factory=dict)
    # Why the installed torch cannot run this path (None: it can).
    unavailable: Callable[[], str | None] = _always_available
    # Why the path cannot be given a case's dynamic dims (None: it takes dynamic_shapes).
    static_only: str | None = None


def _paths() -> dict[str, CapturePath]:
    from pytest_exportcheck.capture.dynamo import (
        capture_dynamo,
        capture_dynamo_legacy,
        dynamo_unavailable,
    )
    from pytest_exportcheck.capture.export import capture_export
    from pytest_exportcheck.capture.joint import capture_aot_joint

    graph_only = {
        "hierarchy": "a Dynamo GraphModule is flat: torch.export.unflatten takes an "
        "ExportedProgram, so there is no module hierarchy to restore",
        "moved": "move_to_device_pass takes an ExportedProgram",
        "lowered": "a lowering target takes an ExportedProgram",
    }
    return {
        "export": CapturePath(partial(capture_export, capture="export", strict=False)),
        "export-strict": CapturePath(partial(capture_export, capture="export-strict", strict=True)),
        "dynamo": CapturePath(capture_dynamo, graph_only, dynamo_unavailable),
        "dynamo-legacy": CapturePath(capture_dynamo_legacy, graph_only),
        "aot-joint": CapturePath(
            capture_aot_joint,
            {
                "hierarchy": "aot_export_module's joint graph keeps no module hierarchy, "
                "so unflatten is not applicable",
                "moved": "move_to_device_pass takes an ExportedProgram",
                "lowered": "a lowering target takes an ExportedProgram",
                "shapes": "aot_export_module's joint graph has no range constraints",
            },
            static_only="aot_export_module takes no dynamic_shapes",
        ),
    }


PATHS: dict[str, CapturePath] = _paths()

# The capture function per path; tests swap entries to corrupt what a path returns.
CAPTURES: dict[str, CaptureFn] = {name: path.capture for name, path in PATHS.items()}

__all__ = ["CAPTURES", "PATHS", "CaptureRecord", "Placeholder", "capture", "not_applicable"]


def capture(name: str, subject: Subject) -> CaptureRecord:
    """One capture; what torch prints to stderr, and logs, meanwhile goes with its outcome.

    A failing export prints its partial graph to stderr (``print(e.partial_fx_graph,
    file=sys.stderr)`` in ``torch.export``): thousands of lines for a detection
    model, pasted into every report; a failing strict export logs each refused guard
    as an ERROR with Dynamo's traceback (``torch/_guards.py``). On failure that text
    joins the error, counted after the lines shown by default (``-vv`` and the
    reports have it); on success it is written to stderr, and logged, as torch meant.
    A user who set ``TORCH_LOGS`` asked for torch's logs: its handlers get them, failed or not.
    """
    from pytest_exportcheck.model.rng_state import rng_state
    from pytest_exportcheck.model.torch_logs import kept_torch_logs

    printed = io.StringIO()
    with kept_torch_logs() as logged:
        try:
            with contextlib.redirect_stderr(printed):
                before = rng_state()  # the `mode` check: a capture must leave them (rng_state.py)
                record = CAPTURES[name](subject)
                record.rng_around = (before, rng_state())
        except CaptureError as exc:
            text = [printed.getvalue().strip()]
            if not os.environ.get("TORCH_LOGS"):
                text.append(logged.withhold().strip())
            exc.printed = "\n".join(part for part in text if part)
            nesting = subject.deep_nesting() if recursion_in(exc) else None
            if nesting is not None:
                exc.message = with_nesting(exc.message, nesting)
                exc.args = (exc.message,)
            raise
    sys.stderr.write(printed.getvalue())
    return record


def not_applicable(capture_name: str, check: str) -> str | None:
    """Why ``check`` says nothing about graphs of ``capture_name`` (reported, never passed)."""
    return PATHS[capture_name].not_applicable.get(check)


def unavailable(capture_name: str) -> str | None:
    return PATHS[capture_name].unavailable()


def static_only(capture_name: str) -> str | None:
    """Why ``capture_name`` cannot honour a case's dynamic dims (None: it can)."""
    return PATHS[capture_name].static_only
