"""Lowering targets: each target of each export capture is an item, ``lowered[aoti-export-cpu]``,
compared with eager over several calls; a lowering, load or call that raises fails at
its stage; a target that cannot run here is n/a, saying why.

One test compiles for real (AOTInductor and Inductor, ~1 min on 2 cores); the others
replace torch's lowering calls in the test project's conftest, so the check's own
logic is what fails on purpose.
"""

from __future__ import annotations

import pytest
from casekit import write_cases
from lowerkit import COUNTER as COUNTER_CASE
from lowerkit import FAKE_COMPILE, MLP, REFUSE_COMPILE, run
from lowerkit import torch_left_as_found as torch_left_as_found  # autouse

COUNTER = (
    COUNTER_CASE
    + """  dropout:
    description: dropout in training mode draws from the RNG
    model: {target: "torch.nn:Dropout", args: [0.5], mode: train}
    inputs: {args: [{shape: [4, 8]}]}
    checks: [parity]
    lower: [inductor]
    expect: {parity: {random: true}}
"""
)


@pytest.mark.usefixtures("real_compiles")
def test_aoti_drops_a_buffer_update_that_inductor_keeps(project: pytest.Pytester) -> None:
    # True findings, by torch version: on 2.13 an AOTInductor package folds a buffer
    # that starts uniform into a constant, so every call sees its first value
    # (pytorch#165444); on 2.9.1 it does not compile the program ("NotImplementedError:
    # Constant"). Either way the package is not the program; Inductor's is. Dropout
    # draws eager's numbers: Inductor's random ops fall back to aten's.
    write_cases(project, COUNTER)
    result = run(project)
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(
        [
            "checks: M mutation  P parity  I lowered-inductor  A lowered-aoti",
            "  counter        . .F",
            "  dropout         ..",
            "FAILED cases/main.yaml::counter::lowered[[]aoti-export-cpu[]]*",
        ]
    )
    text = result.stdout.str()
    if "[lower] torch._inductor.aoti_compile_and_package raised" in text:
        return
    result.stdout.fnmatch_lines(
        [
            "*counter::lowered[[]aoti-export-cpu[]]*",
            "[[]lowered-aoti[]] after call 2/2: output: 8 / 8 elements outside tolerance*"
            "lowered to aoti *",
            "- after call 2/2, lowered to aoti, loaded in a fresh process (torch only): output: "
            "8 / 8 elements outside tolerance*",
            "*state not read: aoti keeps parameters and buffers inside what it built, so the "
            "updates of count were judged by the outputs of 2 calls only",
            "*lowered to aoti in * s, * MiB",
        ]
    )


def test_a_lowering_call_that_raises_fails_at_the_lower_stage(project: pytest.Pytester) -> None:
    write_cases(project, MLP)
    project.makeconftest(REFUSE_COMPILE)
    result = run(project)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "[[]lower[]] torch._inductor.aoti_compile_and_package raised RuntimeError: "
            "unsupported operator aten::frobnicate",
        ]
    )


def test_a_package_that_does_not_load_fails_at_the_load_stage(project: pytest.Pytester) -> None:
    write_cases(project, MLP)
    project.makeconftest(FAKE_COMPILE)
    result = run(project)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["[[]load[]] torch._inductor.aoti_load_package raised *"])


@pytest.mark.parametrize(
    ("loaded", "expected"),
    [
        (
            "lambda x: eager(x) + 0.5",
            "[[]lowered-aoti[]] after call 1/1: output: 8 / 8 elements outside tolerance*",
        ),
        (
            "lambda x: (_ for _ in ()).throw(ValueError('kernel out of bounds'))",
            "[[]run[]] the program lowered to aoti, at its first call, raised ValueError: "
            "kernel out of bounds",
        ),
    ],
    ids=["output differs", "call raises"],
)
def test_what_the_loaded_program_does_is_judged_against_eager(
    project: pytest.Pytester, loaded: str, expected: str
) -> None:
    write_cases(project, MLP)
    project.makeconftest(
        FAKE_COMPILE
        + f"""
import sys, torch
sys.path.insert(0, "cases")
from models import Mlp

def fake_load(path, **kwargs):
    torch.manual_seed(0)  # the case's seed: the same weights as the case's model
    eager = Mlp()
    return {loaded}

torch._inductor.aoti_load_package = fake_load
"""
    )
    result = run(project)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([expected])


@pytest.mark.quick
def test_inductor_compiling_at_the_first_call_fails_at_the_lower_stage(
    project: pytest.Pytester,
) -> None:
    write_cases(project, MLP.replace("lower: [aoti]", "lower: [inductor]"))
    project.makeconftest(
        """
import torch

def compile_later(module, **kwargs):
    def first_call(*args, **kwargs):
        raise RuntimeError("C++ compile failed: no such header")
    return first_call

torch.compile = compile_later
"""
    )
    result = run(project)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "[[]lower[]] the program lowered to inductor, at its first call, raised "
            "RuntimeError: C++ compile failed: no such header"
        ]
    )


def test_an_xfail_expects_a_lowering_failure_by_its_stage(project: pytest.Pytester) -> None:
    write_cases(
        project,
        MLP
        + """    xfail:
      reason: the operator has no AOTInductor kernel yet
      checks: [lowered-aoti]
      stage: lower
      match: frobnicate
""",
    )
    project.makeconftest(REFUSE_COMPILE)
    run(project).assert_outcomes(passed=1, xfailed=1)


def test_a_target_without_its_compiler_or_program_is_not_applicable(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_exportcheck.lowering import compilers

    monkeypatch.setattr(compilers.shutil, "which", lambda name: None)
    write_cases(
        project,
        MLP.replace("checks: [parity]", "captures: [export, dynamo-legacy]\n    checks: [parity]"),
    )
    result = run(project, "-rs")
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines_random(
        [
            "SKIPPED [[]1[]] cases/main.yaml:2: not applicable: AOTInductor compiles C++ for "
            "the CPU and finds no compiler (g++, clang++)",
            "SKIPPED [[]1[]] cases/main.yaml:2: not applicable: a lowering target takes an "
            "ExportedProgram",
            "  mlp*.-*.-",
        ]
    )


def test_the_run_adds_targets_to_every_case_and_refuses_unknown_ones(
    project: pytest.Pytester,
) -> None:
    write_cases(project, MLP.replace("    lower: [aoti]\n", ""))
    project.makeconftest(FAKE_COMPILE)
    result = run(project, "--exportcheck-lower", "aoti", "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "cases/main.yaml::mlp::parity[[]export-cpu[]]",
            "cases/main.yaml::mlp::lowered[[]aoti-export-cpu[]]",
        ]
    )
    result = run(project, "--exportcheck-lower", "tflite")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--exportcheck-lower: unknown target 'tflite'; known: inductor, aoti, executorch, onnx, saved"
        ]
    )


def test_check_model_takes_targets(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from pytest_exportcheck import check_model

    class Counter(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.register_buffer("count", torch.zeros(()))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.count.add_(1)
            return self.lin(x) * self.count

    compiled: list[torch.nn.Module] = []

    def compile_later(module: torch.nn.Module, **kwargs: object) -> torch.nn.Module:
        compiled.append(module)  # what torch.compile would compile: ep.module()
        return module

    monkeypatch.setattr(torch, "compile", compile_later)
    report = check_model(Counter(), (torch.randn(2, 4),), checks=["mutation"], lower="inductor")
    assert sorted(report.passed) == ["lowered[inductor-export-cpu]", "mutation[export-cpu]"]
    assert len(compiled) == 1 and isinstance(compiled[0], torch.fx.GraphModule)


def test_a_lowered_item_name_reads_back_as_its_check_capture_and_device() -> None:
    from pytest_exportcheck.items.item_names import item_name, split_item_name

    name = item_name("lowered-aoti", "export-strict", "cuda:1")
    assert name == "lowered[aoti-export-strict-cuda:1]"
    assert split_item_name(name) == ("lowered-aoti", "export-strict", "cuda:1")


def test_every_target_the_schema_takes_is_built() -> None:
    from pytest_exportcheck.lowering import TARGETS
    from pytest_exportcheck.spec.case import LOWERING_TARGETS
    from pytest_exportcheck.spec.load import case_schema

    assert tuple(TARGETS) == LOWERING_TARGETS
    assert tuple(case_schema()["$defs"]["lowerTarget"]["enum"]) == LOWERING_TARGETS


def hide_package(monkeypatch: pytest.MonkeyPatch, hidden: str) -> None:
    """The targets look for their packages with importlib.util.find_spec: one is not found."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == hidden else real(name, *a)
    )


@pytest.mark.quick
def test_executorch_without_its_package_is_not_applicable(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    hide_package(monkeypatch, "executorch")
    write_cases(project, MLP.replace("lower: [aoti]", "lower: [executorch]"))
    result = run(project, "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["SKIPPED [[]1[]] cases/main.yaml:2: not applicable: ExecuTorch is not installed*"]
    )


def test_executorch_runs_the_program_and_keeps_its_buffer_updates(
    project: pytest.Pytester,
) -> None:
    # A real lowering (about a second: ExecuTorch's kernels are prebuilt); its buffer
    # lives inside the .pte, so the update is judged by the outputs of two calls.
    # Imported here, before the in-process runs: pytester's module snapshot would
    # otherwise drop half of the package after the first run that imports it.
    pytest.importorskip(
        "executorch.extension.pybindings.portable_lib",
        reason="executorch is an optional lowering target",
    )
    write_cases(project, COUNTER.replace("lower: [aoti, inductor]", "lower: [executorch]"))
    result = run(project, "-k", "counter")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "checks: M mutation  T lowered-executorch",
            "  counter        .g",
            "*state not read: executorch keeps parameters and buffers inside what it built*",
        ]
    )


def test_an_executorch_program_that_drops_a_buffer_update_fails(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pytorch/executorch#7515's shape: the lowered program forgets its buffer's update,
    # so its second call gives the first call's outputs again.
    # Imported here, before the in-process runs: pytester's module snapshot would
    # otherwise drop half of the package after the first run that imports it.
    portable = pytest.importorskip(
        "executorch.extension.pybindings.portable_lib",
        reason="executorch is an optional lowering target",
    )
    # The conftest replaces the loader in a module that stays imported: put it back after.
    monkeypatch.setattr(portable, "_load_for_executorch", portable._load_for_executorch)
    write_cases(project, COUNTER.replace("lower: [aoti, inductor]", "lower: [executorch]"))
    project.makeconftest(
        """
import sys, torch
sys.path.insert(0, "cases")
from models import Counter
import executorch.extension.pybindings.portable_lib as portable

class Forgetful:
    def forward(self, inputs):
        torch.manual_seed(0)  # the case's seed: the case's weights, a count from zero
        return [Counter()(*inputs)]

portable._load_for_executorch = lambda path, *args, **kwargs: Forgetful()
"""
    )
    result = run(project, "-k", "counter")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["[[]lowered-executorch[]] after call 2/2: output: 8 / 8 elements outside tolerance*"]
    )


DYNAMIC_MLP = """
cases:
  mlp:
    description: a plain MLP with a dynamic batch
    model: {target: models.py:Mlp}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [parity]
    dynamic:
      dims: {batch: {min: 1, max: 8}}
      shapes: {"args[0]": {0: batch}}
    lower: [aoti]
"""


@pytest.mark.quick
@pytest.mark.parametrize(
    ("loaded", "expected"),
    [
        (  # pytorch/pytorch#151925: a size the program's guard refuses, computed
            "Mlp()",
            "*at batch=9 (above batch's max 8): the program lowered to aoti accepted a size "
            "outside the declared range [[]1, 8[]] and computed a result",
        ),
        (
            "lambda x: Mlp()(x) if x.shape[0] != 8 else Mlp()(x) + 1",
            "*at batch=8 (max): output: * elements outside tolerance*",
        ),
    ],
    ids=["outside the range computed", "wrong at max"],
)
def test_a_lowered_program_is_held_to_every_declared_size(
    project: pytest.Pytester, loaded: str, expected: str
) -> None:
    write_cases(project, DYNAMIC_MLP)
    project.makeconftest(
        FAKE_COMPILE
        + f"""
import sys, torch
sys.path.insert(0, "cases")
from models import Mlp

def fake_load(path, **kwargs):
    torch.manual_seed(0)
    made = {loaded}
    torch.manual_seed(0)
    return made

torch._inductor.aoti_load_package = fake_load
"""
    )
    result = run(project)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([expected])


@pytest.mark.quick
def test_onnx_without_its_packages_is_not_applicable(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    hide_package(monkeypatch, "onnxruntime")
    write_cases(project, MLP.replace("lower: [aoti]", "lower: [onnx]"))
    result = run(project, "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "SKIPPED [[]1[]] cases/main.yaml:2: not applicable: the onnx target needs "
            "*onnxruntime (pip install *onnxruntime)"
        ]
    )


def test_onnx_runs_the_program_and_says_it_keeps_no_state(project: pytest.Pytester) -> None:
    # A real export to ONNX, run by ONNX Runtime: the MLP agrees with eager; the
    # counter's update is not in an ONNX model, so it is judged at its first call, a gap.
    pytest.importorskip("onnxruntime", reason="onnx is an optional lowering target")
    pytest.importorskip("onnxscript", reason="onnx is an optional lowering target")
    write_cases(
        project,
        COUNTER.replace("lower: [aoti, inductor]", "lower: [onnx]")
        + MLP.replace("cases:\n", "").replace("lower: [aoti]", "lower: [onnx]"),
    )
    result = run(project, "-k", "counter or mlp")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "checks: M mutation  P parity  O lowered-onnx",
            "  counter        . g",
            "  mlp             ..",
            "*state not kept: onnx carries no state between calls, so the updates of count are "
            "not in what it built; judged at the first call only",
        ]
    )
