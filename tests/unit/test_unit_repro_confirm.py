"""A reproduction's run: the script runs as ``__main__`` from the run's directory, where
torch alone is imported (a fork of a torch-only server, else a new interpreter), and
its exit status and verdict line are its verdict; a run that raised, ran past its
limit or ended the process it was forked from reached none, and says how."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_exportcheck.containment.fork_server import Finished, can_fork
from pytest_exportcheck.repro import confirm as confirming

# What a written script does at its end (repro/script.py): a verdict line, then exit.
SCRIPT = """import os, sys
print("cwd", os.getcwd(), "argv", sys.argv == [__file__], "name", __name__)
names = ("torch", "torch._dynamo", "pytest", "pytest_exportcheck")
print("imported", sorted(m for m in names if m in sys.modules))
print("warned on stderr", file=sys.stderr)
{body}
"""


@pytest.fixture(scope="module", autouse=True)
def _one_server() -> Iterator[None]:
    """The module's runs share the process's server (one torch import), closed at the end."""
    yield
    if confirming._SERVER is not None:
        confirming._SERVER.close()
        confirming._SERVER = None


def write(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "repro" / "case-parity-export-cpu.py"
    script.parent.mkdir(exist_ok=True)
    script.write_text(SCRIPT.format(body=body))
    return script


@pytest.mark.skipif(not can_fork(), reason="os.fork is missing here")
def test_a_script_that_reproduces_runs_as_main_from_the_runs_directory_with_torch_alone(
    tmp_path: Path,
) -> None:
    script = write(tmp_path, 'print("reproduced: outputs differ")\nsys.exit(1)')
    done = confirming.confirm(script, seconds=60, cwd=tmp_path)
    assert done.outcome == confirming.REPRODUCED, done
    assert done.printed.splitlines() == [
        f"cwd {tmp_path} argv True name __main__",
        "imported ['torch', 'torch._dynamo']",  # and what else a first export imports
        "reproduced: outputs differ",
        "warned on stderr",
    ]
    assert done.line(script) == f"reproduced in plain torch: {script}"


def test_without_fork_a_new_interpreter_runs_it_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(confirming, "can_fork", lambda: False)
    script = write(tmp_path, 'print("not reproduced: the outputs agree")')
    done = confirming.confirm(script, seconds=60, cwd=tmp_path)
    assert done.outcome == confirming.NOT_REPRODUCED, done
    assert done.printed.splitlines()[0] == f"cwd {tmp_path} argv True name __main__"
    assert done.line(script) == (
        "not reproduced outside the plugin: this verdict may be the plugin's own error "
        f"({script}: not reproduced: the outputs agree)"
    )


@pytest.mark.parametrize("forked", [True, False], ids=["forked", "new interpreter"])
def test_a_script_that_raises_or_runs_past_its_limit_reaches_no_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forked: bool
) -> None:
    if forked and not can_fork():
        pytest.skip("os.fork is missing here")
    monkeypatch.setattr(confirming, "can_fork", lambda: forked)
    raised = confirming.confirm(
        write(tmp_path, "raise ValueError('broken')"), seconds=60, cwd=tmp_path
    )
    assert raised.outcome == confirming.NO_VERDICT
    assert raised.why.startswith("exit status 1: ") and "ValueError: broken" in raised.why
    # Exit 1 without its verdict line is not "reproduced".
    silent = confirming.confirm(write(tmp_path, "sys.exit(1)"), seconds=60, cwd=tmp_path)
    assert (silent.outcome, silent.why) == (
        confirming.NO_VERDICT, "exit status 1: " + " | ".join(silent.printed.splitlines())
    )  # fmt: skip
    slow = confirming.confirm(
        write(tmp_path, "import time\ntime.sleep(60)"), seconds=0.5, cwd=tmp_path
    )
    assert (slow.outcome, slow.why) == (confirming.NO_VERDICT, "it ran past 0.5 s")
    assert slow.line(tmp_path) == (
        f"the plain-torch reproduction reached no verdict (it ran past 0.5 s): {tmp_path}"
    )


def test_a_script_that_ended_the_server_it_was_forked_from_reaches_no_verdict(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    class EndedServer:
        def run(self, argv: list[str], output: Path, timeout: float, **kwargs: object) -> Finished:
            return Finished(None, "printed\n", server_ended=-9)

    monkeypatch.setattr(confirming, "can_fork", lambda: True)
    monkeypatch.setattr(confirming, "_SERVER", EndedServer())
    done = confirming.confirm(tmp_path / "script.py", seconds=60, cwd=tmp_path)
    assert (done.outcome, done.printed) == (confirming.NO_VERDICT, "printed\n")
    assert done.why == "the torch-only process it was forked from ended (killed by SIGKILL)"
