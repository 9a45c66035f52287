"""How long an interrupted test run takes to be gone: every process of it, children too.

    python benchmarks/interrupt.py [--after S] [--cap S] -- PYTEST ARGS
    python benchmarks/interrupt.py -- -n 2 tests/hostile/test_time_limits.py

Starts ``python -m pytest ARGS`` with a marker in its environment (inherited by the
xdist workers, pytester subprocesses, forked children and whatever they start,
whatever session or process group they move to), sends SIGINT to that process alone
(the xdist controller under ``-n``) ``--after`` seconds later, and polls ``/proc``
until no process carries the marker. Prints the seconds from SIGINT until the
controller exited and until the last process was gone, and the processes still
there at each second. After ``--cap`` seconds it kills what is left (SIGKILL) and
says so. Linux only (``/proc/PID/environ``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKER = "EXPORTCHECK_INTERRUPT_PROBE"


def marked(token: str) -> dict[int, str]:
    """pid -> command line of every process whose environment holds the token."""
    needle = f"{MARKER}={token}".encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").strip()
                found[int(entry.name)] = command.decode("utf-8", "replace")[:90]
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--after", type=float, default=8.0, help="seconds before SIGINT")
    parser.add_argument("--cap", type=float, default=180.0, help="seconds before SIGKILL")
    parser.add_argument("pytest_args", nargs="+")
    args = parser.parse_args(argv)
    token = uuid.uuid4().hex
    env = dict(os.environ, **{MARKER: token})
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args.pytest_args]
    controller = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    time.sleep(args.after)
    before = marked(token)
    print(f"at SIGINT: {len(before)} processes")
    for pid, line in sorted(before.items()):
        print(f"  {pid} {line}")
    sent = time.monotonic()
    controller.send_signal(signal.SIGINT)
    controller_gone = None
    shown = before
    while True:
        elapsed = time.monotonic() - sent
        if controller_gone is None and controller.poll() is not None:
            controller_gone = elapsed
        left = marked(token)
        if not left:
            break
        if set(left) != set(shown):
            started = [f"{pid} {line}" for pid, line in left.items() if pid not in shown]
            ended = [str(pid) for pid in shown if pid not in left]
            print(f"  +{elapsed:5.1f} s: {len(left)} left; ended {' '.join(ended) or '-'}")
            for line in started:
                print(f"      started {line}")
            shown = left
        if elapsed > args.cap:
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            print(f"still {len(left)} processes after {args.cap:.0f} s: killed them")
            controller.wait()
            return 1
        time.sleep(0.1)
    controller.wait()
    gone = time.monotonic() - sent
    print(
        f"controller exited {controller_gone if controller_gone is not None else gone:.1f} s "
        f"after SIGINT (status {controller.returncode}); every process gone after {gone:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
