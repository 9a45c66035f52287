"""The fresh process: an artifact a server loads (``aoti``'s package, ``saved``'s
``torch.export.save`` file) is loaded again in a new interpreter that imports torch
and the case's ``load_imports`` only. What loads only where it was made is a finding
(huggingface/transformers#27871), and what the case says the server imports is
imported there, or the item says why not.
"""

from __future__ import annotations

import pytest
from casekit import write_cases
from lowerkit import COUNTER, FAKE_COMPILE, LOADS_AS_MLP, MLP, run
from lowerkit import torch_left_as_found as torch_left_as_found  # autouse

# An output type registered with pytree, as detection and Hugging Face models return:
# a saved program's output structure names the type by its serialized name.
DETECTIONS = """
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Detections:
    boxes: torch.Tensor
    scores: torch.Tensor


torch.export.register_dataclass(Detections, serialized_type_name="fresh_test.Detections")


@torch.library.custom_op("fresh_test::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@twice.register_fake
def _(x):
    return torch.empty_like(x)


class BoxHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 4)

    def forward(self, x):
        h = self.body(x)
        return Detections(boxes=h, scores=h.sum(-1))


class Doubled(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 4)

    def forward(self, x):
        return torch.ops.fresh_test.twice(self.body(x))
"""

BOX_HEAD = """
cases:
  box_head:
    description: a dataclass output, registered where the model is defined
    model: {target: detections.py:BoxHead}
    inputs: {args: [{shape: [3, 8]}]}
    checks: [parity]
    lower: [saved]
  custom_op:
    description: a custom op, defined where the model is
    model: {target: detections.py:Doubled}
    inputs: {args: [{shape: [3, 8]}]}
    checks: [parity]
    lower: [saved]
"""


@pytest.mark.usefixtures("warm_subprocesses")
def test_a_saved_program_whose_output_type_or_op_the_fresh_process_lacks_fails_naming_it(
    project: pytest.Pytester,
) -> None:
    # For real, in a subprocess (a registration is for the life of a process; a warm one
    # is forked from an interpreter that imported torch only): the
    # program saves and loads where its type and op are registered, not in a python
    # that imports torch only; load raises "check the warnings above", and the finding
    # quotes the warning torch logged there, which names the type or op. With the
    # model file in load_imports it loads and agrees.
    (project.path / "cases" / "detections.py").write_text(DETECTIONS)
    write_cases(project, BOX_HEAD)
    result = project.runpytest_subprocess("--exportcheck", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=2)
    loading = [
        "- [[]load[]] lowered to saved, loaded in a fresh process (torch only): loading it "
        "raised, where this process did not:",
        "  RuntimeError: We ran into an error when deserializing the saved file.*",
        "  torch logged meanwhile:",
        "    WARNING torch.export: Ran into the following error when deserializing",
    ]
    result.stdout.fnmatch_lines(
        [
            *loading,
            "      NotImplementedError: Deserializing fresh_test.Detections in pytree is not "
            "registered.",
            "*name that in the case's load_imports)",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            *loading,
            "      SerializeError: We failed to resolve torch.ops.fresh_test.twice.default to an "
            "operator.*",
            "*name that in the case's load_imports)",
        ]
    )

    imported = "    lower: [saved]\n    load_imports: [detections.py]\n"
    write_cases(project, BOX_HEAD.replace("    lower: [saved]\n", imported))
    again = project.runpytest_subprocess("--exportcheck", "-p", "no:cacheprovider", "-v")
    again.assert_outcomes(passed=4)
    again.stdout.fnmatch_lines(["*box_head::lowered[[]saved-export-cpu[]] PASSED*"])


@pytest.mark.quick
def test_load_imports_that_cannot_be_imported_fail_the_item_saying_which(
    project: pytest.Pytester,
) -> None:
    write_cases(
        project,
        MLP.replace("lower: [aoti]", "lower: [saved]\n    load_imports: [missing.py]")
        + MLP.replace("cases:\n  mlp:", "  broken:").replace(
            "lower: [aoti]", "lower: [saved]\n    load_imports: [not_a_module_here]"
        ),
    )
    result = run(project)
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*[[]load[]] load_imports of cases/main.yaml:2: missing.py: no such file (*missing.py)",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "- [[]load[]] lowered to saved, loaded in a fresh process (torch, not_a_module_here): "
            "an import before the load raised, where this process did not:",
            "  importing not_a_module_here (load_imports): ModuleNotFoundError: *",
        ]
    )


COUNTER_SAVED = COUNTER.replace("lower: [aoti, inductor]", "lower: [saved]")


def test_a_saved_program_keeps_its_state_and_a_loaded_one_that_forgets_fails(
    project: pytest.Pytester,
) -> None:
    # The loaded module's buffers are compared after each call: a load that gives a
    # module counting from zero again each call drops the update.
    write_cases(project, COUNTER_SAVED)
    result = run(project)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["checks: M mutation  L lowered-saved", "  counter        .."])

    project.makeconftest(
        """
import sys, torch
sys.path.insert(0, "cases")
from models import Counter

class Forgetful(Counter):
    def forward(self, x):
        self.count.zero_()  # counts from zero again at every call
        return super().forward(x)

class Loaded:
    def module(self):
        torch.manual_seed(0)  # the case's seed: the case's weights
        return Forgetful()

load = torch.export.load  # the checks' own saves load as they do
torch.export.load = lambda path, **kwargs: (
    Loaded() if "exportcheck-lowered-" in str(path) else load(path, **kwargs)
)
"""
    )
    forgetting = run(project)
    forgetting.assert_outcomes(passed=1, failed=1)
    forgetting.stdout.fnmatch_lines(["[[]lowered-saved[]] after call 2/2: *"])


def test_a_package_that_loads_only_where_it_was_made_is_a_finding(
    project: pytest.Pytester,
) -> None:
    # Here, the package "loads" (the conftest's loader); a fresh python loads the
    # file itself, which is no package.
    write_cases(project, MLP)
    project.makeconftest(FAKE_COMPILE + LOADS_AS_MLP)
    result = run(project)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "- [[]load[]] lowered to aoti, loaded in a fresh process (torch only): loading it "
            "raised, where this process did not:",
            "*Error*",
            "*(a server imports what registers the program's custom ops and output types before "
            "it loads it: name that in the case's load_imports)",
        ]
    )
