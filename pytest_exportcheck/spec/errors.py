"""The one error type of the spec layer, located at ``file:line``."""

from __future__ import annotations

from pathlib import Path


class SpecError(Exception):
    """A case file or case that cannot be used, with the place to fix it."""

    def __init__(self, message: str, path: Path, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line

    @property
    def location(self) -> str:
        from pytest_exportcheck.spec.case import display_path

        where = display_path(self.path)
        return f"{where}:{self.line}" if self.line else where

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"
