"""Under GitHub Actions, no line the run prints can act on the runner but the plugin's own.

GitHub's runner reads a *workflow command* from any line of a step's output whose text,
leading whitespace trimmed, starts with ``::`` (``::error``, ``::add-mask::``,
``::stop-commands::TOKEN``, which silences every later command), and the older form
``##[command]``. The runner splits the output at ``\\n`` and at ``\\r``. A model's
exception message, a case name, a warning torch prints: all reach the terminal through
pytest's terminal writer, at the start of a line more often than not (a failure's text
is printed as it is; plain pytest prefixes its own error lines with ``E ``).

:class:`InertLines` wraps the terminal writer's file: a line that would be read as a
command is printed after ``| ``, and ``##[`` as ``## [``; the plugin's own annotations
go through :meth:`InertLines.command`, the one path that writes a command. A line's
fate is decided at its first visible characters, so progress written piece by piece
is shown as it comes; only leading whitespace and a lone ``:`` wait for the next write.
"""

from __future__ import annotations

import re
from typing import IO, Any

import pytest

_BREAK = re.compile(r"(\r\n|\r|\n)")
_COMMAND_START = "::"
_OLD_COMMAND = "##["
MARK = "| "  # what an inert command line starts with


def inert(line: str) -> str:
    """One line (no line break in it) as printed: unable to act on the runner."""
    if line.lstrip().startswith(_COMMAND_START):
        line = MARK + line
    return line.replace(_OLD_COMMAND, "## [")


def _undecided(start: str) -> bool:
    """Whether more text could still make this line's start (no break in it) a command."""
    return _COMMAND_START.startswith(start.lstrip())


class InertLines:
    """A text file that prints every line :func:`inert`, but the commands given to
    :meth:`command`."""

    def __init__(self, file: IO[str]) -> None:
        self._file = file
        self._start = ""  # the current line's text while its fate is undecided
        self._at_line_start = True
        self._held = ""  # a trailing "#" or "##" that the next write could make "##["

    def write(self, text: str) -> int:
        for piece in _BREAK.split(text):
            if not piece:
                continue
            if _BREAK.fullmatch(piece):
                self._end_line(piece)
            else:
                self._text(piece)
        return len(text)

    def _text(self, piece: str) -> None:
        if self._at_line_start:
            self._start += piece
            if _undecided(self._start):
                return
            piece, self._start, self._at_line_start = inert(self._start), "", False
        self._emit(piece)

    def _emit(self, piece: str) -> None:
        text = (self._held + piece).replace(_OLD_COMMAND, "## [")
        kept = min(len(text) - len(text.rstrip("#")), 2)
        self._held = text[len(text) - kept :]
        self._file.write(text[: len(text) - kept])

    def _end_line(self, line_break: str) -> None:
        if self._start:
            self._file.write(inert(self._start))
        self._file.write(self._held + line_break)
        self._start, self._held, self._at_line_start = "", "", True

    def command(self, line: str) -> None:
        """Write one of the plugin's own workflow commands, alone on its line."""
        if self._start or self._held or not self._at_line_start:
            self._end_line("\n")
        self._file.write(line + "\n")
        self._file.flush()

    def flush(self) -> None:
        self._file.flush()  # what waits undecided is whitespace or ":": it stays

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding: the file's
        return getattr(self._file, name)


def make_inert(config: pytest.Config) -> InertLines | None:
    """Wrap the terminal reporter's file (once); the wrapper, or None without a terminal."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return None
    writer = reporter._tw  # pytest keeps its TerminalWriter here; no public setter exists
    if not isinstance(writer._file, InertLines):
        writer._file = InertLines(writer._file)
    return writer._file
