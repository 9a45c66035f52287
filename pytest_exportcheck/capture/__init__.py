"""Capture paths: each turns a :class:`Subject` into a normalized :class:`CaptureRecord`.

To add a path: write an adapter module here, register it in ``CAPTURES`` and
add its name to ``captureName`` in ``case.schema.json``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from functools import partial

from pytest_exportcheck.capture.export import capture_export
from pytest_exportcheck.capture.record import CaptureRecord, Placeholder
from pytest_exportcheck.subject import Subject

# torch's structured-trace logger emits DEBUG records on every export; under
# pytest they reach the log capture and bury each failure report under empty
# "DEBUG torch.__trace" lines. Silenced unless the user asked for a trace.
if not os.environ.get("TORCH_TRACE"):
    logging.getLogger("torch.__trace").disabled = True

CaptureFn = Callable[[Subject], CaptureRecord]

CAPTURES: dict[str, CaptureFn] = {
    "export": partial(capture_export, capture="export", strict=False),
    "export-strict": partial(capture_export, capture="export-strict", strict=True),
}

__all__ = ["CAPTURES", "CaptureRecord", "Placeholder", "capture"]


def capture(name: str, subject: Subject) -> CaptureRecord:
    return CAPTURES[name](subject)
