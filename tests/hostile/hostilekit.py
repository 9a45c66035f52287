"""Writing hostile cases: each beside the good case, which must still pass."""

from __future__ import annotations

import textwrap

import pytest


def hostile_case(name: str, target: str, **options: str) -> str:
    """One case of ``hostile.py:TARGET``; each option is a YAML line of the case."""
    lines = [
        f"  {name}:",
        "    description: hostile",
        f"    model: {target}",
        "    inputs: {args: [{shape: [2, 4]}]}",
        *[f"    {key}: {value}" for key, value in options.items()],
    ]
    return "\n".join(lines) + "\n"


GOOD = hostile_case("good", "{target: hostile.py:Good}", captures="[export]", checks="[parity]")


def write_hostile(pytester: pytest.Pytester, *cases: str) -> None:
    """A case file with ``cases`` and the good case after them (it must still pass)."""
    text = "cases:\n" + "".join(cases) + GOOD
    (pytester.path / "cases" / "hostile.yaml").write_text(textwrap.dedent(text))


# A `-p` plugin is imported before the plugin decides how to start the session
# (pytest_load_initial_conftests), so a thread it starts at import is there when the
# session's process starts. It records the pid of each process that imports it: the
# parent, and the session where that is a fresh interpreter.
START_PROBE = "exportcheck_start_probe"
_RECORDS_PID = (
    "import os\nwith open('imported.pids', 'a') as file:\n    file.write(f'{os.getpid()}\\n')\n"
)
_STARTS_A_THREAD = (
    "import threading\nthreading.Thread(target=threading.Event().wait, daemon=True).start()\n"
)


def start_probe(pytester: pytest.Pytester, *, threaded: bool) -> tuple[str, ...]:
    """The options of a supervised one-process run with the probe plugin, which starts
    a thread at import where ``threaded``."""
    source = _RECORDS_PID + (_STARTS_A_THREAD if threaded else "")
    (pytester.path / f"{START_PROBE}.py").write_text(source)
    return ("--exportcheck", "-p", "no:xdist", "-p", "no:cacheprovider", "-p", START_PROBE)


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (Linux's /proc): a zombie, ended but not yet
    reaped by its parent, does not."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            return file.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
