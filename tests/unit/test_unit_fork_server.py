"""The fork server: each call runs in a child of a Python that imported torch and
nothing of the caller's, with the caller's environment and directory at the time of
the call; a child past its time is killed and the server goes on serving; a call
interrupted takes its child and the server along; the server ends with its parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_exportcheck.containment.fork_server import ForkServer, can_fork

pytestmark = pytest.mark.skipif(not can_fork(), reason="os.fork is missing here")

CODE = """
import os, sys, time
what = sys.argv[1]
if what == "sleep":
    print(os.getpid(), flush=True)
    time.sleep(60)
if what == "apart":
    print("to stderr", file=sys.stderr)
    sys.exit("a message, as python prints it")
print(what, os.environ.get("EXPORTCHECK_PROBE"), os.getcwd(), "pytest" in sys.modules,
      "torch" in sys.modules, sys.stdin.read() == "")
sys.exit(3)
"""


@pytest.fixture(scope="module")
def server() -> Iterator[ForkServer]:
    server = ForkServer(CODE)  # one torch import for the tests that leave it serving
    yield server
    server.close()


def test_a_child_has_torch_only_and_the_callers_environment(
    server: ForkServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EXPORTCHECK_PROBE", "first")
    monkeypatch.chdir(tmp_path)
    done = server.run(["hello"], tmp_path / "out.txt", timeout=60)
    assert done.returncode == 3
    assert done.output.split() == ["hello", "first", str(tmp_path), "False", "True", "True"]
    monkeypatch.setenv("EXPORTCHECK_PROBE", "second")  # read at each call, not at start
    again = server.run(["again"], tmp_path / "out2.txt", timeout=60, cwd=Path("/"))
    assert again.output.split()[:3] == ["again", "second", "/"]


def test_stderr_apart_where_asked_and_an_exit_message_as_python_ends_on_it(
    server: ForkServer, tmp_path: Path
) -> None:
    apart = server.run(["apart"], tmp_path / "o.txt", timeout=60, errors=tmp_path / "e.txt")
    assert (apart.returncode, apart.output) == (1, "")
    assert apart.errors == "to stderr\na message, as python prints it\n"
    together = server.run(["apart"], tmp_path / "both.txt", timeout=60)
    assert together.output == "to stderr\na message, as python prints it\n"


def test_a_child_past_its_time_is_killed_and_the_server_serves_on(
    server: ForkServer, tmp_path: Path
) -> None:
    slow = server.run(["sleep"], tmp_path / "slow.txt", timeout=1)
    assert slow.returncode is None
    assert not _alive(int(slow.output))
    after = server.run(["after"], tmp_path / "after.txt", timeout=60)
    assert after.returncode == 3 and after.output.startswith("after")


ENDING = """
import os, signal, sys
what = sys.argv[1]
if what == "server":
    os.kill(os.getppid(), signal.SIGKILL)
    signal.pause()  # taken along by the server's death, not left running
elif what == "group":
    os.killpg(0, signal.SIGKILL)
print(what)
"""


def test_a_child_that_kills_the_server_is_said_and_a_new_server_serves_on(tmp_path: Path) -> None:
    server = ForkServer(ENDING)
    try:
        killed = server.run(["server"], tmp_path / "killed.txt", timeout=60)
        assert killed.returncode is None and killed.server_ended == -9
        after = server.run(["after"], tmp_path / "after.txt", timeout=60)
        assert (after.returncode, after.output, after.server_ended) == (0, "after\n", None)
        # Its own process group: killing the group kills the child, not the server or us.
        group = server.run(["group"], tmp_path / "group.txt", timeout=60)
        assert (group.returncode, group.server_ended) == (-9, None)
        assert server.run(["last"], tmp_path / "last.txt", timeout=60).output == "last\n"
    finally:
        server.close()


def _alive(pid: int) -> bool:
    """Running, not a zombie: a killed child waits for its parent to reap it."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _gone(pid: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def test_an_interrupted_call_kills_its_child_and_the_server_and_the_next_call_starts_one(
    tmp_path: Path,
) -> None:
    server = ForkServer(CODE)
    output = tmp_path / "sleep.txt"

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # as Ctrl-C, or the item's own time limit, ends a call

    before = signal.signal(signal.SIGALRM, interrupt)
    try:
        started = server.run(["x"], tmp_path / "x.txt", timeout=60)  # the server is up
        assert started.returncode == 3
        process = server._process
        assert process is not None
        signal.setitimer(signal.ITIMER_REAL, 1.0)
        with pytest.raises(KeyboardInterrupt):
            server.run(["sleep"], output, timeout=60)
        assert _gone(int(output.read_text())) and process.poll() is not None
        assert server.run(["after"], tmp_path / "after.txt", timeout=60).returncode == 3
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
        server.close()


PARENT = """
import sys
from pathlib import Path
from pytest_exportcheck.containment.fork_server import ForkServer
server = ForkServer(sys.argv[1])
print(server._started().pid, flush=True)  # not torch: a plain Python starts in ms
server.run(["sleep"], Path(sys.argv[2]), timeout=60)
"""


def test_the_server_and_its_child_end_with_the_process_that_started_them(tmp_path: Path) -> None:
    output = tmp_path / "sleep.txt"
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, CODE, str(output)], stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )  # fmt: skip
    try:
        assert parent.stdout is not None
        server = int(parent.stdout.readline())
        deadline = time.monotonic() + 60
        while not output.read_text() if output.exists() else time.monotonic() < deadline:
            time.sleep(0.05)
        child = int(output.read_text())
        parent.kill()  # a worker killed: nothing is left to end them in order
        assert _gone(server) and _gone(child)
    finally:
        parent.kill()
        parent.wait()
