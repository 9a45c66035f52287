"""``--exportcheck-repro=DIR``: each failure gets a plain-torch script that shows it.

One run of a project holds a model per finding kind the scripts cover, each broken on
purpose: a capture that refuses a data-dependent branch, a count kept in a Python int
that the program bakes (parity over two steps, and mutation's stepped runs), and a
case whose finding no script covers yet (``dynamic:``). The run is shared by the
tests; each script is then run again by itself, in a fresh interpreter, as a user
would, before and after its model is fixed.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import childkit
import pytest
from reprokit import (
    BAKED,
    BAKED_FIXED,
    copied_project,
    project_run,
    run_scripts,
    shown_then_not_once_fixed,
)

MODELS = (
    """
import torch
from torch import nn


class Refused(nn.Module):
    \"\"\"Branches on a value: export refuses it (a data-dependent guard).\"\"\"

    def forward(self, x):
        if x.sum() > 0:
            return x + 1
        return x - 1


"""
    + BAKED
    + """


class Shared(nn.Module):
    \"\"\"One block under two names: unflatten gives back two.\"\"\"

    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 4)
        self.dec = self.enc

    def forward(self, x):
        return self.dec(self.enc(x))


class Sized(nn.Module):
    \"\"\"Specializes the dynamic batch: the shapes check finds it.\"\"\"

    def forward(self, x):
        return x * 2 if x.shape[0] == 2 else x
"""
)

FIXED = (
    """
import torch
from torch import nn


class Refused(nn.Module):
    def forward(self, x):
        return torch.where(x.sum() > 0, x + 1, x - 1)


"""
    + BAKED_FIXED
    + """


class Shared(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 4)
        self.dec = nn.Linear(4, 4)

    def forward(self, x):
        return self.dec(self.enc(x))


class Sized(nn.Module):
    def forward(self, x):
        return x.relu()
"""
)

CASES = """
cases:
  refused:
    description: a data-dependent branch
    model: {target: models.py:Refused}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [parity, mutation]
  baked:
    description: a count the program bakes
    model: {target: models.py:Baked}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [parity, mutation]
    expect: {parity: {steps: 2}}
  sized:
    description: a dim the model specializes
    model: {target: models.py:Sized}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [shapes, parity]
    dynamic:
      dims: {batch: {min: 1, max: 8}}
      shapes: {"args[0]": {0: batch}}
  shared:
    description: a block under two names
    model: {target: models.py:Shared}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [hierarchy]
  passing:
    description: an xfail its export no longer needs
    model: {target: models.py:Baked}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [parity]
    xfail: {reason: the capture once refused it, stage: capture}
  named:
    description: a placeholder expected under another name
    model: {target: models.py:Sized}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [signature]
    captures: [dynamo-legacy]
    expect:
      placeholders: [{name: y, kind: user_input}]
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict]:
    """The project, the run's output and its JSON report's items by node id."""
    root = tmp_path_factory.mktemp("repro")
    return project_run(root, MODELS, CASES, "--exportcheck-html=page.html")


def test_each_failure_names_its_script_and_the_verdict_of_its_run(project: tuple) -> None:
    root, _, items = project
    for nodeid, script in [
        ("cases/main.yaml::refused::parity[export-cpu]", "refused-capture-export-cpu.py"),
        ("cases/main.yaml::refused::mutation[export-cpu]", "refused-capture-export-cpu.py"),
        ("cases/main.yaml::baked::parity[export-cpu]", "baked-parity-export-cpu.py"),
        ("cases/main.yaml::baked::mutation[export-cpu]", "baked-mutation-export-cpu.py"),
        ("cases/main.yaml::sized::shapes[export-cpu]", "sized-capture-export-cpu.py"),
        ("cases/main.yaml::sized::parity[export-cpu]", "sized-capture-export-cpu.py"),
        ("cases/main.yaml::shared::hierarchy[export-cpu]", "shared-hierarchy-export-cpu.py"),
    ]:
        item = items[nodeid]
        assert item["outcome"] == "failed", item
        assert item["repro"] == str(root / "repro" / script)
        assert item["repro_outcome"] == "reproduced"
        assert f"reproduced in plain torch: {root / 'repro' / script}" in item["text"]
    # The headline, the short summary's line, carries it too.
    assert "; reproduced in plain torch: " in items[nodeid]["message"]
    assert sorted(p.name for p in (root / "repro").iterdir()) == [
        "baked-mutation-export-cpu.py",
        "baked-parity-export-cpu.py",
        "passing-capture-export-cpu.py",
        "refused-capture-export-cpu.py",
        "shared-hierarchy-export-cpu.py",
        "sized-capture-export-cpu.py",
    ]


def test_a_finding_no_script_covers_yet_is_counted_as_such(project: tuple) -> None:
    _, out, items = project
    named = items["cases/main.yaml::named::signature[dynamo-legacy-cpu]"]
    assert named["outcome"] == "failed", named
    assert named["repro"] is None
    assert named["repro_outcome"] == (
        "no plain reproduction yet: the signature finding of a dynamo-legacy capture is not written yet"
    )
    assert "exportcheck reproductions: 6 scripts under " in out, out
    assert (
        "of 9 failures, 7 reproduced in plain torch, 0 not reproduced outside the plugin, "
        "0 reached no verdict, 0 not run, 1 with no plain reproduction yet, "
        "XPASS(strict): 1 gone in plain torch too, 0 still shows in plain torch"
    ) in out, out


def test_an_xpass_is_confirmed_by_the_script_of_the_finding_its_xfail_expects(
    project: tuple,
) -> None:
    root, _, items = project
    item = items["cases/main.yaml::passing::parity[export-cpu]"]
    assert item["outcome"] == "failed" and "[XPASS(strict)]" in item["text"], item
    assert item["repro"] == str(root / "repro" / "passing-capture-export-cpu.py")
    assert item["repro_outcome"] == "gone in plain torch too"
    assert "the xfail's finding is gone in plain torch too: " in item["text"], item["text"]


def test_the_markdown_and_the_page_carry_each_reproduction(project: tuple) -> None:
    root, _, _ = project
    script = root / "repro" / "baked-parity-export-cpu.py"
    markdown = (root / "report.md").read_text()
    assert "| item | stage | message | plain-torch reproduction |" in markdown
    assert f"| reproduced in plain torch<br>`{script}` |" in markdown
    page = (root / "page.html").read_text()
    found = re.search(r'<script type="application/json" id="exportcheck-data">(.*?)</script>',
                      page, re.S)  # fmt: skip
    assert found
    held = json.loads(found.group(1))["scripts"]
    assert sorted(Path(p).name for p in held) == sorted(p.name for p in (root / "repro").iterdir())
    assert held[str(script)] == {"text": script.read_text()}


SHOWN = {
    "refused-capture-export-cpu.py": "reproduced: the capture raised",
    "baked-parity-export-cpu.py": "reproduced: ep.module(), step 2/2",
    "baked-mutation-export-cpu.py": "after step 2/3",
    "sized-capture-export-cpu.py": "reproduced: the capture raised",
    "shared-hierarchy-export-cpu.py": "'enc' and 'dec' are one module in eager but two",
}


def test_a_script_shows_the_finding_then_not_once_the_model_is_fixed(
    project: tuple, tmp_path: Path
) -> None:
    shown_then_not_once_fixed(copied_project(project[0], tmp_path), SHOWN, FIXED)


@pytest.mark.quick  # the one in-process run that writes and runs a script
def test_a_verdict_the_plugin_alone_reaches_is_said_loudly(pytester: pytest.Pytester) -> None:
    """A comparison broken on purpose: the plugin fails a correct export, its script
    shows nothing, and the failure says the verdict may be the plugin's own error."""
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "models.py").write_text(FIXED)
    (pytester.path / "cases" / "main.yaml").write_text(
        "cases:\n  fine:\n    description: a correct export\n"
        "    model: {target: models.py:Sized}\n    inputs: {args: [{shape: [2, 4]}]}\n"
        "    checks: [parity]\n"
    )
    # Patched for this one in-process run, and put back at its end.
    pytester.makeconftest(
        """
        from pytest_exportcheck.checks import parity

        ORIGINAL = parity.compare_trees


        def pytest_configure(config):
            parity.compare_trees = lambda *args, **kwargs: ["output: broken on purpose"]


        def pytest_unconfigure(config):
            parity.compare_trees = ORIGINAL
        """
    )
    result = pytester.runpytest("--exportcheck", "cases", "--exportcheck-repro=repro")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*not reproduced outside the plugin: this verdict may be the plugin's own error*",
            "legend: * ? failed, not reproduced in plain torch (may be the plugin's own "
            "error)  (blank: no such item)",
            "  fine * ?",  # its matrix cell: told apart from F
            "*of 1 failures, 0 reproduced in plain torch, 1 not reproduced outside the plugin*",
            "*1 verdict(s) that plain torch contradicts may be the plugin's own error*",
        ]
    )


def test_the_command_writes_one_items_script_from_a_report(project: tuple, tmp_path: Path) -> None:
    root, _, _ = project
    out = tmp_path / "one.py"
    nodeid = "cases/main.yaml::refused::mutation[export-cpu]"
    done = childkit.run(
        [
            sys.executable, "-m", "pytest_exportcheck", "repro", nodeid,
            "--report", "report.json", "-o", str(out),
        ],
        cwd=root, capture_output=True, text=True, timeout=120, warm=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "EXPECTED_ERROR = 'GuardOnDataDependentSymNode'" in text, text[:3000]
    assert f"# item:    {nodeid}" in text
    ((status, printed),) = run_scripts(root, [out]).values()
    assert status == 1 and "reproduced: the capture raised" in printed, printed
    unknown = childkit.run(
        [sys.executable, "-m", "pytest_exportcheck", "repro", "cases/main.yaml::nope::parity[export-cpu]"],
        cwd=root, capture_output=True, text=True, timeout=120, warm=True,
    )  # fmt: skip
    assert unknown.returncode == 2 and "case 'nope': no such case" in unknown.stderr
