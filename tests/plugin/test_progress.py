"""Progress on long runs: the live line of a long item's stage (on a terminal only) and
the slowest cases at the run's end, in one process and under xdist."""

from __future__ import annotations

import os
import pty
import re
import select
import sys
import time
from pathlib import Path

import childkit
import pytest
from casekit import write_cases

import pytest_exportcheck

# A model whose construction sleeps: its items' build is slow, the rest quick. Its
# export sleeps too (a tenth of the build), so the capture's share of the time never
# rounds to nothing: a warm non-strict export of one Linear takes a few milliseconds.
SLOW_MODEL = """
import time

import torch
from torch import nn


class Slow(nn.Module):
    def __init__(self, seconds: float) -> None:
        super().__init__()
        time.sleep(seconds)
        self.seconds = seconds
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        if torch.compiler.is_exporting():
            time.sleep(self.seconds / 10)
        return self.fc(x)
"""


def slow_case(seconds: float) -> str:
    return f"""
    cases:
      slow:
        description: a model that takes {seconds} s to build
        model: {{target: slow.py:Slow, kwargs: {{seconds: {seconds}}}}}
        inputs: {{args: [{{shape: [2, 4]}}]}}
        checks: [signature, parity]
      quick:
        description: a model that builds at once
        model: {{target: slow.py:Slow, kwargs: {{seconds: 0}}}}
        inputs: {{args: [{{shape: [2, 4]}}]}}
        checks: [signature]
    """


@pytest.fixture
def slow_project(project: pytest.Pytester) -> pytest.Pytester:
    (project.path / "cases" / "slow.py").write_text(SLOW_MODEL)
    # Shown at once: whatever runs is long enough for the line.
    project.makeini("[pytest]\nexportcheck_progress_seconds = 0.5\n")
    return project


def test_the_slowest_cases_say_where_their_time_went(
    slow_project: pytest.Pytester, dist: list[str]
) -> None:
    write_cases(slow_project, slow_case(1.5))
    result = slow_project.runpytest("--exportcheck", "-p", "no:cacheprovider", *dist)
    result.assert_outcomes(passed=3)
    # Each share is at least what the model sleeps in it (build 1.5 s, export 0.15 s); how
    # much more a busy machine adds is not the point.
    result.stdout.re_match_lines(
        [
            r"=+ exportcheck slowest cases =+",
            r"the \d slowest case\(s\) over 1 s, in seconds summed over their items .*",
            r" *\d+\.\d s  cases/main\.yaml::slow: build \d+\.\d, capture export \d+\.\d, .*parity",
        ]
    )
    (line,) = [line for line in result.outlines if "cases/main.yaml::slow:" in line]
    shares = dict(re.findall(r"(build|capture export) (\d+\.\d)", line))
    assert float(shares["build"]) >= 1.5 and float(shares["capture export"]) >= 0.1, line


def test_without_a_terminal_no_live_line_is_drawn(slow_project: pytest.Pytester) -> None:
    # CI logs: pytester's output is no TTY, so nothing live, even with -v and a long build.
    write_cases(slow_project, slow_case(1.5))
    result = slow_project.runpytest("--exportcheck", "-v", "-p", "no:cacheprovider", "-k", "slow")
    result.assert_outcomes(passed=2)
    assert " s in build" not in result.stdout.str()
    assert "\x1b7" not in result.stdout.str()


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist-2"])
def test_on_a_terminal_a_long_item_shows_its_stage_and_leaves_no_trace(
    slow_project: pytest.Pytester, workers: list[str]
) -> None:
    write_cases(slow_project, slow_case(2.5))
    args = ["--exportcheck", "-p", "no:cacheprovider", "-k", "slow and parity", *workers]
    output = run_on_a_terminal(slow_project.path, args)
    assert "slow::parity[export-cpu]: " in output
    assert re.search(r"slow::parity\[export-cpu\]: \d+ s in build", output), output
    lines = screen(output)
    assert not [line for line in lines if " s in " in line or "parity[export-cpu]:" in line]
    progress = r"cases/main\.yaml \." if not workers else r"\."
    assert any(re.fullmatch(progress + r" +\[100%\]", line) for line in lines), lines
    assert any(re.fullmatch(r"=+ 1 passed.* in .* =+", line) for line in lines), lines


def test_off_is_off_on_a_terminal_too(slow_project: pytest.Pytester) -> None:
    write_cases(slow_project, slow_case(1.5))
    args = ["--exportcheck", "-p", "no:cacheprovider", "-k", "slow and parity"]
    output = run_on_a_terminal(slow_project.path, [*args, "--exportcheck-progress=off"])
    assert "1 passed" in output
    assert "s in build" not in output and "\x1b7" not in output


def run_on_a_terminal(cwd: Path, args: list[str], columns: int = 120) -> str:
    """pytest run on a pseudo-terminal of ``columns``: everything it wrote, as written."""
    import fcntl
    import struct
    import termios

    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = dict(os.environ, TERM="xterm", COLUMNS=str(columns))
    plugin_root = str(Path(pytest_exportcheck.__file__).parents[1])  # this checkout's plugin
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [plugin_root, env.get("PYTHONPATH")]))
    env.pop("PYTEST_ADDOPTS", None)
    process = childkit.GroupPopen(  # its group ends with the test, or the run
        [sys.executable, "-m", "pytest", *args],
        cwd=cwd, stdin=terminal, stdout=terminal, stderr=terminal, env=env, close_fds=True,
        warm=True,  # forked from an interpreter that imported torch: the terminal is its own
    )  # fmt: skip
    os.close(terminal)
    written = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([controller], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the terminal's other end closed: pytest ended
                break
            if not chunk:
                break
            written += chunk
        elif process.poll() is not None:
            break
    process.wait(timeout=30)
    os.close(controller)
    return written.decode("utf-8", "replace")


_ESCAPE = re.compile(r"\x1b(\[[0-9;?]*[A-Za-z]|[78DM])")


def screen(written: str) -> list[str]:
    """The lines a terminal shows after ``written``: just enough of one for pytest's
    colors and the live line's cursor movements (index, reverse index, save and restore
    the cursor, cursor down, erase to the end of the line)."""
    lines: list[list[str]] = [[]]
    row = column = 0
    saved = (0, 0)
    at = 0
    while at < len(written):
        escape = _ESCAPE.match(written, at)
        if escape is not None:
            at, code = escape.end(), escape.group(1)
            if code in ("D", "[B"):
                row += 1
            elif code == "M":
                row -= 1
            elif code == "7":
                saved = (row, column)
            elif code == "8":
                row, column = saved
            elif code == "[K":
                del lines[row][column:]
            lines.extend([] for _ in range(row + 1 - len(lines)))
            continue
        char, at = written[at], at + 1
        if char == "\r":
            column = 0
        elif char == "\n":
            row += 1
            lines.extend([] for _ in range(row + 1 - len(lines)))
        elif char == "\b":
            column = max(0, column - 1)
        else:
            line = lines[row]
            line.extend(" " * (column + 1 - len(line)))
            line[column] = char
            column += 1
    return ["".join(line).rstrip() for line in lines]
