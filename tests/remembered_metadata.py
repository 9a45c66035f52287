"""Installed packages' metadata, read once by each process that runs the tests.

Every pytest run a test starts in-process reads the metadata of every installed
distribution again: pluggy each one's entry points, for the ``pytest11`` plugins, and
pytest each plugin distribution's whole file list, to mark its modules for assertion
rewriting. In this project's environment that is ~20 ms a run, the same every time, for
several hundred runs (benchmarks/README.md, "Issue 47, ninth step").

Here each distribution found keeps the files read from its metadata folder. Finding them
is still done anew each time, so a distribution a test installs is found and read as it
is. What the tests are about (the plugin's own behaviour) reads no metadata this way.
"""

from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import Iterator
from typing import Any

_find_distributions = importlib.metadata.distributions


class RememberedDistribution(importlib.metadata.Distribution):
    """A found distribution whose metadata files, entry points and file list are read once."""

    def __init__(self, found: importlib.metadata.Distribution) -> None:
        self._found = found
        self._texts: dict[str, str | None] = {}

    def read_text(self, filename: str) -> str | None:
        if filename not in self._texts:
            self._texts[filename] = self._found.read_text(filename)
        return self._texts[filename]

    def locate_file(self, path: Any) -> Any:
        return self._found.locate_file(path)

    @functools.cached_property
    def entry_points(self) -> importlib.metadata.EntryPoints:  # type: ignore[override]
        return super().entry_points

    @functools.cached_property
    def files(self) -> list[importlib.metadata.PackagePath] | None:  # type: ignore[override]
        return super().files


_REMEMBERED: dict[str, RememberedDistribution] = {}  # by the metadata folder's path


def distributions(**kwargs: Any) -> Iterator[importlib.metadata.Distribution]:
    """``importlib.metadata.distributions``, each one found remembered by its folder."""
    for found in _find_distributions(**kwargs):
        folder = getattr(found, "_path", None)
        if folder is None:  # not found in a folder: nothing to key it by
            yield found
            continue
        remembered = _REMEMBERED.get(str(folder))
        if remembered is None:
            remembered = _REMEMBERED[str(folder)] = RememberedDistribution(found)
        yield remembered


def install() -> None:
    """From now on, this process's ``importlib.metadata.distributions`` remembers."""
    importlib.metadata.distributions = distributions  # type: ignore[assignment]
