"""The quick loop's coverage check (tests/quick_coverage.py, tests/quick_trace.py): a module
none of whose functions a quick test called is named; the tracer records calls in the
process it is imported into and in that process's forked children."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import childkit
import pytest
import quick_coverage

TESTS = Path(__file__).resolve().parents[1]

PACKAGE = {
    "__init__.py": '"""A package."""\n',
    "called.py": "def used():\n    return [i for i in range(2)]\n\n\ndef unused():\n    pass\n",
    "uncalled.py": "class Thing:\n    def method(self):\n        pass\n\n\nVALUE = [i for i in range(3)]\n",
    "constants.py": "LIMIT = 3\nNAMES = {k: k for k in 'ab'}\n",
    "unimported.py": "NOTHING = None\n",
}


def test_functions_are_named_by_first_line_and_qualified_name_without_comprehensions() -> None:
    source = PACKAGE["called.py"] + "\nclass A:\n    f = lambda self: 1\n"
    assert quick_coverage.functions_of(source, "called.py") == {
        (1, "used"),
        (5, "unused"),
        (9, "A.<lambda>"),
    }


def test_a_module_counts_when_one_function_ran_or_it_has_none_and_was_imported(
    tmp_path: Path,
) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    for name, text in PACKAGE.items():
        (package / name).write_text(text)
    trace = [
        f"{package / '__init__.py'}\t1\t<module>\n",
        f"{package / 'called.py'}\t1\t<module>\n",
        f"{package / 'called.py'}\t1\tused\n",
        f"{package / 'called.py'}\t2\tused.<locals>.<listcomp>\n",
        # Importing runs the class body and the module's comprehension: not a function call.
        f"{package / 'uncalled.py'}\t1\t<module>\n",
        f"{package / 'uncalled.py'}\t1\tThing\n",
        f"{package / 'uncalled.py'}\t6\t<listcomp>\n",
        f"{package / 'constants.py'}\t1\t<module>\n",
        f"{package / 'constants.py'}\t2\t<dictcomp>\n",
        "a line torn in half\n",
    ]
    rows = {
        row.module: (row.called, row.functions, row.exercised)
        for row in quick_coverage.coverage(package, quick_coverage.read_trace(trace))
    }
    assert rows == {
        "pkg/__init__.py": (0, 0, True),
        "pkg/called.py": (1, 2, True),
        "pkg/constants.py": (0, 0, True),
        "pkg/uncalled.py": (0, 1, False),
        "pkg/unimported.py": (0, 0, False),
    }


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the forked child is the point")
def test_the_tracer_records_the_package_in_the_process_and_its_forked_child(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "trace.tsv"
    script = (
        "import os, quick_trace\n"
        "from pytest_exportcheck.spec import yaml_lines\n"
        "from pytest_exportcheck.reports import slowest\n"
        "yaml_lines.load_yaml('a: 1')\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    slowest.render([])\n"
        "    os._exit(0)\n"
        "os.waitpid(pid, 0)\n"
    )
    env = dict(os.environ, EXPORTCHECK_QUICK_TRACE=str(trace))
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS.parent), str(TESTS)])
    childkit.run([sys.executable, "-c", script], env=env, check=True, timeout=60)
    ran = quick_coverage.read_trace(trace.read_text().splitlines())
    package = TESTS.parent / "pytest_exportcheck"
    assert (1, "<module>") in ran[os.path.realpath(package / "spec" / "yaml_lines.py")]
    names = {name for name_set in ran.values() for _, name in name_set}
    assert {"load_yaml", "render"} <= names, sorted(names)
