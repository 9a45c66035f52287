"""The mode check: a program carries the mode its case exported in, a train-mode
program's ``unflatten(ep).eval()`` either switches or the item says it will not, and
capturing leaves torch's random number generators where eager would.

Each failure is made on purpose: a capture whose batch norm is flipped to eval
(``casekit.inject``), a capture that draws a random number; torch itself makes the
silent switch (``unflatten(ep).eval()`` keeps ``training=True`` ops, measured on 2.9,
2.13 and 2.14).
"""

from __future__ import annotations

import pytest
from casekit import inject, write_cases

CONV_BN = """
cases:
  conv_bn:
    description: a conv / batch norm stem
    model: {{target: models.py:ConvBatchNorm, mode: {mode}}}
    inputs: {{args: [{{shape: [2, 3, 6, 6]}}]}}
    checks: [mode]
"""

FLIP_BATCH_NORM_TO_EVAL = """
for node in record.graph_module.graph.nodes:
    if node.target is torch.ops.aten.batch_norm.default:
        node.args = (*node.args[:5], False, *node.args[6:])
"""


def test_a_train_program_whose_batch_norm_runs_in_eval_mode_fails_naming_the_node(
    project: pytest.Pytester,
) -> None:
    write_cases(project, CONV_BN.format(mode="train"))
    inject(project, FLIP_BATCH_NORM_TO_EVAL)
    result = project.runpytest("--exportcheck", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "- batch_norm (batch_norm.default in 'bn') runs with training=False, where eager's "
            "module 'bn' runs it in training mode (the case's mode: train): the program "
            "carries the other mode",
        ]
    )


def test_a_train_program_that_eval_does_not_switch_fails_and_an_eval_one_is_told(
    project: pytest.Pytester,
) -> None:
    write_cases(project, CONV_BN.format(mode="train"))
    result = project.runpytest("--exportcheck", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "[[]mode[]] unflatten(ep).eval() sets training=False and computes as before, in "
            "train mode: the program will not switch; export the model in eval mode for an "
            "eval program",
            "  ep.module().eval() raises NotImplementedError on torch *",
        ]
    )
    write_cases(project, CONV_BN.format(mode="eval"))
    again = project.runpytest("--exportcheck", "-p", "no:cacheprovider")
    again.assert_outcomes(passed=1)


RNG_CASES = """
cases:
  mlp:
    description: a plain MLP
    model: {target: models.py:Mlp}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [mode]
  reseeds:
    description: forward reseeds torch, as eager does every call
    model: {target: models.py:Reseeds}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [mode]
"""

RESEEDS = """

class Reseeds(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        torch.manual_seed(7)
        return self.lin(x)
"""


def test_a_capture_that_moves_the_global_generator_fails_unless_eager_moves_it_alike(
    project: pytest.Pytester,
) -> None:
    with open(project.path / "cases" / "models.py", "a") as models:
        models.write(RESEEDS)
    write_cases(project, RNG_CASES)
    result = project.runpytest("--exportcheck", "-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=2)  # the reseeding forward's capture reseeds as eager does

    inject(project, "torch.rand(3)  # a capture that draws")
    drawn = project.runpytest("--exportcheck", "-p", "no:cacheprovider", "-k", "mlp")
    drawn.assert_outcomes(failed=1)
    drawn.stdout.fnmatch_lines(
        [
            "[[]mode[]] capturing moved torch's global random number generator (cpu) where "
            "eager's forward from the same state leaves it elsewhere: every later random draw "
            "of the user's process changes with the capture",
        ]
    )


def test_an_op_a_models_own_module_gives_a_flag_is_counted_not_judged(
    project: pytest.Pytester,
) -> None:
    with open(project.path / "cases" / "models.py", "a") as models:
        models.write(
            "\n\nclass OwnDropout(nn.Module):\n"
            "    def forward(self, x):\n"
            "        return torch.nn.functional.dropout(x, 0.5, training=True)\n"
        )
    write_cases(
        project,
        """
        cases:
          own_dropout:
            description: a functional dropout the model always applies
            model: {target: models.py:OwnDropout}
            inputs: {args: [{shape: [2, 4]}]}
            checks: [mode]
            expect: {parity: {random: true}}
        """,
    )
    result = project.runpytest("--exportcheck", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*1 op(s) with a training flag made outside torch.nn's mode-following modules (in "
            "the root module): a model's own module may pass any flag, so theirs were not "
            "judged",
        ]
    )


def test_an_unflatten_that_raises_leaves_the_switch_unchecked_and_says_so(
    project: pytest.Pytester,
) -> None:
    # Hugging Face's GPT-2 makes unflatten(ep) raise (a tensor escaping vmap): the mode
    # check tells that as a gap, not as an internal error.
    write_cases(project, CONV_BN.format(mode="eval"))
    inject(
        project,
        """
def raising():
    raise RuntimeError("unflatten refuses this program")
record.fresh_unflattened = raising
""",
    )
    result = project.runpytest("--exportcheck", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*unflatten(ep).train() not checked: unflatten(ep) raised RuntimeError: unflatten "
            "refuses this program",
        ]
    )
