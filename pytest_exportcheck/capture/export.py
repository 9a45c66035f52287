"""``torch.export.export``: non-strict (capture ``export``) and strict (``export-strict``)."""

from __future__ import annotations

import time

import torch

from pytest_exportcheck.capture.record import CaptureRecord, normalize_signature
from pytest_exportcheck.failures import CaptureError, describe_exception
from pytest_exportcheck.subject import Subject


def capture_export(subject: Subject, capture: str, *, strict: bool) -> CaptureRecord:
    # The model handed to export is a private copy: non-strict export keeps the
    # very Parameter objects in ep.state_dict, so sharing would tie the program
    # to later eager runs.
    model = subject.model_copy()
    args, kwargs = subject.inputs_copy()
    started = time.perf_counter()
    try:
        program = torch.export.export(model, args, kwargs, strict=strict)
    except Exception as exc:
        mode = "strict" if strict else "non-strict"
        raise CaptureError(
            describe_exception(
                exc, context=f"{subject.case.location}: torch.export.export ({mode}) raised"
            )
        ) from exc
    seconds = time.perf_counter() - started
    return CaptureRecord(
        capture=capture,
        subject=subject,
        program=program,
        placeholders=normalize_signature(program, subject),
        dialect="training IR (torch.export.export)",
        seconds=seconds,
    )
