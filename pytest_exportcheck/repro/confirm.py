"""A reproduction run in a fresh interpreter, and what its run says of the verdict.

The script runs the case's code, so it runs as an item does: bounded in time (the
item's limit; its whole process group is killed past it), in memory (the process
inherits the run's ``RLIMIT_DATA``, ``containment/memory_limit.py``), and it ends
with the run (Linux: ``PR_SET_PDEATHSIG``, set by the few lines that start it,
which import nothing of this plugin). Its exit status is its verdict: 1 reproduced,
0 not reproduced; anything else (it raised, it was killed, it ran past the limit)
reached none.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from pytest_exportcheck.containment.exit_status import describe_returncode

REPRODUCED, NOT_REPRODUCED, NO_VERDICT = "reproduced", "not reproduced", "no verdict"
# The item's outcome where no script ran, or none was written (items/reproductions.py);
# an XPASS(strict)'s script, run: the finding its xfail expects is gone, or still shows.
# Every report says them in its words (reports/repro_outcomes.py).
NOT_RUN, NOT_WRITTEN = "not run", "no plain reproduction yet"
XPASS_GONE, XPASS_SHOWS = "gone in plain torch too", "still shows in plain torch"
DEFAULT_SECONDS = 600.0  # where the item has no time limit
SHOWN_LINES = 6  # of what a script printed, where it reached no verdict

# Run as ``python -c LAUNCH PARENT SCRIPT``: the script as ``__main__``, ending with PARENT.
LAUNCH = """import ctypes, os, runpy, signal, sys
parent, script = int(sys.argv[1]), sys.argv[2]
if sys.platform.startswith("linux"):
    ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:
        os._exit(3)
sys.argv = [script]
runpy.run_path(script, run_name="__main__")
"""


@dataclass(frozen=True)
class Confirmation:
    outcome: str  # REPRODUCED, NOT_REPRODUCED or NO_VERDICT
    printed: str  # what the script printed, stdout then stderr
    why: str = ""  # NO_VERDICT: how the run ended

    def line(self, path: Path) -> str:
        """The sentence a failure carries."""
        if self.outcome == REPRODUCED:
            return f"reproduced in plain torch: {path}"
        if self.outcome == NOT_REPRODUCED:
            said = _verdict_line(self.printed, "not reproduced")
            return (
                "not reproduced outside the plugin: this verdict may be the plugin's own "
                f"error ({path}: {said})"
            )
        return f"the plain-torch reproduction reached no verdict ({self.why}): {path}"


def confirm(script: Path, *, seconds: float | None, cwd: Path) -> Confirmation:
    """Run ``script`` in a new ``python`` from ``cwd`` and read its verdict."""
    limit = seconds if seconds and seconds > 0 else DEFAULT_SECONDS
    process = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, str(os.getpid()), str(script)],
        cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, errors="replace", start_new_session=True,
    )  # fmt: skip
    try:
        out, err = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        out, err = process.communicate()
        return Confirmation(NO_VERDICT, out + err, f"it ran past {limit:g} s")
    except BaseException:  # Ctrl-C, the item's own limit: the script goes with it
        _kill_group(process)
        process.wait()
        raise
    printed = out + err
    if process.returncode == 1 and _verdict_line(out, "reproduced"):
        return Confirmation(REPRODUCED, printed)
    if process.returncode == 0 and _verdict_line(out, "not reproduced"):
        return Confirmation(NOT_REPRODUCED, printed)
    tail = " | ".join(printed.strip().splitlines()[-SHOWN_LINES:])
    return Confirmation(NO_VERDICT, printed, f"{describe_returncode(process.returncode)}: {tail}")


def _verdict_line(printed: str, verdict: str) -> str:
    """The first line the script printed that starts with ``verdict:``."""
    for line in printed.splitlines():
        if line.startswith(f"{verdict}:"):
            return line
    return ""


def _kill_group(process: subprocess.Popen[str]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
