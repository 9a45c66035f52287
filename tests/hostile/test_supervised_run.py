"""The one-process run's supervisor: a session forked where pytest's process has one
thread, else started as a fresh interpreter (never a fork of one that has threads), an
end of run the session's code cannot forge by writing into what it inherited, a parent
that waits for its own child only, and signals passed on, blamed on no item, and
obeyed. Each runs both ways (the ``one_process`` fixture)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import childkit
import pytest
from hostilekit import alive, hostile_case, start_probe, write_hostile

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="posix, /proc")


@pytest.fixture(autouse=True)
def _cold_children(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each run starts as a user's does, no warm start (``tests/warmstart.py``): which
    process is pytest's parent, who signals it and how its session starts are read here."""
    monkeypatch.setattr(childkit, "warm_by_default", False)
    monkeypatch.setattr(childkit, "warm_xdist_workers", False)


def case(model: str, checks: str = "[parity]") -> str:
    return hostile_case("it", f"{{target: hostile.py:{model}}}", captures="[export]", checks=checks)


def test_a_conftest_that_ran_torch_ops_does_not_hang_the_session(
    hostile: pytest.Pytester, one_process: tuple[str, ...]
) -> None:
    # A parallel torch op at import starts torch's thread pool; a process forked after
    # it deadlocks on its next parallel op (measured in plain torch). The parent
    # imports no conftest: it runs once, in the session's process (forked or fresh),
    # after that process started.
    hostile.makeconftest(
        "import os, torch\n"
        "with open('conftest.runs', 'a') as f:\n"
        "    f.write(f'{os.getpid()}\\n')\n"
        "(torch.randn(100000) + 1).sum()\n"
    )
    (hostile.path / "cases" / "big.py").write_text(
        "import torch\n"
        "class Big(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return (x + 1).sum(dim=0)\n"
    )
    text = hostile_case("big", "{target: big.py:Big}", captures="[export]", checks="[parity]")
    write_hostile(hostile, text.replace("[2, 4]", "[1000, 100]"))
    result = hostile.runpytest_subprocess(*one_process, timeout=60)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["exportcheck: supervised: a parent process fails the run*"])
    assert len((hostile.path / "conftest.runs").read_text().split()) == 1


@pytest.mark.parametrize("threaded", [False, True], ids=["one thread", "two threads"])
def test_the_session_is_forked_only_where_pytest_has_one_thread(
    hostile: pytest.Pytester, threaded: bool
) -> None:
    # The probe plugin records each process that imports it: a fresh interpreter
    # imports it again, a forked session does not.
    options = start_probe(hostile, threaded=threaded)
    hostile.makeconftest(
        "import os\nwith open('session.pids', 'w') as f:\n"
        "    f.write(f'{os.getpid()} {os.getppid()}')\n"
    )
    write_hostile(hostile)
    result = hostile.runpytest_subprocess(*options, timeout=60)
    result.assert_outcomes(passed=1)
    session, parent = map(int, (hostile.path / "session.pids").read_text().split())
    imported = [int(pid) for pid in (hostile.path / "imported.pids").read_text().split()]
    assert session != parent
    if threaded:
        assert imported == [parent, session]
        result.stdout.fnmatch_lines(
            [
                "exportcheck: the session is a fresh interpreter, not a fork: pytest's process "
                "already had 2 threads (a plugin, sitecustomize or conftest imported first "
                "started them, and a fork could deadlock on their locks), so pytest and its "
                "plugins started twice"
            ]
        )
    else:
        assert imported == [parent]
        assert "fresh interpreter" not in result.stdout.str()


def test_an_end_of_run_written_into_inherited_descriptors_is_not_believed(
    hostile: pytest.Pytester, one_process: tuple[str, ...]
) -> None:
    write_hostile(hostile, case("ForgesEndOfRun"))
    result = hostile.runpytest_subprocess(*one_process, timeout=60)
    assert result.ret == 1
    result.stderr.fnmatch_lines(
        [
            "exportcheck: the test process ended while running "
            "cases/hostile.yaml::it::parity[[]export-cpu[]] (exit status 0) without reaching "
            "the end of the run*",
        ]
    )


@pytest.mark.quick  # the quick loop's one supervised run: session_start.py, both ways
def test_a_process_that_exits_otherwise_than_its_session_ended_fails(
    hostile: pytest.Pytester, one_process: tuple[str, ...]
) -> None:
    write_hostile(hostile, case("ExitsZeroAtExit"))
    result = hostile.runpytest_subprocess(*one_process, timeout=60)
    assert result.ret == 1  # the process said 0
    result.stderr.fnmatch_lines(
        [
            "exportcheck: the session reached its end with exit status 1, then its process "
            "ended with exit status 0: something that ran after the end (an atexit handler*"
            "the run's exit status is 1.",
        ]
    )


def test_a_process_the_model_forked_is_named_not_waited_for(
    hostile: pytest.Pytester, one_process: tuple[str, ...]
) -> None:
    write_hostile(hostile, case("ForksLongChild"))
    try:
        result = hostile.runpytest_subprocess(*one_process, timeout=40)  # it sleeps 60 s
        forked = (hostile.path / "forked.pid").read_text()
        result.stderr.fnmatch_lines(
            [
                f"exportcheck: still running after the session ended, not waited for: {forked} "
                "(*), started from the session's process*",
            ]
        )
    finally:
        _kill(hostile.path / "forked.pid")


@pytest.fixture
def waiting(
    hostile: pytest.Pytester, one_process: tuple[str, ...]
) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A supervised run whose one item waits a minute: the pytest process and the
    session's pid, once the item runs."""
    write_hostile(hostile, case("Waits"))
    # SIGINT at its default in pytest, however this run was started: a shell starts a
    # background job (`pytest ... &`) with SIGINT ignored, which its children inherit,
    # and a pytest that ignores SIGINT is rightly not interrupted by it.
    restore = (
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
        "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
    )
    pytest_argv = ["-m", "pytest", *one_process, "cases/hostile.yaml::it"]
    command = [sys.executable, "-c", restore, *pytest_argv]
    process = hostile.popen(command, stdin=subprocess.DEVNULL, text=True)
    running = hostile.path / "running.pid"
    try:
        deadline = time.monotonic() + 30
        while not (running.exists() and running.read_text()) and time.monotonic() < deadline:
            assert process.poll() is None, process.communicate()
            time.sleep(0.1)
        yield process, int(running.read_text())
    finally:  # the session first: where it outlived pytest, it holds pytest's output
        _kill(running)
        process.kill()
        process.communicate(timeout=30)


def test_sigterm_to_pytest_stops_the_run_blaming_no_item(
    waiting: tuple[subprocess.Popen[str], int],
) -> None:
    process, _ = waiting
    os.kill(process.pid, signal.SIGTERM)
    _, err = process.communicate(timeout=30)
    assert process.returncode == -signal.SIGTERM
    assert (
        f"exportcheck: the run was stopped by SIGTERM sent to pytest (pid {process.pid}, by "
        f"process {os.getpid()}; passed on to the session) while running "
        "cases/hostile.yaml::it::parity[export-cpu]. No summary"
    ) in err
    assert "the test process ended" not in err


def test_sigint_to_pytest_alone_interrupts_the_run(
    waiting: tuple[subprocess.Popen[str], int],
) -> None:
    process, _ = waiting
    os.kill(process.pid, signal.SIGINT)
    out, _ = process.communicate(timeout=30)
    assert process.returncode == pytest.ExitCode.INTERRUPTED
    assert "KeyboardInterrupt" in out


def test_the_session_dies_with_a_killed_pytest(
    waiting: tuple[subprocess.Popen[str], int],
) -> None:
    process, session = waiting
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)
    deadline = time.monotonic() + 10
    while alive(session) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(session)


def test_a_session_killed_by_sigkill_exits_137_naming_the_item(
    hostile: pytest.Pytester, one_process: tuple[str, ...]
) -> None:
    write_hostile(hostile, case("KilledInMutationCheck", checks="[mutation]"))
    result = hostile.runpytest_subprocess(*one_process, timeout=60)
    assert result.ret == 128 + signal.SIGKILL
    result.stderr.fnmatch_lines(
        [
            "exportcheck: the test process ended while running "
            "cases/hostile.yaml::it::mutation[[]export-cpu[]] (killed by SIGKILL, what the "
            "kernel's out-of-memory killer sends) without reaching the end of the run*",
        ]
    )
    assert "OSError" not in result.stderr.str()


def _kill(pid_file: Path) -> None:
    if pid_file.exists() and pid_file.read_text():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
