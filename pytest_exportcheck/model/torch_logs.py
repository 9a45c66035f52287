"""torch's log records during the plugin's own calls to torch: kept, never raised into torch.

A log handler can raise into the code that logs. pytest's ``LogCaptureHandler``
re-raises any error of its own ``emit`` while ``logging.raiseExceptions`` is
true (the default), and pytest attaches it to the root logger and to every
logger that does not propagate, torch's included. torch 2.13 logs a malformed
message when ``torch.export.load`` reads a program with a dataclass input::

    log.warning("Fallback to weights_only=False succeeded. "
                "Loaded object of type %s after initial failure: %s",
                type(artifact), exc_info=e)     # torch/_export/serde/serialize.py

Two ``%s``, one argument: under pytest's logging plugin ``load`` raises
``TypeError: not enough arguments for format string``; plain torch prints
"--- Logging error ---" and loads the program. So while the plugin calls torch
here, no handler sees torch's records: they are kept, each made safe to format
(a message its arguments do not fit is shown with them, never raised), and
handed to the handlers they were bound for once torch has returned or raised.

They are also what a failure of those calls is explained by: ``load`` of a name
it cannot split (a ``ModuleDict`` key with a comma) raises only "Please check the
warnings above for possible errors"; the reason, ``expected metadata_split to
return 3 parts, got 5``, is in the warning it logged. :func:`logged_lines` puts
those records in the finding.

A capture that fails keeps them for good (:meth:`KeptRecords.withhold`): strict
export logs every refused guard as an ERROR with Dynamo's traceback (56 lines for
two refused dims), which torch's own handler prints beside the error that already
says it. They join what the capture printed: the failure counts them, -vv shows them.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pytest_exportcheck.containment.failures import exception_text

_SHOWN_LEVEL = logging.WARNING  # what a finding quotes; every record is re-emitted
_LINE_CHARS = 300


def is_torchs(name: str) -> bool:
    return name == "torch" or name.startswith("torch.")


class _SafeMessage:
    """A record's message and arguments, formatted on demand as ``LogRecord.getMessage``
    would, or shown side by side where the arguments do not fit the message."""

    def __init__(self, msg: Any, args: Any) -> None:
        self.msg = msg
        self.args = args

    def __str__(self) -> str:
        try:
            text = str(self.msg)
        except Exception:  # a message object of anyone's: its __str__ may raise too
            return f"<unprintable {type(self.msg).__name__} message>"
        if not self.args:
            return text
        try:
            return text % self.args
        except Exception:
            return f"{text} (arguments that do not fit the message: {_shown(self.args)})"


def _shown(args: Any) -> str:
    try:
        return repr(args)
    except Exception:
        return f"<unprintable {type(args).__name__}>"


def make_safe(record: logging.LogRecord) -> logging.LogRecord:
    """``record`` with a message no formatter can fail on."""
    if not isinstance(record.msg, _SafeMessage):
        record.msg, record.args = _SafeMessage(record.msg, record.args), None
    return record


class KeptRecords(list[logging.LogRecord]):
    """torch's records kept during a block: handed on to their handlers afterwards, unless
    withheld."""

    withheld = False

    def withhold(self) -> str:
        """Keep these records from their handlers for good; their text, to go with the
        failure they belong to."""
        self.withheld = True
        return formatted(self)


def formatted(records: list[logging.LogRecord]) -> str:
    """The records as lines of text, each with its level and logger, and its traceback."""
    formatter = logging.Formatter("%(levelname)s %(name)s: %(message)s")
    lines = []
    for record in records:
        try:
            lines.append(formatter.format(record))
        except Exception:  # a record is made safe, but its exc_info is anyone's
            lines.append(f"{record.levelname} {record.name}: {record.getMessage()}")
    return "\n".join(lines)


@contextmanager
def kept_torch_logs() -> Iterator[KeptRecords]:
    """Run the block with torch's log records kept from every handler; afterwards (also
    when the block raised) each goes, made safe, to the handlers it was bound for, unless
    the block withheld them.

    ``Logger.callHandlers`` is where a record that passed its logger's level and
    filters meets the handlers, on this logger or an ancestor: the one place that
    sees records of loggers torch creates during the block too.
    """
    kept: list[tuple[logging.Logger, logging.LogRecord]] = []
    records = KeptRecords()
    call_handlers = logging.Logger.callHandlers

    def keep(logger: logging.Logger, record: logging.LogRecord) -> None:
        if is_torchs(record.name):
            kept.append((logger, make_safe(record)))
            records.append(record)
        else:
            call_handlers(logger, record)

    logging.Logger.callHandlers = keep  # type: ignore[method-assign]
    try:
        yield records
    finally:
        logging.Logger.callHandlers = call_handlers  # type: ignore[method-assign]
        for logger, record in [] if records.withheld else kept:
            # A plain message from here on, for handlers and filters that read record.msg.
            record.msg, record.args = str(record.msg), None
            # A handler's own failure (the record is safe now), after torch returned.
            with contextlib.suppress(Exception):
                call_handlers(logger, record)


def logged_lines(records: list[logging.LogRecord]) -> list[str]:
    """The records a finding quotes (warnings and worse), one line each, with the
    exception a record carries (its chain, root cause first: torch wraps the reason)."""
    lines = []
    for record in records:
        if record.levelno < _SHOWN_LEVEL:
            continue
        lines.append(_clip(f"{record.levelname} {record.name}: {record.getMessage()}"))
        exc = record.exc_info[1] if record.exc_info else None
        chain = []
        while exc is not None and len(chain) < 5:
            chain.append(exc)
            exc = exc.__cause__ or exc.__context__
        lines += [f"  {_clip(_headline(error))}" for error in reversed(chain)]
    return lines


def _headline(exc: BaseException) -> str:
    first = exception_text(exc).strip().splitlines()
    return f"{type(exc).__name__}: {first[0] if first else '(no message)'}"


def _clip(text: str) -> str:
    return text if len(text) <= _LINE_CHARS else text[: _LINE_CHARS - 1] + "…"
