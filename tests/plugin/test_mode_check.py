"""The mode check: a program carries the mode its case exported in, a train-mode
program's ``unflatten(ep).eval()`` is told (and judged where the case asks for a
program that switches), and capturing leaves torch's random number generators where
eager would.

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


def test_a_train_program_passes_where_eval_cannot_switch_it_and_fails_where_asked_to(
    project: pytest.Pytester,
) -> None:
    # A train-mode export is a training program on purpose: that unflatten(ep).eval()
    # keeps batch statistics (torch 2.9-2.14) is no fault a user can fix, so it is told.
    write_cases(project, CONV_BN.format(mode="train"))
    result = project.runpytest("--exportcheck", "-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=1)
    assert "exportcheck gaps" not in result.stdout.str()

    write_cases(
        project,
        CONV_BN.format(mode="train") + "    expect:\n      mode: {switches: true}\n",
    )
    asked = project.runpytest("--exportcheck", "-p", "no:cacheprovider")
    asked.assert_outcomes(failed=1)
    asked.stdout.fnmatch_lines(
        [
            "[[]mode[]] unflatten(ep).eval() sets training=False and computes as before, in "
            "train mode: the program will not switch; the case asks for a program that "
            "switches (expect.mode.switches, cases/main.yaml:8), and torch.export bakes the "
            "mode in: export the model in eval mode for an eval program",
            "  ep.module().eval() raises NotImplementedError on torch *",
        ]
    )
    write_cases(project, CONV_BN.format(mode="eval"))
    again = project.runpytest("--exportcheck", "-p", "no:cacheprovider")
    again.assert_outcomes(passed=1)


BATCH_OF_ONE = """
cases:
  batch_of_one:
    description: BatchNorm1d in eval on one sample, which training mode refuses
    model: {target: "torch.nn:BatchNorm1d", args: [4], mode: eval}
    inputs: {args: [{shape: [1, 4]}]}
    checks: [mode]
    expect: {mode: {switches: %s}}
"""


@pytest.mark.parametrize("asked", [False, True], ids=["told", "asked"])
def test_eager_raising_in_the_other_mode_is_the_checks_limit_not_the_cases_failure(
    project: pytest.Pytester, asked: bool
) -> None:
    # Probing whether outputs depend on the mode runs eager in train mode, which raises
    # on a batch of one ("Expected more than 1 value per channel when training"); the
    # export is fine. Where the switch is judged, that is a gap; where told, context.
    write_cases(project, BATCH_OF_ONE % str(asked).lower())
    result = project.runpytest("--exportcheck", "-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=1)
    text = result.stdout.str()
    assert "internal" not in text
    gap = (
        "unflatten(ep).train() not compared: eager raised ValueError: Expected more than 1 "
        "value per channel when training*"
    )
    if asked:
        result.stdout.fnmatch_lines(["*exportcheck gaps*", f"*{gap}"])
    else:
        assert "exportcheck gaps" not in text


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
    # Hugging Face's GPT-2 makes unflatten(ep) raise (a tensor escaping vmap): where the
    # case asks for a switch, the mode check tells that as a gap, not an internal error.
    write_cases(project, CONV_BN.format(mode="eval") + "    expect: {mode: {switches: true}}\n")
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


LOSS_MODELS = """

class NormLoss(nn.Module):
    def __init__(self, stats_free: bool = False):
        super().__init__()
        self.bn = nn.BatchNorm1d(4)
        # Without running statistics BatchNorm normalizes with the batch's in either mode.
        self.free = nn.BatchNorm1d(4, track_running_stats=False) if stats_free else nn.Identity()

    def forward(self, x):
        y = self.free(self.bn(x))
        return y, y.square().mean()
"""

JOINT_CASE = """
cases:
  norm_loss:
    description: batch norms under a loss, through AOT Autograd's joint graph
    model: {{target: models.py:NormLoss, kwargs: {{stats_free: {free}}}, mode: eval}}
    inputs: {{args: [{{shape: [4, 4]}}]}}
    loss_output: 1
    captures: [aot-joint]
    checks: [mode]
"""


def test_a_joint_graphs_flags_are_judged_by_the_one_mode_of_the_model_or_told_unjudged(
    project: pytest.Pytester,
) -> None:
    # An AOT joint graph records no module per node. Where every module gives one flag,
    # an op carrying it contradicts none of them; where modules differ, nothing tells
    # which module made an op, and the gap says exactly that.
    with open(project.path / "cases" / "models.py", "a") as models:
        models.write(LOSS_MODELS)
    write_cases(project, JOINT_CASE.format(free="false"))
    uniform = project.runpytest("--exportcheck", "-p", "no:cacheprovider", "-rA")
    uniform.assert_outcomes(passed=1)
    assert "exportcheck gaps" not in uniform.stdout.str()

    write_cases(project, JOINT_CASE.format(free="true"))
    mixed = project.runpytest("--exportcheck", "-p", "no:cacheprovider", "-rA")
    mixed.assert_outcomes(passed=1)
    mixed.stdout.fnmatch_lines(
        [
            "*op(s) with a training flag not judged: the graph records no module that made "
            "them (an AOT joint graph keeps no nn_module_stack), and the model's modules run "
            "in different modes",
        ]
    )
