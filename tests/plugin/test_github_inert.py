"""Under GitHub Actions a model's text cannot act on the runner: every line of it the run
prints is inert, and the job summary shows its HTML as text. Only the plugin's own
annotations are workflow commands."""

from __future__ import annotations

import re

import pytest
from casekit import write_cases

# Each workflow command a hostile message might carry, at a line start after \n or \r,
# indented, and in the old ##[...] form.
COMMANDS = [
    "::error file=cases/main.yaml,line=1::forged <img src=x onerror=alert(1)>",
    "::add-mask::secret",
    "::stop-commands::TOKEN",
    "   ::warning::indented",
    "::set-output name=x::y",
    "##[error]old form",
]
HOSTILE = "\\n".join(COMMANDS) + "\\r::notice::after a carriage return"

MODELS = f'''
import warnings

import torch
from torch import nn


class Loud(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        print("{HOSTILE}")
        warnings.warn("{HOSTILE}")
        if not torch.compiler.is_compiling() and x.shape[0] == 3:
            raise RuntimeError("{HOSTILE}")
        return self.lin(x)
'''

# Eager raises on the declared input: the item fails at [eager], printing the message.
CASES = """
cases:
  loud:
    description: a model whose messages are workflow commands
    model: {target: loud.py:Loud}
    inputs: {args: [{shape: [3, 4]}]}
    checks: [parity]
"""


def lines_the_runner_reads(text: str) -> list[str]:
    """The output as GitHub's runner splits it, each line with its leading space trimmed."""
    return [line.lstrip() for line in re.split(r"\r\n|\r|\n", text)]


@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["one", "xdist"])
def test_no_line_of_a_models_text_is_a_workflow_command(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str]
) -> None:
    (project.path / "cases" / "loud.py").write_text(MODELS)
    write_cases(project, CASES)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(project.path / "summary.md"))
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    result = project.runpytest("--exportcheck", "-p", "no:cacheprovider", "-rA", *workers)
    result.assert_outcomes(failed=1)
    out = result.stdout.str() + result.stderr.str()
    commands = [line for line in lines_the_runner_reads(out) if line.startswith("::")]
    # The one command is the plugin's annotation of the failure.
    assert len(commands) == 1, commands
    assert commands[0].startswith("::error file=cases/main.yaml,")
    assert (
        "the eager forward raised: RuntimeError: ::error file=cases/main.yaml,line=1::forged"
        in commands[0]
    )
    assert "##[" not in out
    # The text is shown, not dropped: each command as an inert line.
    for command in COMMANDS[1:5]:
        assert f"| {command.lstrip()}" in out or f"|    {command.lstrip()}" in out, command
    assert "## [error]old form" in out
    summary = (project.path / "summary.md").read_text()
    assert "<img" not in summary
    assert "&lt;img src=x onerror=alert(1)&gt;" in summary
