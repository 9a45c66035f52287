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


def write_atomically(path: Path, text: str | bytes) -> list[str]:
    """Write ``text`` (or bytes) to a temporary file beside ``path``, then replace ``path``
    with it.

    Returns the names of stale temporary files of ``path`` it removed first: ones a
    writer killed mid-write left (SIGKILL, a power cut), named after that writer's
    process, which is gone. The caller says so.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    removed = remove_stale_temporaries(path)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=_prefix(path), suffix=".tmp")
    try:
        # mkstemp makes 0600: a committed recording or a CI artifact needs the usual mode.
        os.chmod(temp, _mode(path))
        if isinstance(text, bytes):
            with os.fdopen(fd, "wb") as binary:
                binary.write(text)
        else:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return removed


def _prefix(path: Path, pid: int | None = None) -> str:
    return f".{path.name}.{os.getpid() if pid is None else pid}."


def remove_stale_temporaries(path: Path) -> list[str]:
    """Remove the temporary files of ``path`` whose writing process no longer runs."""
    removed = []
    head = f".{path.name}."
    try:
        siblings = list(path.parent.iterdir())
    except OSError:
        return removed
    for sibling in siblings:
        name = sibling.name
        if not (name.startswith(head) and name.endswith(".tmp")):
            continue
        pid = name[len(head) :].split(".", 1)[0]
        if not pid.isdigit() or _running(int(pid)):
            continue  # not ours, or its writer is still at it
        try:
            sibling.unlink()
        except OSError:
            continue
        removed.append(name)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's: alive
    return True


def stale_note(removed: list[str]) -> str:
    """How a message mentions the stale temporaries a write removed ("" if none)."""
    if not removed:
        return ""
    return f" (removed {len(removed)} stale temporary file(s) an interrupted write left: " + (
        ", ".join(removed[:3]) + (" ..." if len(removed) > 3 else "") + ")"
    )


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
