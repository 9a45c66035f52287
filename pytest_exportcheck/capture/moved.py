"""The other deployment path: export on CPU, then ``move_to_device_pass`` to the device.

Users who cannot export on the target device (a build box without the GPU)
ship a CPU export moved over. The moved program is checked against eager on
the device itself; it shares nothing with the CPU capture it came from.
"""

from __future__ import annotations

import time

from pytest_exportcheck.capture.export import ProgramRecord
from pytest_exportcheck.containment.failures import capture_error
from pytest_exportcheck.model.isolation import private_copy, quiet_torch_internals
from pytest_exportcheck.spec.compat import move_to_device_pass


def move_capture(cpu_record: ProgramRecord, device: str) -> ProgramRecord:
    """The CPU capture moved to ``device``; its subject is the CPU subject moved there
    (the device's own subject was built under the device, with other weights)."""
    subject = cpu_record.subject.moved_to(device)
    move = move_to_device_pass()
    assert move is not None  # items skip first (moved_unavailable)
    started = time.perf_counter()
    try:
        with quiet_torch_internals():
            program = move(private_copy(cpu_record.program), subject.device)
    except Exception as exc:
        raise capture_error(
            exc,
            f"{subject.case.location}: move_to_device_pass(<CPU export>, "
            f"{subject.device!r}) raised",
        ) from exc
    return ProgramRecord(
        capture=cpu_record.capture,
        subject=subject,
        program=program,
        placeholders=cpu_record.placeholders,
        dialect=f"{cpu_record.dialect}, exported on cpu and moved to {subject.device}",
        seconds=cpu_record.seconds + time.perf_counter() - started,
        graph_module=program.graph_module,
        # The moved tensors are new: identity with the captured model no longer holds.
        captured_model=None,
    )
