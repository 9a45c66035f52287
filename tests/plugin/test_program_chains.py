"""``programs:``: chains of steps over an export capture, each judged by parity, the
stepped mutation runs and shapes, and named in their failures. Each chain's failure is
made on purpose: a save that drops the decomposed program's buffer update, a retrace
that forgets the case's dims.
"""

from __future__ import annotations

import pytest
from casekit import write_cases

COUNTER_CHAINS = """
cases:
  counter:
    description: a buffer updated at every call
    model: {target: models.py:Counter}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [parity, mutation]
    programs: [module, decompose>save, save>unflatten]
"""

# torch.export.save/load that loses the decomposed program's buffer updates: each
# BUFFER_MUTATION output is given the buffer's old value.
DROPS_BUFFER_UPDATES = """
import pytest_exportcheck.capture.chains as chains
import pytest_exportcheck.capture.export as export
from torch.export.graph_signature import OutputKind

real = export.saved_and_loaded

def dropping(program):
    loaded = real(program)
    placeholders = {n.name: n for n in loaded.graph.nodes if n.op == "placeholder"}
    by_target = {s.target: s.arg.name for s in loaded.graph_signature.input_specs if s.target}
    output = next(n for n in loaded.graph.nodes if n.op == "output")
    values = list(output.args[0])
    for index, spec in enumerate(loaded.graph_signature.output_specs):
        if spec.kind == OutputKind.BUFFER_MUTATION:
            values[index] = placeholders[by_target[spec.target]]
    output.args = (tuple(values),)
    loaded.graph_module.recompile()
    return loaded

def pytest_configure(config):  # the default programs' save, and a chain's save step
    export.saved_and_loaded = chains.saved_and_loaded = dropping

def pytest_unconfigure(config):
    export.saved_and_loaded = chains.saved_and_loaded = real
"""


def test_a_chain_that_drops_a_buffer_update_fails_the_stepped_runs_naming_it(
    project: pytest.Pytester,
) -> None:
    write_cases(project, COUNTER_CHAINS)
    passing = project.runpytest("--exportcheck", "-p", "no:cacheprovider")
    passing.assert_outcomes(passed=2)

    project.makeconftest(DROPS_BUFFER_UPDATES)
    result = project.runpytest("--exportcheck", "-p", "no:cacheprovider", "-k", "mutation")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["- after step 1/3: state 'count': *eager 1, decompose>save 0*"])
    result.stdout.no_fnmatch_line("*save>unflatten*")  # training IR: no mutation outputs


DYNAMIC_CHAINS = """
cases:
  mlp:
    description: a plain MLP with a dynamic batch
    model: {target: models.py:Mlp}
    inputs: {args: [{shape: [4, 4]}]}
    dynamic:
      dims: {batch: {min: 2, max: 16}}
      shapes: {"args[0]": {0: batch}}
    checks: [shapes, consistency]
    programs: [module, retrace]
"""

# A retrace that forgets the case's dims: every one becomes the example's size.
FORGETS_DIMS = """
import torch
import pytest_exportcheck.capture.chains as chains

real = chains._retraced

def static(record, program):
    args, kwargs = record.subject.inputs_copy()
    return torch.export.export(program.module(), args, kwargs, strict=False)

def pytest_configure(config):
    chains._retraced = static

def pytest_unconfigure(config):
    chains._retraced = real
"""


def test_a_retrace_that_specializes_a_declared_dim_fails_shapes_naming_it(
    project: pytest.Pytester,
) -> None:
    write_cases(project, DYNAMIC_CHAINS)
    passing = project.runpytest("--exportcheck", "-p", "no:cacheprovider", "-v")
    passing.assert_outcomes(passed=2)  # shapes, and consistency of the retrace with export
    passing.stdout.fnmatch_lines(["*mlp::consistency[[]cpu[]] PASSED*"])

    project.makeconftest(FORGETS_DIMS)
    result = project.runpytest("--exportcheck", "-p", "no:cacheprovider", "-k", "shapes")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["- at batch=2 (min): retrace refused a size inside the declared range: *Guard failed*"]
    )
    result.stdout.no_fnmatch_line("*ep.module() refused*")


def test_a_chain_whose_device_is_missing_is_not_run_and_the_checks_say_so(
    project: pytest.Pytester,
) -> None:
    write_cases(project, COUNTER_CHAINS.replace("save>unflatten", "move:xpu>save"))
    project.makeconftest(
        """
import pytest_exportcheck.model.devices as devices

real = devices.unavailable_reason

def pytest_configure(config):
    devices.unavailable_reason = lambda d: f"no {d} in this test" if d == "xpu" else real(d)

def pytest_unconfigure(config):
    devices.unavailable_reason = real
"""
    )
    result = project.runpytest("--exportcheck", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*program move:xpu>save not run: no xpu in this test*"])


def test_a_chain_that_ends_before_its_last_step_is_refused_at_its_line(
    project: pytest.Pytester,
) -> None:
    write_cases(project, COUNTER_CHAINS.replace("save>unflatten", "module>save"))
    result = project.runpytest("--exportcheck", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*cases/main.yaml:7*program 'module>save': 'module' gives a module, so it can only end*"]
    )


def test_the_run_wide_option_refuses_a_step_it_does_not_know(project: pytest.Pytester) -> None:
    write_cases(project, COUNTER_CHAINS)
    result = project.runpytest("--exportcheck", "--exportcheck-programs=decompose>zip")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--exportcheck-programs: 'decompose>zip' is not a chain*"])
