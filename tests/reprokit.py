"""Running reproduction scripts as a user would, at one interpreter's cost for many.

Each script is its own ``__main__`` (``runpy``), its output and exit status kept
apart; they share one fresh interpreter, so a test pays torch's import once for
every script of a project rather than once per script. The plugin's own run of
each script, where torch alone is imported, is what the project runs assert
(``repro_outcome``); these runs add the fixed model and the imports check.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import childkit

# The failure most reproduction tests show, as a case's model source (``torch`` and
# ``nn`` imported by the file around it): a count kept in a Python int, which the
# program bakes at the value it was traced with (parity at step 2, mutation's steps);
# and the model fixed, the count in a buffer the program carries.
BAKED = '''
class Baked(nn.Module):
    """Counts calls in a Python int: the program bakes the count it was traced with."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.lin(x) * self.calls
'''
BAKED_FIXED = '''
class Baked(nn.Module):
    """The count in a buffer: the program carries it."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls.add_(1)
        return self.lin(x) * self.calls
'''

# Runs each script given, then prints one JSON line: per script its status and its
# output, and the modules of pytest or this plugin the interpreter ever imported.
DRIVER = """
import contextlib, io, json, runpy, sys
results = {}
for path in sys.argv[1:]:
    out = io.StringIO()
    status = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as exc:
            status = exc.code
    # The case's own modules come from the project: the next script imports them anew.
    for name in [m for m, mod in sys.modules.items()
                 if getattr(mod, "__file__", None) and "site-packages" not in mod.__file__
                 and not mod.__file__.startswith(sys.base_prefix)]:
        del sys.modules[name]
    results[path] = [status, out.getvalue()]
imported = sorted(m for m in sys.modules if m.split(".")[0] in ("pytest", "_pytest", "pytest_exportcheck"))
print("RESULTS " + json.dumps({"results": results, "imported": imported}))
"""


def project_run(
    root: Path, models: str, cases: str, *args: str, before: Callable[[], object] | None = None
) -> tuple[Path, str, dict[str, dict]]:
    """``root/cases`` written (``models.py``, ``main.yaml``) and run once with
    ``--exportcheck-repro=repro --exportcheck-report=report.json`` and ``args``, in a
    process of its own, as a user runs it: the project, the run's output, and its JSON
    report's items by node id. ``before`` runs once the files are written."""
    (root / "cases").mkdir()
    (root / "cases" / "models.py").write_text(models)
    (root / "cases" / "main.yaml").write_text(cases)
    if before is not None:
        before()
    done = childkit.run(
        [
            sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--exportcheck",
            "cases", "--exportcheck-repro=repro", "--exportcheck-report=report.json", *args,
        ],
        cwd=root, capture_output=True, text=True, timeout=600, warm=True,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    items = {i["nodeid"]: i for i in json.loads((root / "report.json").read_text())["items"]}
    return root, done.stdout, items


def copied_project(root: Path, to: Path, folders: tuple[str, ...] = ("cases", "repro")) -> Path:
    """``root``'s ``folders`` copied under ``to/project``, every script there pointed at
    the copy's files (a script names the case's files where it was written), so a test
    may fix the copy's model and leave the shared project as its run left it."""
    copy = to / "project"
    for folder in folders:
        shutil.copytree(root / folder, copy / folder)
    for path in (copy / "repro").glob("*.py"):
        path.write_text(path.read_text().replace(str(root), str(copy)))
    return copy


def run_scripts(root: Path, paths: list[Path], timeout: float = 300) -> dict[str, tuple[int, str]]:
    """Each script's (exit status, output), run in one fresh interpreter from ``root``.
    Asserts the interpreter imported neither pytest nor this plugin."""
    done = childkit.run(
        [sys.executable, "-c", DRIVER, *map(str, paths)],
        cwd=root, capture_output=True, text=True, timeout=timeout, warm=True,
    )  # fmt: skip
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULTS ")), None)
    assert line is not None, done.stdout + done.stderr
    found = json.loads(line.removeprefix("RESULTS "))
    assert found["imported"] == [], "a reproduction imports neither pytest nor this plugin"
    return {Path(p).name: (status, text) for p, (status, text) in found["results"].items()}


def shown_then_not_once_fixed(
    copy: Path, shown: dict[str, str], fixed: str
) -> tuple[dict[str, tuple[int, str]], dict[str, tuple[int, str]]]:
    """Each script of ``shown`` under ``copy/repro`` exits 1 printing its text; with
    ``copy``'s ``models.py`` replaced by ``fixed``, each exits 0, "not reproduced". Both
    runs' results, for what a test reads further."""
    paths = [copy / "repro" / name for name in shown]
    before = run_scripts(copy, paths)
    for name, (status, printed) in before.items():
        assert status == 1, (name, printed)
        assert shown[name] in printed, (name, printed)
    (copy / "cases" / "models.py").write_text(fixed)
    after = run_scripts(copy, paths)
    for name, (status, printed) in after.items():
        assert status == 0, (name, printed)
        assert "not reproduced" in printed, (name, printed)
    return before, after
