"""The GitHub Actions workflow the README and docs/parallel.md give: it installs what exists.

The plugin is on no package index yet, so the workflow installs the wheel ``python -m
build`` makes (``.ci/wheel-check`` builds and runs that very wheel); one ``env`` line
names it, to become ``pytest-exportcheck`` the day the package is published.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("README.md", "docs/parallel.md")
INDEX_PACKAGES = {"torch==2.13.0", "numpy", "pytest-split"}  # on PyPI; the plugin is not


def workflow_text(page: str) -> str:
    text = (ROOT / page).read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "jobs:" in b]
    assert len(blocks) == 1, f"{page}: expected one workflow block, found {len(blocks)}"
    return blocks[0]


def built_wheel_name() -> str:
    """The file name ``python -m build --wheel`` gives this project (PEP 427)."""
    # A regex, not tomllib: the project supports Python 3.10, which has none.
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    project = dict(re.findall(r'^(name|version) = "([^"]+)"', text, re.M))
    name = re.sub(r"[-_.]+", "_", project["name"]).lower()
    return f"{name}-{project['version']}-py3-none-any.whl"


def test_the_pages_give_one_workflow() -> None:
    assert workflow_text("README.md") == workflow_text("docs/parallel.md")


@pytest.mark.parametrize("page", PAGES)
def test_the_workflow_installs_the_wheel_the_build_makes(page: str) -> None:
    workflow = yaml.safe_load(workflow_text(page))
    assert Path(workflow["env"]["EXPORTCHECK"]).name == built_wheel_name()
    for job_name, job in workflow["jobs"].items():
        steps = job["steps"]
        installs = [i for i, s in enumerate(steps) if "pip install" in s.get("run", "")]
        assert installs, f"{job_name} installs nothing"
        for index in installs:
            words = steps[index]["run"].split("pip install", 1)[1].split()
            unknown = [w for w in words if w not in INDEX_PACKAGES | {'"$EXPORTCHECK"'}]
            assert not unknown, f"{page} {job_name}: installs {unknown}, on no index"
            assert '"$EXPORTCHECK"' in words, f"{page} {job_name}: not the plugin's wheel"
            checkouts = [
                s for s in steps[:index] if s.get("uses", "").startswith("actions/checkout")
            ]
            assert checkouts, f"{page} {job_name}: installs the committed wheel before a checkout"


@pytest.mark.parametrize("page", PAGES)
def test_a_failing_shard_still_uploads_its_report(page: str) -> None:
    shard = yaml.safe_load(workflow_text(page))["jobs"]["shard"]
    uploads = [s for s in shard["steps"] if s.get("uses", "").startswith("actions/upload")]
    assert uploads and all(s.get("if") == "always()" for s in uploads)
