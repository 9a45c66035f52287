"""The fork server: each call runs in a child of a Python that imported torch and
nothing of the caller's, with the caller's environment and directory at the time of
the call; a child past its time is killed and the server goes on serving."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_exportcheck.lowering.fork_server import ForkServer, can_fork

pytestmark = pytest.mark.skipif(not can_fork(), reason="os.fork is missing here")

CODE = """
import os, sys, time
what = sys.argv[1]
if what == "sleep":
    time.sleep(60)
print(what, os.environ.get("EXPORTCHECK_PROBE"), os.getcwd(), "pytest" in sys.modules,
      "torch" in sys.modules)
sys.exit(3)
"""


@pytest.fixture
def server():
    server = ForkServer(CODE)
    yield server
    server.close()


def test_a_child_has_torch_only_and_the_callers_environment(
    server: ForkServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EXPORTCHECK_PROBE", "first")
    monkeypatch.chdir(tmp_path)
    done = server.run(["hello"], tmp_path / "out.txt", timeout=60)
    assert done.returncode == 3
    assert done.output.split() == ["hello", "first", str(tmp_path), "False", "True"]
    monkeypatch.setenv("EXPORTCHECK_PROBE", "second")  # read at each call, not at start
    again = server.run(["again"], tmp_path / "out2.txt", timeout=60)
    assert again.output.split()[:2] == ["again", "second"]


def test_a_child_past_its_time_is_killed_and_the_server_serves_on(
    server: ForkServer, tmp_path: Path
) -> None:
    slow = server.run(["sleep"], tmp_path / "slow.txt", timeout=1)
    assert slow.returncode is None
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
