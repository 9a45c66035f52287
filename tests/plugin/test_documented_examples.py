"""The documentation's examples are true.

- every case, and every fragment of one, in README.md and docs/ passes the case loader
  (a fragment inside a small case that gives it the inputs it names);
- every option and ini key the pages name exists;
- every Python block runs: a test module's tests pass under pytest, a conftest's hooks
  run in a pytest run under xdist (``-n 2``), anything else runs as a script;
  every other YAML block is YAML;
- every page of docs/ is in the site's navigation, and the README stays a first screen.

The shell commands the pages show, the README case's run among them, are run by
test_documented_commands.py.

An example may be a sketch (``{...}`` standing for what it leaves out): it says so
in an HTML comment above it, ``<!-- example: sketch -->``, and is parsed only. A
Python example that imports a module of the reader's own says so the same way,
``<!-- example: needs my_models -->``, and runs with an empty stand-in for it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from dockit import PAGES, ROOT, Block, blocks

from pytest_exportcheck import plugin
from pytest_exportcheck.items.time_spent import BUILD_PROPERTY, CAPTURED_PROPERTY, FIRST_PROPERTY
from pytest_exportcheck.spec.errors import SpecError
from pytest_exportcheck.spec.load import load_case_file

# A fragment of a case (its lines indented under a case name) is loaded inside this
# case: the inputs the pages' fragments place dims on, a model that takes anything.
FRAGMENT_HOST = """\
cases:
  example:
    description: the case a documented fragment is loaded in
    model: {target: "torch.nn:Identity"}
    inputs:
      args: [{shape: [2, 4]}, {shape: [2, 8]}, {shape: [3]}, {shape: [5]}]
      kwargs: {mask: {shape: [2]}}
"""


def case_blocks() -> list[Block]:
    return [
        b
        for b in blocks()
        if b.lang == "yaml" and (b.body.startswith("cases:") or b.body.startswith("    "))
    ]


@pytest.mark.parametrize("block", case_blocks(), ids=str)
def test_a_documented_case_passes_the_loader(block: Block, tmp_path: Path) -> None:
    if block.label == "sketch":
        assert isinstance(yaml.safe_load(block.body), (dict, type(None)))
        return
    text = block.body if block.body.startswith("cases:") else FRAGMENT_HOST + block.body
    path = tmp_path / "case.yaml"
    path.write_text(text)
    try:
        loaded = load_case_file(path)
    except SpecError as error:
        pytest.fail(f"{block}: {error}")
    errors = [str(case.error) for case in loaded if case.error]
    assert not errors, f"{block}: {errors}"


def test_every_other_yaml_block_is_yaml() -> None:
    checked = 0
    for block in blocks():
        if block.lang == "yaml" and block not in case_blocks():
            yaml.safe_load(block.body)
            checked += 1
    assert checked >= 2  # the workflows


def python_blocks() -> list[Block]:
    found = [b for b in blocks() if b.lang == "python"]
    assert {str(b.page.relative_to(ROOT)) for b in found} >= {"docs/python-api.md"}
    return found


@pytest.mark.parametrize("block", python_blocks(), ids=str)
def test_every_python_example_runs(block: Block, pytester: pytest.Pytester) -> None:
    assert block.label != "sketch", f"{block}: a Python example runs; write it whole"
    needs = (block.label or "").removeprefix("needs ").split() if block.label else []
    for module in needs:  # the reader's own modules: an empty stand-in each
        (pytester.path / f"{module}.py").write_text("")
    pytester.syspathinsert()
    if re.search(r"^def test_", block.body, re.M):
        (pytester.path / "test_example.py").write_text(block.body)
        result = pytester.runpytest("-p", "no:cacheprovider", "test_example.py")
        tests = len(re.findall(r"^def test_", block.body, re.M))
        assert result.ret == 0 and result.parseoutcomes() == {"passed": tests}, (
            f"{block}:\n" + "\n".join(result.outlines)
        )
    elif re.search(r"^def pytest_", block.body, re.M):
        (pytester.path / "conftest.py").write_text(block.body)
        # Each stand-in the hooks import is there in the worker that runs a test.
        imported = " and ".join(f"{m!r} in sys.modules" for m in needs) or "True"
        test = f"import sys\n\ndef test_hooks_ran():\n    assert {imported}\n"
        (pytester.path / "test_example.py").write_text(test)
        result = pytester.runpytest("-p", "no:cacheprovider", "-n", "2", "test_example.py")
        assert result.ret == 0, f"{block}:\n" + "\n".join(result.outlines)
    else:
        exec(compile(block.body, str(block), "exec"), {"__name__": "__example__"})


class _Options:
    """What ``pytest_addoption`` declares: options and ini keys."""

    def __init__(self) -> None:
        self.options: set[str] = set()
        self.ini: set[str] = set()

    def getgroup(self, *args: object, **kwargs: object) -> _Options:
        return self

    def addoption(self, *names: str, **kwargs: object) -> None:
        self.options.update(names)

    def addini(self, name: str, *args: object, **kwargs: object) -> None:
        self.ini.add(name)


def test_every_option_and_ini_key_the_pages_name_exists() -> None:
    declared = _Options()
    plugin.pytest_addoption(declared)  # type: ignore[arg-type]
    named_options: set[str] = set()
    named_keys: set[str] = set()
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        named_options.update(re.findall(r"--exportcheck[a-z-]*[a-z]", text))
        named_keys.update(re.findall(r"\bexportcheck_[a-z_]*[a-z]\b", text))
    assert named_options and named_keys
    assert named_options <= declared.options, sorted(named_options - declared.options)
    # Items' user properties carry exportcheck_ names that are not keys.
    properties = {"exportcheck_gaps", BUILD_PROPERTY, CAPTURED_PROPERTY, FIRST_PROPERTY}
    unknown = named_keys - declared.ini - properties
    assert not unknown, sorted(unknown)


def test_every_page_is_in_the_navigation_and_the_readme_is_a_first_screen() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    navigated = set(re.findall(r":\s*([\w-]+\.md)\s*$", config, re.M))
    pages = {path.name for path in (ROOT / "docs").glob("*.md")}
    assert navigated == pages
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 250
    for name in pages:
        assert f"(docs/{name})" in readme or name == "index.md", f"README links no {name}"
