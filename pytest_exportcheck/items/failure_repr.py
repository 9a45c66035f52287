"""How a failing item prints: the plugin's text, and a one-line headline for summaries."""

from __future__ import annotations

from _pytest._code.code import TerminalRepr
from _pytest._io import TerminalWriter


class _Crash:
    """What pytest's short summary and junitxml's ``message`` read: one line."""

    def __init__(self, message: str) -> None:
        self.message = message


class FailureRepr(TerminalRepr):
    """A failure told in the plugin's words, with a one-line headline for summaries:
    without it, pytest's short test summary (untruncated under CI) repeats the report."""

    def __init__(self, text: str, *, headline: str) -> None:
        self.text = text
        self.reprcrash = _Crash(headline)

    def toterminal(self, tw: TerminalWriter) -> None:
        for line in self.text.splitlines():
            tw.line(line)
