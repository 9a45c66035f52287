"""The saved-and-loaded program: what torch.export.save and load do under the plugin is what
they do in plain torch, and what torch logs while they fail is part of the finding.

Each model here is one torch 2.13 really treats that way: a dataclass input makes
``load`` log a malformed message, a forward argument named ``input`` is renamed by a
deep copy, a ``ModuleDict`` key with a comma is a name ``load`` cannot split.
"""

from __future__ import annotations

import pytest
from casekit import load_older, saved_as_older, write_cases

SAVED_MODELS = '''
import dataclasses

import torch
from torch import nn


@dataclasses.dataclass
class Pair:
    a: torch.Tensor
    b: torch.Tensor


torch.export.register_dataclass(Pair, serialized_type_name="saved_models.Pair")


class TakesPair(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, pair):
        return self.lin(pair.a) + pair.b


def make_pair():
    return (Pair(torch.randn(2, 4), torch.randn(2, 4)),), {}


class NamedInput(nn.Module):
    """A forward argument named as torchvision's lraspp_mobilenet_v3_large names it."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, input):
        return self.lin(input)


class CommaKey(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.heads = nn.ModuleDict({"a,b": nn.Linear(4, 4)})

    def forward(self, x):
        return self.heads["a,b"](x)
'''


def cases(project: pytest.Pytester, model: str, inputs: str, *more: str) -> None:
    """One case ``saved``; ``more``: further keys of it, one a line."""
    (project.path / "cases" / "saved_models.py").write_text(SAVED_MODELS)
    keys = "".join(f"    {key}\n" for key in more)
    write_cases(
        project,
        "cases:\n  saved:\n    description: a model whose program is saved and loaded\n"
        f"    model: {{target: saved_models.py:{model}}}\n    inputs: {inputs}\n"
        f"    checks: [parity]\n{keys}",
    )


def test_a_dataclass_input_loads_under_pytests_log_capture_on_every_path(
    project: pytest.Pytester,
) -> None:
    # torch.export.load logs "... of type %s after initial failure: %s" with one
    # argument; pytest's LogCaptureHandler (on: no -p no:logging) re-raises the
    # formatting error into load. Every load runs here: parity's saved-and-loaded
    # program, lowered[saved] (and its fresh process), the program saved for a later
    # torch, and the loaded[...] item that loads it again.
    lowered = ["lower: [saved]", "load_imports: [saved_models.py]"]
    cases(project, "TakesPair", "{factory: saved_models.py:make_pair}", *lowered)
    _, result = saved_as_older(project, "2.1.0", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*saved::lowered[[]saved-export-cpu[]] PASSED*"])
    loaded = load_older(project, "-v")
    loaded.assert_outcomes(passed=1)
    loaded.stdout.fnmatch_lines(["*saved::loaded[[]2.1-export-cpu[]] PASSED*"])


def test_a_forward_argument_named_input_is_saved(project: pytest.Pytester) -> None:
    # copy.deepcopy(ep) names the placeholder input_1 (FX will not shadow a builtin)
    # while the signature keeps input: torch.export.save of such a copy refuses it.
    cases(project, "NamedInput", "{args: [{shape: [2, 4]}]}")
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(passed=1)


def test_what_torch_logs_while_load_fails_is_in_the_finding(project: pytest.Pytester) -> None:
    # A true failure of torch's: load cannot split the module path "heads.a,b". Its
    # exception says only "check the warnings above"; the warning holds the reason,
    # for parity's saved-and-loaded program and lowered[saved] alike.
    cases(project, "CommaKey", "{args: [{shape: [2, 4]}]}", "lower: [saved]")
    result = project.runpytest("--exportcheck", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    logged = [
        "*torch logged meanwhile:*",
        "*WARNING torch.export: Ran into the following error when deserializing*",
        "*AssertionError: expected metadata_split to return 3 parts, got 5*",
    ]
    result.stdout.fnmatch_lines(
        ["*saved and loaded raised: SerializationError: torch.export.load raised: *", *logged]
    )
    result.stdout.fnmatch_lines(
        [
            "[[]load[]] torch.export.load(path).module() raised RuntimeError: We ran into an "
            "error when deserializing the saved file. Please check the warnings above*",
            *logged,
        ]
    )
