"""parity: eager vs ep.module() vs unflatten(ep) vs decomposed, within tolerance."""

from __future__ import annotations

import pytest
from casekit import MLP_CASE, inject, load_models, write_cases


def run_parity(pytester: pytest.Pytester) -> pytest.RunResult:
    return pytester.runpytest("--exportcheck", "-k", "parity")


def test_noise_in_the_exported_module_is_caught_with_the_numbers(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    inject(
        project,
        """
        make = record.fresh_module
        def noisy():
            module = make()
            def add_noise(m, a, out):
                out = out.clone()
                out[1, 2] += 1e-3
                return out
            module.register_forward_hook(add_noise)
            return module
        record.fresh_module = noisy
        """,
    )
    result = run_parity(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*1 finding*",
            "*- output: 1 / 8 elements outside tolerance (atol=1e-05, rtol=1.3e-06, float32 "
            "default); max abs err 0.001, max rel err *; worst at index (1, 2): eager *, "
            "ep.module() *",
        ]
    )


def test_structure_difference_is_caught(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    inject(
        project,
        """
        make = record.fresh_unflattened
        def tupled():
            module = make()
            module.register_forward_hook(lambda m, a, out: (out,))
            return module
        record.fresh_unflattened = tupled
        """,
    )
    result = run_parity(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*- output: structure differs", "*eager: *", "*unflatten(ep): *"])


def test_a_tolerance_too_tight_for_decomposition_noise(project: pytest.Pytester) -> None:
    # SiLU's decomposition rounds differently from the fused eager kernel.
    import torch

    silu = load_models(project).Silu()
    x = torch.randn(8, 64)
    decomposed = torch.export.export(silu, (x,)).run_decompositions().module()
    if torch.equal(decomposed(x), silu(x)):
        pytest.skip("this torch's SiLU decomposition is bit-exact; no noise to catch")
    write_cases(
        project,
        MLP_CASE.replace("Mlp", "Silu").replace("[2, 4]", "[8, 64]")
        + "    expect: {parity: {policy: allclose, atol: 0.0, rtol: 0.0}}\n",
    )
    result = run_parity(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- output: * / 512 elements outside tolerance (atol=0, rtol=0, case tolerance)*decomposed*"
        ]
    )
    result.stdout.no_fnmatch_line("*ep.module() *")


NOISY_EAGER = """
cases:
  noisy:
    description: eager's kernel is the inexact one
    model: {target: models.py:NoisyEagerKernel, kwargs: {exported_error: %s}}
    inputs: {args: [{shape: [16, 32]}]}
    checks: [parity]
    expect: {parity: %s}
"""


def test_eager_kernel_noise_is_not_blamed_on_the_export(project: pytest.Pytester) -> None:
    write_cases(project, NOISY_EAGER % (0.0, "{}"))
    project.runpytest("--exportcheck").assert_outcomes(passed=1)


def test_plain_allclose_blames_the_export_for_eager_kernel_noise(project: pytest.Pytester) -> None:
    write_cases(project, NOISY_EAGER % (0.0, "{policy: allclose}"))
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*- output: * / 512 elements outside tolerance (atol=1e-05*"])


def test_an_export_further_from_float64_than_eager_fails_naming_both(
    project: pytest.Pytester,
) -> None:
    write_cases(project, NOISY_EAGER % (0.05, "{}"))
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- output: 512 / 512 elements outside tolerance*; vs the fp64 reference "
            "ep.module() rmse 0.05 > 2 x eager rmse 0.00* + 1e-06 (policy auto)"
        ]
    )


def test_default_tolerance_accepts_decomposition_noise(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE.replace("Mlp", "Silu").replace("[2, 4]", "[8, 64]"))
    run_parity(project).assert_outcomes(passed=1)


def test_parity_over_several_steps_names_the_step(project: pytest.Pytester) -> None:
    write_cases(
        project,
        MLP_CASE.replace("Mlp", "PythonCounter") + "    expect: {parity: {steps: 2}}\n",
    )
    result = run_parity(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*- step 2: output: 8 / 8 elements outside tolerance*"])
    result.stdout.no_fnmatch_line("*- step 1: *")


def test_eager_runs_in_the_grad_mode_export_traces_in(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE.replace("Mlp", "GradModeBranch"))
    project.runpytest("--exportcheck").assert_outcomes(passed=5)


KEYLESS_OUTPUT = """
import torch
from torch.utils import _pytree as pytree


class Out:
    def __init__(self, y):
        self.y = y


# As transformers registers ModelOutput: no flatten_with_keys_fn, so no key paths (and a
# serialized_type_name, without which torch.export.save refuses the program).
pytree.register_pytree_node(
    Out, lambda o: ([o.y], None), lambda leaves, _: Out(leaves[0]),
    serialized_type_name="keyless.Out",
)


class ReturnsOut(torch.nn.Module):
    def __init__(self, shift: float = 0.0):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)
        self.shift = shift

    def forward(self, x):
        y = self.lin(x)
        if torch.compiler.is_compiling() and self.shift:
            y = y + self.shift
        return Out(y)
"""


@pytest.mark.parametrize(("shift", "outcome"), [(0.0, {"passed": 1}), (0.5, {"failed": 1})])
def test_an_output_node_without_key_paths_is_compared_leaf_by_leaf(
    project: pytest.Pytester, shift: float, outcome: dict[str, int]
) -> None:
    (project.path / "cases" / "keyless.py").write_text(KEYLESS_OUTPUT)
    write_cases(
        project,
        f"""
        cases:
          keyless:
            description: an output container registered without flatten_with_keys_fn
            model: {{target: keyless.py:ReturnsOut, kwargs: {{shift: {shift}}}}}
            inputs: {{args: [{{shape: [3, 2]}}]}}
            checks: [parity]
        """,
    )
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(**outcome)
    if shift:
        result.stdout.fnmatch_lines(["*output.leaf[[]0[]]: * elements outside tolerance*"])


def test_an_output_node_torch_export_save_cannot_name_is_a_finding(
    project: pytest.Pytester,
) -> None:
    (project.path / "cases" / "keyless.py").write_text(
        KEYLESS_OUTPUT.replace('    serialized_type_name="keyless.Out",\n', "")
    )
    write_cases(
        project,
        """
        cases:
          keyless:
            description: an output container registered without serialized_type_name
            model: {target: keyless.py:ReturnsOut}
            inputs: {args: [{shape: [3, 2]}]}
            checks: [parity]
        """,
    )
    result = project.runpytest("--exportcheck")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["[[]parity[]] saved and loaded raised: SerializationError: torch.export.save raised: *"]
    )


def test_the_saved_and_loaded_program_is_compared_too(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    inject(
        project,
        """
        make = record.fresh_loaded
        def drifted():
            module = make()
            module.register_forward_hook(lambda m, a, out: out * 1.5)
            return module
        record.fresh_loaded = drifted
        """,
    )
    result = run_parity(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*- output: * elements outside tolerance*saved and loaded *"])


def test_a_program_that_cannot_be_saved_is_a_finding_that_names_the_step(
    project: pytest.Pytester,
) -> None:
    write_cases(project, MLP_CASE)
    project.makeconftest(
        """
        import torch

        def pytest_configure(config):
            config.stash_save = torch.export.save
            def refuse(*args, **kwargs):
                raise RuntimeError("cannot serialize this constant")
            torch.export.save = refuse

        def pytest_unconfigure(config):
            torch.export.save = config.stash_save
        """
    )
    result = run_parity(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- saved and loaded raised: SerializationError: torch.export.save raised: "
            "RuntimeError: cannot serialize this constant*"
        ]
    )
