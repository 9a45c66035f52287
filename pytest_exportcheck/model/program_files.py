"""``torch.export.save`` and ``torch.export.load``: the one place the plugin calls them.

Every save and load goes through here (parity's saved-and-loaded program, the
``saved`` lowering target, the programs saved for and loaded by another torch, the
lowering cache's key), so each runs with torch's log records kept from every
handler (``torch_logs.py``): under pytest's log capture, torch 2.13's malformed
record while loading a program with a dataclass input otherwise raises
``TypeError: not enough arguments for format string`` into ``load``. And each
failure quotes what torch logged meanwhile: ``load`` often raises only "Please
check the warnings above for possible errors", and the warning holds the reason.
"""

from __future__ import annotations

import logging
import os
import tempfile
from typing import IO

import torch

from pytest_exportcheck.containment.failures import describe_exception
from pytest_exportcheck.model.isolation import quiet_torch_internals
from pytest_exportcheck.model.torch_logs import kept_torch_logs, logged_lines

ProgramFile = str | os.PathLike[str] | IO[bytes]


class SerializationError(Exception):
    """``torch.export.save`` or ``torch.export.load`` raised: the program cannot ship.
    Its message is whole: the error and the warnings torch logged during the call
    (``logged``, for a caller that words the error itself: torch's is the cause)."""

    def __init__(self, message: str, logged: str = "") -> None:
        super().__init__(message)
        self.logged = logged


def save_program(program: torch.export.ExportedProgram, file: ProgramFile) -> None:
    """``torch.export.save(program, file)``; :class:`SerializationError` where it raises."""
    try:
        with quiet_torch_internals(), kept_torch_logs() as logged:
            torch.export.save(program, _torch_file(file))
    except Exception as exc:
        raise serialization_error(exc, "torch.export.save raised", logged) from exc


def load_program(file: ProgramFile) -> torch.export.ExportedProgram:
    """``torch.export.load(file)``; :class:`SerializationError` where it raises."""
    try:
        with quiet_torch_internals(), kept_torch_logs() as logged:
            return torch.export.load(_torch_file(file))
    except Exception as exc:
        raise serialization_error(exc, "torch.export.load raised", logged) from exc


def saved_and_loaded(program: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """``torch.export.load(<torch.export.save(program)>)``, through an archive file."""
    with archive_file() as buffer:
        save_program(program, buffer)
        buffer.seek(0)
        return load_program(buffer)


def archive_file() -> IO[bytes]:
    """Where a program is saved to be loaded again: an unnamed temporary file, not a
    ``BytesIO``. The archive holds every weight once more; in a file, that copy is
    the page cache's, not the worker's (AlexNet: 244 MB off the item's peak), and
    the file is gone when closed, even if the worker dies."""
    return tempfile.TemporaryFile(prefix="exportcheck-", suffix=".pt2")


def serialization_error(
    exc: Exception, context: str, logged: list[logging.LogRecord]
) -> SerializationError:
    """The error, and the warnings torch logged during the call (the reason, at times)."""
    lines = logged_lines(logged)
    told = "\ntorch logged meanwhile:\n" + "\n".join(f"  {line}" for line in lines) if lines else ""
    return SerializationError(describe_exception(exc, context=context) + told, told)


def _torch_file(file: ProgramFile) -> str | IO[bytes]:
    # A str or a file object: what torch.export.save and load take on every version.
    return os.fspath(file) if isinstance(file, os.PathLike) else file
