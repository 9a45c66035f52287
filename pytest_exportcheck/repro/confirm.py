"""A reproduction run in plain torch, and what its run says of the verdict.

The script runs where torch alone is imported: a fork of the process's fork server
(``containment/fork_server.py``: a Python that imported torch and nothing else, as
``lowering/fresh_process.py`` loads programs), where ``os.fork`` exists; else a new
interpreter. Forking spares each finding an interpreter and torch's import (~2.5 s of
CPU, measured), which a run with many findings paid per finding.

The script runs the case's code, so it runs as an item does: bounded in time (the
item's limit; its whole process group is killed past it), in memory (the process
inherits the run's ``RLIMIT_DATA``, ``containment/memory_limit.py``), and it ends
with the run (Linux: ``PR_SET_PDEATHSIG``, on the server and on each child). Its exit
status is its verdict: 1 reproduced, 0 not reproduced; anything else (it raised, it
was killed, it ran past the limit, it ended the server) reached none.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pytest_exportcheck.containment.exit_status import describe_returncode
from pytest_exportcheck.containment.fork_server import ForkServer, can_fork

REPRODUCED, NOT_REPRODUCED, NO_VERDICT = "reproduced", "not reproduced", "no verdict"
# The item's outcome where no script ran, or none was written (items/reproductions.py);
# an XPASS(strict)'s script, run: the finding its xfail expects is gone, or still shows.
# Every report says them in its words (reports/repro_outcomes.py).
NOT_RUN, NOT_WRITTEN = "not run", "no plain reproduction yet"
XPASS_GONE, XPASS_SHOWS = "gone in plain torch too", "still shows in plain torch"
DEFAULT_SECONDS = 600.0  # where the item has no time limit
SHOWN_LINES = 6  # of what a script printed, where it reached no verdict

# The fork server's child: the script as ``__main__``, as ``python SCRIPT`` runs it.
RUN_SCRIPT = """import runpy, sys
script = sys.argv[1]
sys.argv = [script]
runpy.run_path(script, run_name="__main__")
"""
# What a script's first torch.export.export imports (torch 2.13, ~1 s of CPU: Dynamo,
# the export tracer, AOTAutograd, sympy through the symbolic shapes): imported once by
# the server, not by each script. Modules only: none runs an op or starts a thread.
FIRST_EXPORT_IMPORTS = (
    "torch._dynamo", "torch.export._trace", "torch.export._unlift",
    "torch._functorch._aot_autograd.graph_compile", "torch._functorch.partitioners",
    "torch._export.passes", "torch.fx.experimental.validator",
)  # fmt: skip
# Where there is no fork: ``python -c LAUNCH PARENT SCRIPT``, ending with PARENT.
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
    """Run ``script`` from ``cwd`` where only torch is imported, and read its verdict."""
    limit = seconds if seconds and seconds > 0 else DEFAULT_SECONDS
    if can_fork():
        return _forked(script, limit, cwd)
    return _in_new_interpreter(script, limit, cwd)


_SERVER: ForkServer | None = None


def _forked(script: Path, limit: float, cwd: Path) -> Confirmation:
    global _SERVER
    _SERVER = _SERVER or ForkServer(RUN_SCRIPT, FIRST_EXPORT_IMPORTS)
    with tempfile.TemporaryDirectory(prefix="exportcheck-repro-") as folder:
        out, err = Path(folder) / "stdout", Path(folder) / "stderr"
        finished = _SERVER.run([str(script)], out, limit, errors=err, cwd=cwd)
    printed = finished.output + finished.errors
    if finished.server_ended is not None:
        ended = describe_returncode(finished.server_ended)
        why = f"the torch-only process it was forked from ended ({ended})"
        return Confirmation(NO_VERDICT, printed, why)
    if finished.returncode is None:
        return Confirmation(NO_VERDICT, printed, f"it ran past {limit:g} s")
    return _read(finished.returncode, finished.output, finished.errors)


def _in_new_interpreter(script: Path, limit: float, cwd: Path) -> Confirmation:
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
    return _read(process.returncode, out, err)


def _read(returncode: int, out: str, err: str) -> Confirmation:
    """The verdict of a run that ended with ``returncode``, printing ``out`` and ``err``."""
    printed = out + err
    if returncode == 1 and _verdict_line(out, "reproduced"):
        return Confirmation(REPRODUCED, printed)
    if returncode == 0 and _verdict_line(out, "not reproduced"):
        return Confirmation(NOT_REPRODUCED, printed)
    tail = " | ".join(printed.strip().splitlines()[-SHOWN_LINES:])
    return Confirmation(NO_VERDICT, printed, f"{describe_returncode(returncode)}: {tail}")


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
