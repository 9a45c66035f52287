"""The shell commands README.md and docs/ show run as written.

Every command a page shows (``dockit.commands``: shell blocks, ``$`` transcripts,
synopses, workflow ``run:`` steps) is either run here or listed in ``NOT_RUN`` with
the reason it cannot run offline in seconds; a command in neither fails the listing
test, so a new one in the docs needs a test or a reason.

A command runs with its own words, in a pytester project that holds the files the page
uses (the README's ``cases/norm.yaml``, the bundled ``models/lm.py`` that the scaffold
page names, the Python API page's ``MyModel`` as ``pkg.mod``), and each test asserts
what the page says it does: its exit status, the files it writes, the lines it quotes.
The one substitution is a GitHub expression (``${{ matrix.group }}``), given a value.
``pytest ...`` and the scaffold (``python -m pytest_exportcheck new``) run in this
process (the suite's one torch import; ``python -m`` puts the current directory on
``sys.path``, so the project's is there too); the other tools import no torch and run
under ``bash``, with this interpreter first on ``PATH``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import childkit
import pytest
import torch
from dockit import ROOT, Command, blocks, commands, contains_in_order, labelled

from pytest_exportcheck.__main__ import main as tools_main
from pytest_exportcheck.model import devices
from pytest_exportcheck.spec.compat import torch_minor

GROUP = r"(\d|\$\{\{ matrix\.group \}\})"  # a job's number, or the workflow's
SHARD = rf"pytest --exportcheck -n auto --splits 3 --group {GROUP} --exportcheck-report[= ]shard-{GROUP}\.json"

# What a test below runs, by pattern (the whole command), for the scenario that runs it.
RUN = {
    r"pytest --exportcheck": "readme",
    r"pytest --exportcheck --exportcheck-devices all": "readme",
    r"pytest --exportcheck cases/state\.yaml -k \"batchnorm and parity\"": "readme",
    r"pytest --exportcheck --exportcheck-(save|load)-programs=programs/": "readme",
    r"pytest --exportcheck --exportcheck-html=report\.html": "readme",
    SHARD: ("readme"),
    r"python -m pytest_exportcheck merge shard-\*\.json -o report\.json": "readme",
    r"python -m pytest_exportcheck html report\.json -o report\.html": "readme",
    r"python -m pytest_exportcheck versions --programs programs --write docs/versions\.md": (
        "readme"
    ),
    r"python -m pytest_exportcheck new .*": "scaffold",
    r"pytest --exportcheck cases/tiny_lm\.yaml": "scaffold",
    r"python -m pytest_exportcheck versions cases( --write docs/versions\.md)?": "versions",
}

# What no test runs, by pattern, and why.
NOT_RUN = {
    r"python3 -m venv .*": "makes a virtual environment and installs into it from an index "
    "(network); CI does it (.ci/run, and .ci/wheel-check for the built wheel)",
    r"pip install .*": "installs from an index (network)",
    r"python -m pytest_exportcheck counts corpus\.json .*": "reads the whole bundled corpus's "
    "report (minutes to make); tests/unit/test_unit_stated_counts.py runs the command on "
    "small reports, tests/plugin/test_documented_counts.py checks the pages it writes",
    r"pytest( -n (auto|2))?": "the project's own tests (~10 min), this module among them",
    r"pytest -m quick -n 2": "the project's quick loop (a minute), the unit tests among them",
    r"python tests/quick_coverage\.py": "the quick loop traced (a minute and more); "
    "tests/unit/test_unit_quick_coverage.py runs its tracer and its count on small cases",
    r"ruff check \. && ruff format --check \.": "the lint step, not the plugin; .ci/run runs it",
    r"mkdocs build --strict": "the docs site (the docs extra); .ci/run builds it strictly",
    r"(\w+=\S+ )*benchmarks/torch_matrix\.sh.*": "installs every torch minor, one virtual "
    "environment each (network, hours)",
    r"tox -e .*": "a tox environment with another torch or with transformers (network)",
    r"pytest --exportcheck --exportcheck-repro=repro": "on the checkout, the bundled corpus "
    "(minutes); tests/plugin/test_reproductions.py runs the option on a project of its own",
    r"pytest --exportcheck -n auto": "on the checkout, the corpus run .ci/run makes (minutes); "
    "-n auto itself runs here in the shard commands (the same project, three xdist runs)",
    r"pytest --exportcheck -vv -k kv_cache": "on the checkout it also selects "
    "cases/lowering.yaml's lowering_kv_cache, whose AOTInductor compile takes minutes",
    r"pytest --exportcheck -n 2 cases/thirdparty": "the bundled ExportDB corpus, part of "
    "the corpus run .ci/run makes (minutes)",
    r"pytest --exportcheck cases/field cases/thirdparty .*": "needs torchvision, timm and "
    "transformers, and downloads weights (network, minutes)",
    r"python benchmarks/field_summary\.py field\.json": "reads field.json, the report of the "
    "field corpus run above it",
    r"pytest --exportcheck --exportcheck-lower aoti,inductor": "compiles C++ with "
    "AOTInductor (tens of seconds a case); tests/plugin/test_lowered.py runs both targets",
    r"pytest --exportcheck -n 2 --exportcheck-compare=r29\.json": "its baseline r29.json is "
    "the report a torch 2.9 environment writes (the tox line above it)",
}

DOCUMENTED = commands()


def classified(command: Command) -> list[str]:
    return [p for p in (*RUN, *NOT_RUN) if re.fullmatch(p, command.text)]


def test_every_documented_command_is_run_or_says_why_not() -> None:
    assert len(DOCUMENTED) > 20, [str(c) for c in DOCUMENTED]
    unknown = [str(c) for c in DOCUMENTED if not classified(c)]
    assert not unknown, (
        "commands the docs show that no test runs and NOT_RUN does not explain "
        f"(run them in a scenario below, or say why not): {unknown}"
    )
    twice = [f"{c}: {classified(c)}" for c in DOCUMENTED if len(classified(c)) > 1]
    assert not twice, twice
    unused = [p for p in (*RUN, *NOT_RUN) if not any(re.fullmatch(p, c.text) for c in DOCUMENTED)]
    assert not unused, f"patterns no documented command matches any more: {unused}"


@dataclass(repr=False)
class Ran:
    command: str
    ret: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()

    def __repr__(self) -> str:  # what an assertion shows: the command and all it printed
        return f"{self.command!r} exited {self.ret}:\n{self.out}\n{self.err}"


class Shell:
    """Runs the documented commands of one scenario in a pytester project."""

    def __init__(
        self, scenario: str, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
    ) -> None:
        self.scenario, self.pytester, self.capsys = scenario, pytester, capsys
        self.ran: set[str] = set()
        pytester.syspathinsert()  # `python -m` runs with the current directory on sys.path

    @property
    def path(self) -> Path:
        return self.pytester.path

    def documented(self, pattern: str) -> list[Command]:
        """The documented commands ``pattern`` (a key of RUN) matches."""
        assert RUN[pattern] == self.scenario, pattern
        found = [c for c in DOCUMENTED if re.fullmatch(pattern, c.text)]
        assert found, f"no page shows a command {pattern!r} any more"
        return found

    def run(self, command: Command, placeholders: dict[str, str] | None = None) -> Ran:
        text = command.text
        for placeholder, value in (placeholders or {}).items():  # ${{ matrix.group }}
            text = text.replace(placeholder, value)
        assert "${{" not in text, f"{command}: give its placeholders a value"
        words = shlex.split(text)
        self.ran.add(command.text)
        in_process = words[0] == "pytest" or words[:4] == [
            "python",
            "-m",
            "pytest_exportcheck",
            "new",
        ]
        # This process runs the words as a shell would pass them; nothing else of a shell.
        assert not (in_process and re.search(r"[|&;$`*?]|>.*>", text)), f"{command}: use bash"
        if words[0] == "pytest":
            result = self.pytester.runpytest(*words[1:])
            return Ran(
                text, int(result.ret), "\n".join(result.outlines), "\n".join(result.errlines)
            )
        if in_process:
            redirect = words.index(">") if ">" in words else None
            self.capsys.readouterr()
            try:
                ret = tools_main(words[3:redirect])
            except SystemExit as exit:  # argparse's usage error: what a shell sees is 2
                ret = exit.code if isinstance(exit.code, int) else 1
            out, err = self.capsys.readouterr()
            if redirect is not None:
                (self.path / words[redirect + 1]).write_text(out)
            return Ran(text, ret, out, err)
        # `python` is this interpreter (a venv's, or one whose `python` is not on PATH).
        bin_dir = self.path.parent / f"{self.path.name}-bin"
        if not bin_dir.exists():
            bin_dir.mkdir()
            (bin_dir / "python").write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
            (bin_dir / "python").chmod(0o755)
        env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
        done = childkit.run(
            ["bash", "-c", text],
            cwd=self.path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return Ran(text, done.returncode, done.stdout, done.stderr)

    def assert_ran_every_command_of_the_scenario(self) -> None:
        mine = {
            c.text for c in DOCUMENTED if any(RUN.get(p) == self.scenario for p in classified(c))
        }
        assert mine - self.ran == set(), f"documented, not run: {sorted(mine - self.ran)}"


@pytest.fixture(autouse=True)
def _outside_github_actions(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a reader's machine: no annotations, nothing appended to a job summary."""
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)


def items_of(report: Path) -> dict[str, str]:
    return {item["nodeid"]: item["outcome"] for item in json.loads(report.read_text())["items"]}


def test_the_readme_case_s_commands(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """README.md's and the quick start's day-to-day runs, programs across versions, the CI
    shards and their merge, the HTML report: on the README's case, which fails twice."""
    shell = Shell("readme", pytester, capsys)
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "norm.yaml").write_text(labelled("case cases/norm.yaml").body)
    failure, matrix = labelled("failure of cases/norm.yaml"), labelled("matrix of cases/norm.yaml")

    (plain,) = shell.documented(r"pytest --exportcheck")
    ran = shell.run(plain)
    assert ran.ret == 1 and "11 items: 9 passed, 2 failed" in ran.lines, ran
    for shown in (failure, matrix):
        assert contains_in_order(ran.lines, shown.body.splitlines()), (
            f"{shown} is not what {plain} prints; it printed:\n{ran.out}"
        )

    (every,) = shell.documented(r"pytest --exportcheck --exportcheck-devices all")
    ran = shell.run(every)
    seen = devices.discover()
    assert ran.ret == 1, ran
    if seen == ["cpu"]:
        assert contains_in_order(ran.lines, matrix.body.splitlines()), ran
    else:
        assert all(any(device in line for line in ran.lines) for device in seen), (seen, ran)

    # Programs across versions: under one torch the second command finds nothing older.
    save, load = shell.documented(
        r"pytest --exportcheck --exportcheck-(save|load)-programs=programs/"
    )
    ran = shell.run(save)
    assert ran.ret == 1, ran
    saved = pytester.path / "programs" / f"torch-{torch_minor()}" / "batchnorm_train"
    assert sorted(p.name for p in saved.iterdir()) == ["export-cpu", "export-strict-cpu"], ran
    ran = shell.run(load)
    assert ran.ret == 1 and "11 items: 9 passed, 2 failed" in ran.lines, ran
    assert "loaded[" not in ran.out, ran
    (table,) = shell.documented(
        r"python -m pytest_exportcheck versions --programs programs --write docs/versions\.md"
    )
    (pytester.path / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "versions.md", pytester.path / "docs" / "versions.md")
    ran = shell.run(table)
    assert ran.ret == 0, ran
    written = (pytester.path / "docs" / "versions.md").read_text()
    assert f"| {torch.__version__} | (nothing older) | 0 | 0 |" in written, ran

    (page_run,) = shell.documented(r"pytest --exportcheck --exportcheck-html=report\.html")
    ran = shell.run(page_run)
    page = pytester.path / "report.html"
    assert ran.ret == 1 and page.read_text().startswith("<!DOCTYPE html>"), ran
    assert "batchnorm_train::mutation[export-cpu]" in page.read_text()

    # The CI shards (parallel.md's job 1; jobs 2 and 3 from the workflow README and
    # parallel.md both give), then their merge. `-n auto` as on a one-core machine: one
    # worker a shard, whatever this machine has.
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "1")
    shards = shell.documented(SHARD)
    assert len(shards) == 2, [str(c) for c in shards]
    job_1, workflow = sorted(shards, key=lambda c: "{" in c.text)
    for group, shard in ((1, job_1), (2, workflow), (3, workflow)):
        ran = shell.run(shard, {"${{ matrix.group }}": str(group)})
        assert f"--group {group} " in ran.command and ran.ret in (0, 1), ran
        assert (pytester.path / f"shard-{group}.json").is_file(), ran
    (merge,) = shell.documented(
        r"python -m pytest_exportcheck merge shard-\*\.json -o report\.json"
    )
    ran = shell.run(merge)
    assert ran.ret == 1, ran  # the merged run's status: two items failed
    assert contains_in_order(ran.lines, matrix.body.splitlines()), ran
    assert "merged 3 shard report(s): report.json and report.md" in ran.lines, ran
    merged = items_of(pytester.path / "report.json")
    assert len(merged) == 11 and sorted(n for n, o in merged.items() if o == "failed") == [
        f"cases/norm.yaml::batchnorm_train::mutation[{capture}-cpu]"
        for capture in ("export", "export-strict")
    ], merged

    (html,) = shell.documented(r"python -m pytest_exportcheck html report\.json -o report\.html")
    before = page.read_text()
    ran = shell.run(html)
    assert (
        ran.ret == 0 and ran.out.strip() == "report.html: the HTML report of report.json (11 items)"
    ), ran
    assert page.read_text() != before and "mutation[export-strict-cpu]" in page.read_text()

    # Last: the bundled state.yaml beside the README's case, as in the checkout.
    for name in ("state.yaml", "state.recorded.json", "models/state.py"):
        (pytester.path / "cases" / name).parent.mkdir(exist_ok=True)
        shutil.copy(ROOT / "cases" / name, pytester.path / "cases" / name)
    (selected,) = shell.documented(
        r"pytest --exportcheck cases/state\.yaml -k \"batchnorm and parity\""
    )
    ran = shell.run(selected)
    assert ran.ret == 0, ran
    # The four parity items of batchnorm_train, the one case the expression selects.
    assert "checks: P parity" in ran.lines and "4 items: 4 passed" in ran.lines, ran
    assert re.findall(r"^  (\w+)  [. ]+$", ran.out, re.M) == ["batchnorm_train"], ran
    shell.assert_ran_every_command_of_the_scenario()


def test_the_scaffold_page_s_commands(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/scaffold.md's commands (and the README's starter): the TinyLM of the bundled
    models/lm.py, and the Python API page's MyModel as the placeholder ``pkg.mod``."""
    shell = Shell("scaffold", pytester, capsys)
    (pytester.path / "models").mkdir()
    shutil.copy(ROOT / "cases" / "models" / "lm.py", pytester.path / "models" / "lm.py")
    (pytester.path / "pkg").mkdir()
    (pytester.path / "pkg" / "__init__.py").write_text("")
    example = next(b for b in blocks() if b.page.name == "python-api.md" and b.lang == "python")
    (pytester.path / "pkg" / "mod.py").write_text(example.body.split("\ndef test_")[0])
    (pytester.path / "cases").mkdir()
    starters = shell.documented(r"python -m pytest_exportcheck new .*")
    (tiny_lm,) = [c for c in starters if "TinyLM" in c.text]
    my_model = [c for c in starters if c is not tiny_lm]

    ran = shell.run(tiny_lm)
    assert ran.ret == 0, ran  # 0: the case was written
    said = labelled("stderr of new models/lm.py:TinyLM")
    assert contains_in_order(ran.err.splitlines(), said.body.splitlines()), (
        f"{said} is not what {tiny_lm} prints; it printed:\n{ran.err}"
    )
    written = (pytester.path / "cases" / "tiny_lm.yaml").read_text()
    assert "target: ../models/lm.py:TinyLM" in written  # rewritten relative to the YAML
    (run_it,) = shell.documented(r"pytest --exportcheck cases/tiny_lm\.yaml")
    ran = shell.run(run_it)
    # pytest's summary line; an in-process run says after it that it was not supervised.
    summary = [line for line in ran.out.splitlines() if line.startswith("=")][-1]
    assert ran.ret == 0 and "11 passed" in summary, ran

    assert {c.text.rsplit(" ", 1)[-1] for c in my_model} == {"cases/my_model.yaml"}, my_model
    for command in my_model:  # each into a fresh cases/my_model.yaml
        (pytester.path / "cases" / "my_model.yaml").unlink(missing_ok=True)
        ran = shell.run(command)
        case = (pytester.path / "cases" / "my_model.yaml").read_text()
        assert ran.ret == 0 and "ran the case on cpu: 5 passed" in ran.err, ran
        assert "target: pkg.mod:MyModel" in case and "modules: [lin, bn]" in case, case
    shell.assert_ran_every_command_of_the_scenario()


def test_the_versions_table_commands(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/versions.md's table, printed and written, from the checkout's recordings."""
    shell = Shell("versions", pytester, capsys)
    shutil.copytree(ROOT / "cases", pytester.path / "cases", ignore=shutil.ignore_patterns("__py*"))
    (pytester.path / "docs").mkdir()
    page = pytester.path / "docs" / "versions.md"
    shutil.copy(ROOT / "docs" / "versions.md", page)
    printed, write = sorted(
        shell.documented(
            r"python -m pytest_exportcheck versions cases( --write docs/versions\.md)?"
        ),
        key=lambda c: len(c.text),
    )
    ran = shell.run(printed)
    table = page.read_text().split("<!-- versions table:")[1].split("\n", 1)[1]
    assert ran.ret == 0 and ran.out.strip() and ran.out.strip() in table, ran
    ran = shell.run(write)
    assert ran.ret == 0 and ran.out.strip() == "docs/versions.md: versions table unchanged", ran
    assert page.read_text() == (ROOT / "docs" / "versions.md").read_text()
    shell.assert_ran_every_command_of_the_scenario()
