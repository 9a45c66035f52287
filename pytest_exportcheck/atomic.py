"""Writing a file so that readers see the old text or the new one, never half of one."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no advisory locks of this kind
    fcntl = None  # type: ignore[assignment]


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, then replace ``path`` with it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp makes 0600: a committed recording or a CI artifact needs the usual mode.
        os.chmod(temp, _mode(path))
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _mode(path: Path) -> int:
    """The replaced file's permissions, else what a plain ``open()`` would give (umask)."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@contextmanager
def locked_directory(directory: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``directory`` for the block, against other processes
    doing the same: two ``--exportcheck-update`` runs each read, merge and write a
    recording, and without it the second's write lost the first's entries.

    ``flock`` on the directory's own descriptor: no lock file is left beside a
    user's files, and the lock goes with the process however it ends. Where
    ``fcntl`` is missing (Windows) the block runs unlocked.
    """
    if fcntl is None:
        yield
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
