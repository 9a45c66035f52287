"""hierarchy on real-ish models: submodules replayed alone, call counts, calls traced apart.

Each test is a false failure measured against plain torch (issue 28, items 2-5),
with the fixed behaviour, and a failure on purpose showing the check still bites.
"""

from __future__ import annotations

import textwrap

import pytest
from casekit import inject, write_cases

MODELS = '''
from dataclasses import dataclass

import torch
from torch import nn
from torch.utils import _pytree as pytree


class DropTrain(nn.Module):
    """squeezenet's classifier in train mode: Dropout draws from the generator."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Linear(8, 16)
        self.classifier = nn.Sequential(nn.Dropout(0.5), nn.Linear(16, 4))

    def forward(self, x):
        return self.classifier(torch.relu(self.features(x)))


class SelfAttn(nn.Module):
    """Hugging Face ViTSelfAttention's shape: returns (context, attention_probs)."""

    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(8, 8)
        self.k = nn.Linear(8, 8)

    def forward(self, x):
        probs = torch.softmax(self.q(x) @ self.k(x).transpose(-1, -2), -1)
        return probs @ x, probs


class KeepsContext(nn.Module):
    """The parent keeps [0]: unflatten's child returns the context alone."""

    def __init__(self) -> None:
        super().__init__()
        self.attention = SelfAttn()
        self.out = nn.Linear(8, 8)

    def forward(self, x):
        return self.out(self.attention(x)[0])


class KeepsBoth(nn.Module):
    """Both kept: unflatten's child returns [probs, context], in the order it computes them."""

    def __init__(self) -> None:
        super().__init__()
        self.attention = SelfAttn()

    def forward(self, x):
        context, probs = self.attention(x)
        return context + 1, probs * 2


class Perturbed(nn.Module):
    """Adds 0.1 while being exported; eager passes the input through."""

    def forward(self, x):
        return x + 0.1 if torch.compiler.is_exporting() else x


class ContextPerturbed(nn.Module):
    """The parent keeps the context of SelfAttn, then a module that differs under export."""

    def __init__(self) -> None:
        super().__init__()
        self.attention = SelfAttn()
        self.act = Perturbed()

    def forward(self, x):
        return self.act(self.attention(x)[0])


class ZeroHead(nn.Module):
    """vit_b_16 at random init: a zero-initialized head makes every output 0."""

    def __init__(self) -> None:
        super().__init__()
        self.self_attention = nn.MultiheadAttention(8, 2, batch_first=True)
        self.head = nn.Linear(8, 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, x):
        out, _ = self.self_attention(x, x, x)
        return self.head(out)


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.fc(x))


class SharedSeq(nn.Module):
    """One block used twice: seq = [b, x, b]."""

    def __init__(self) -> None:
        super().__init__()
        block = Block()
        self.seq = nn.Sequential(block, nn.Linear(8, 8), block)

    def forward(self, x):
        return self.seq(x)


class ByWidth(nn.Module):
    """Its two calls trace into two graphs: a branch on the input's width."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(8))

    def forward(self, x):
        if x.shape[-1] == 8:
            return x * self.w
        return x + 1


class TracedApart(nn.Module):
    """`n` is called twice and specialized per call: unflatten keeps `n` and `n@1`."""

    def __init__(self) -> None:
        super().__init__()
        self.n = ByWidth()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.n(self.fc(self.n(x)))


class SharedTracedApart(nn.Module):
    """One ByWidth shared as seq.0 and seq.2, called at two widths: unflatten splits it."""

    def __init__(self) -> None:
        super().__init__()
        shared = ByWidth()
        self.seq = nn.Sequential(shared, nn.Linear(8, 4), shared)

    def forward(self, x):
        return self.seq(x)


@dataclass
class HeadOut:
    logits: torch.Tensor
    hidden: torch.Tensor


if HeadOut not in pytree.SUPPORTED_NODES:
    # A name to save it by: a preserved signature keeps HeadOut in the program's call graph.
    torch.export.register_dataclass(HeadOut, serialized_type_name="replay_models.HeadOut")


class Head(nn.Module):
    """A transformers-style head: a ModelOutput-like return carrying its input along."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 4)

    def forward(self, h):
        return HeadOut(logits=self.proj(h), hidden=h)


class HeadNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.head = Head()

    def forward(self, x):
        out = self.head(torch.relu(self.body(x)))
        return out.logits, out.hidden


class Masked(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x, mask=None, scale=1.0):
        return self.lin(x) * mask * scale


class SizedEmbed(nn.Module):
    """XCiT's patch embedding: the tensor and its width, an int, as a tuple."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x), x.shape[-1]


class SizedEmbedNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = SizedEmbed()

    def forward(self, x):
        y, width = self.embed(x)
        return y * width


class MaskedBlocks(nn.Module):
    """Two blocks, each with a child called with keywords: a ViT's blocks.N.attn."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([MaskedNet(), MaskedNet()])

    def forward(self, x, mask):
        for block in self.blocks:
            x = block(x, mask)
        return x


class MaskedNet(nn.Module):
    """A child called with keywords, one a tensor input and one a float."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = Masked()

    def forward(self, x, mask):
        return self.inner(x, mask=mask, scale=2.0)


class Pair(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x, y):
        return self.lin(x) - y


class PairNet(nn.Module):
    """A child of two positional tensors: its graph takes them as (mul, x)."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = Pair()

    def forward(self, x):
        return self.inner(x, x * 2)


class Stepper(nn.Module):
    """A counter of its own calls: its second call starts from count 1."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.register_buffer("count", torch.zeros(()))

    def forward(self, x):
        self.count.add_(1)
        return self.lin(x) * self.count


class OneStep(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pre = nn.Linear(8, 8)
        self.step = Stepper()

    def forward(self, x):
        return self.step(self.pre(x))


class Flatten(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(24, 4)

    def forward(self, x):
        return self.lin(x.reshape(x.shape[0], -1))


class FlatNet(nn.Module):
    """A child that reads the (dynamic) batch size."""

    def __init__(self) -> None:
        super().__init__()
        self.pre = nn.Linear(8, 8)
        self.flat = Flatten()

    def forward(self, x):
        return self.flat(self.pre(x))


class Packed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, pair):
        (x,) = pair
        return self.lin(x)


class PackedNet(nn.Module):
    """A child that takes its one tensor inside a tuple."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = Packed()

    def forward(self, x):
        return self.inner((x,))


class Scaled(nn.Module):
    def forward(self, x):
        return x * self.factor  # set by the parent's forward


class SetsUp(nn.Module):
    """A child that works only inside its parent's forward, which sets its factor."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.scaled = Scaled()

    def forward(self, x):
        self.scaled.factor = 2.0
        return self.scaled(self.lin(x))
'''


def case(target: str, shape: str = "[2, 8]", extra: str = "", capture: str = "export") -> str:
    return f"""
cases:
  subject:
    description: {target} under the hierarchy check
    model: {{target: replay_models.py:{target}}}
    inputs: {{args: [{{shape: {shape}}}]}}
    captures: [{capture}]
    checks: [hierarchy, parity]
{textwrap.indent(textwrap.dedent(extra).strip(), "    ")}
"""


@pytest.fixture
def replay(project: pytest.Pytester) -> pytest.Pytester:
    (project.path / "cases" / "replay_models.py").write_text(MODELS)
    return project


def break_unflatten(pytester: pytest.Pytester, body: str, capture: str = "export") -> None:
    inject(
        pytester,
        f"""
        make = record.fresh_unflattened
        def broken():
            u = make()
            {body}
            return u
        record.fresh_unflattened = broken
        """,
        capture,
    )


def hierarchy(pytester: pytest.Pytester) -> pytest.RunResult:
    return pytester.runpytest("--exportcheck", "-k", "hierarchy")


def test_a_dropout_in_train_mode_is_replayed_under_the_generator_state_eager_saw(
    replay: pytest.Pytester,
) -> None:
    # Was: "classifier.0 (Dropout) run alone on eager's inputs differs ... eager 2.38,
    # unflattened 0": the replay drew another mask. Plain torch: identical under eager's state.
    write_cases(
        replay,
        case("DropTrain", extra="expect: {parity: {random: true}}").replace(
            "DropTrain}", "DropTrain, mode: train}"
        ),
    )
    hierarchy(replay).assert_outcomes(passed=1)


def test_a_child_returning_fewer_outputs_than_eager_has_a_changed_return_type(
    replay: pytest.Pytester,
) -> None:
    # Was a pass with the gap "output [1] not compared: unflatten returns only the outputs
    # the parent uses": its values agree, but u.attention(x)[0] is a row of the context,
    # not the context (torch 2.13, plain torch: unflatten's child returns a bare Tensor).
    write_cases(replay, case("KeepsContext", "[2, 3, 8]"))
    result = hierarchy(replay)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*hierarchy check failed (1 finding):",
            "*- attention (SelfAttn): the return type changed: u.attention(float32[[]2, 3, 8[]]) "
            "returns Tensor where eager's returns tuple(Tensor, Tensor): a caller of "
            "u.attention(float32[[]2, 3, 8[]])[[]0[]] breaks ([[]1[]] is not returned: the "
            "parent does not use it); add `preserve_signatures: [[]attention[]]` to the case "
            "(torch.export's preserve_module_call_signature) to keep eager's calling convention",
        ]
    )
    result.stdout.no_fnmatch_line("*not compared*")
    # The fix the finding names: u.attention(x) returns (context, probs) (torch 2.13).
    write_cases(replay, case("KeepsContext", "[2, 3, 8]", "preserve_signatures: [attention]"))
    hierarchy(replay).assert_outcomes(passed=1)


def test_a_dataclass_return_that_became_a_bare_tensor_is_a_finding(
    replay: pytest.Pytester,
) -> None:
    # Was a pass with the gap "head: output .hidden not compared: unflatten returns only the
    # outputs the parent uses" — the parent does use it; it is the head's own input.
    write_cases(replay, case("HeadNet"))
    result = hierarchy(replay)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- head (Head): the return type changed: u.head(float32[[]2, 8[]]) returns Tensor "
            "where eager's returns HeadOut(.logits, .hidden): a caller of "
            "u.head(float32[[]2, 8[]]).logits breaks (.hidden is the call's own input, which "
            "the child does not return); add `preserve_signatures: [[]head[]]` to the case "
            "(torch.export's preserve_module_call_signature) to keep eager's calling convention"
        ]
    )
    result.stdout.no_fnmatch_line("*parent does not use*")
    # The fix the finding names: u.head(h) returns HeadOut (torch 2.13, plain torch).
    write_cases(replay, case("HeadNet", extra="preserve_signatures: [head]"))
    hierarchy(replay).assert_outcomes(passed=1)


def test_a_child_returning_both_outputs_in_another_container_is_a_finding(
    replay: pytest.Pytester,
) -> None:
    # Values agree (was a shape mismatch before they were matched leaf by leaf); the
    # container does not: unflatten's child returns [probs, context], eager (context, probs).
    write_cases(replay, case("KeepsBoth", "[2, 3, 8]"))
    result = hierarchy(replay)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*- attention (SelfAttn): the return type changed: u.attention(float32[[]2, 3, 8[]]) "
         "returns list(Tensor, Tensor) where eager's returns tuple(Tensor, Tensor): *; add "
         "`preserve_signatures: [[]attention[]]` to the case *"]
    )  # fmt: skip
    result.stdout.no_fnmatch_line("*differs*")
    write_cases(replay, case("KeepsBoth", "[2, 3, 8]", "preserve_signatures: [attention]"))
    hierarchy(replay).assert_outcomes(passed=1)


def masked_case() -> str:
    return """
cases:
  subject:
    description: a child called with keywords
    model: {target: replay_models.py:MaskedNet}
    inputs: {args: [{shape: [2, 8]}, {shape: [2, 8]}]}
    captures: [export]
    checks: [hierarchy]
"""


def test_a_child_called_with_keywords_is_called_with_them_and_judged(
    replay: pytest.Pytester,
) -> None:
    # Was a pass with the gap "inner not run alone: eager called it with keyword arguments
    # (mask, scale)"; plain torch, as users call it, raises (torch 2.13).
    write_cases(replay, masked_case())
    result = hierarchy(replay)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- inner (Masked): u.inner(float32[[]2, 8[]], mask=float32[[]2, 8[]], scale=2.0) "
            "raises AssertionError: kwarg_names length 1 does not match kwargs length 2; "
            "eager's inner returns on the same call. The unflattened inner takes (mask, x); "
            "add `preserve_signatures: [[]inner[]]` to the case (torch.export's "
            "preserve_module_call_signature) to keep eager's calling convention"
        ]
    )
    # The fix the finding names: u.inner(x, mask=m, scale=2.0) returns eager's (torch 2.13).
    write_cases(replay, masked_case() + "    preserve_signatures: [inner]\n")
    hierarchy(replay).assert_outcomes(passed=1)


def test_a_preserved_child_torch_still_changes_is_told_not_failed(
    replay: pytest.Pytester,
) -> None:
    # Plain torch 2.13: u.embed(x) returns the bare tensor; preserved, (tensor, None) where
    # eager returns (tensor, 8). The key is all a case can do: what remains is torch's.
    write_cases(replay, case("SizedEmbedNet"))
    result = hierarchy(replay)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*- embed (SizedEmbed): the return type changed: u.embed(float32[[]2, 8[]]) returns "
         "Tensor where eager's returns tuple(Tensor, int)*; add `preserve_signatures: "
         "[[]embed[]]` to the case*"]
    )  # fmt: skip
    write_cases(replay, case("SizedEmbedNet", extra="preserve_signatures: [embed]"))
    told = replay.runpytest("--exportcheck", "-k", "hierarchy", "-rA")
    told.assert_outcomes(passed=1)
    told.stdout.fnmatch_lines(
        ["*embed (SizedEmbed): the return type changed: u.embed(float32[[]2, 8[]]) returns "
         "tuple(Tensor, None) where eager's returns tuple(Tensor, int)*(no export keeps its "
         "calling convention: it is named in preserve_signatures already, and torch's "
         "unflatten still differs; told, not failed)"]
    )  # fmt: skip


def test_a_pattern_in_preserve_signatures_keeps_every_child_it_matches(
    replay: pytest.Pytester,
) -> None:
    # A ViT has twelve blocks.N.attn called with keywords: one pattern names them all. Each
    # block here is called with (x, mask) too, which its graph takes as (mask, x): ``*``
    # spans dots as fnmatch's does, so blocks.* keeps the blocks and their children.
    blocks = masked_case().replace("MaskedNet", "MaskedBlocks")
    write_cases(replay, blocks)
    result = hierarchy(replay)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*- blocks.0.inner (Masked): *", "*- blocks.0 (MaskedNet) run alone *takes (mask, x)*"]
    )
    write_cases(replay, blocks + "    preserve_signatures: [blocks.*]\n")
    hierarchy(replay).assert_outcomes(passed=1)
    write_cases(replay, blocks + "    preserve_signatures: [layers.*.inner]\n")
    wrong = hierarchy(replay)
    wrong.assert_outcomes(failed=1)
    wrong.stdout.fnmatch_lines(
        ["*[[]case[]] cases/main.yaml:*: preserve_signatures names 'layers.*.inner', which "
         "matches no submodule of the model*"]
    )  # fmt: skip


def test_a_child_of_several_positional_tensors_is_called_with_them_and_judged(
    replay: pytest.Pytester,
) -> None:
    # Was a pass with the gap "inner not run alone: it takes 2 positional tensors, which a
    # child's graph orders its own way"; plain torch: u.inner(x, x * 2) silently computes
    # with the tensors swapped, its graph taking (mul, x) (torch 2.13, strict and not).
    write_cases(replay, case("PairNet"))
    result = hierarchy(replay)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- inner (Pair) run alone on eager's inputs differs: inner output: 16 / 16 elements "
            "outside tolerance *; it takes 2 positional tensors, and the unflattened inner's "
            "graph takes (mul, x), in its own order; add `preserve_signatures: [[]inner[]]` to "
            "the case (torch.export's preserve_module_call_signature) to keep eager's calling "
            "convention"
        ]
    )
    write_cases(replay, case("PairNet", extra="preserve_signatures: [inner]"))
    result = replay.runpytest("--exportcheck", "-k", "hierarchy", "-rA")
    result.assert_outcomes(passed=1)
    assert "exportcheck gaps" not in result.stdout.str()


def test_a_name_in_preserve_signatures_that_is_no_submodule_is_the_cases_error(
    replay: pytest.Pytester,
) -> None:
    write_cases(replay, case("PairNet", extra="preserve_signatures: [inner.lin, iner]"))
    result = hierarchy(replay)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*[[]case[]] cases/main.yaml:8: preserve_signatures names 'iner', which is no "
            "submodule of the model (did you mean 'inner'?); its submodules: inner, inner.lin"
        ]
    )


def test_a_child_whose_one_tensor_comes_in_a_tuple_is_called_as_eager_called_it(
    replay: pytest.Pytester,
) -> None:
    # Was run as u.inner(x), which no user writes, and passed.
    write_cases(replay, case("PackedNet"))
    result = hierarchy(replay)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*- inner (Packed): u.inner((float32[[]2, 8[]],)) raises *"])


def test_a_call_eager_cannot_make_alone_either_is_a_gap_saying_so(
    replay: pytest.Pytester,
) -> None:
    write_cases(replay, case("SetsUp"))
    break_unflatten(replay, "u.scaled.register_forward_pre_hook(lambda m, a: a[0].view(-7))")
    result = replay.runpytest("--exportcheck", "-k", "hierarchy", "-rA")
    result.stdout.fnmatch_lines(
        [
            "*scaled not run alone: u.scaled(float32[[]2, 8[]]) raises on eager's scaled too, "
            "outside its parent's forward (AttributeError: 'Scaled' object has no attribute "
            "'factor')"
        ]
    )


def test_a_child_reading_a_dynamic_size_is_run_as_its_parent_calls_it(
    replay: pytest.Pytester,
) -> None:
    # Was a pass with the gap "flat not run alone: called with eager's arguments it raised
    # RuntimeError (its graph may take a size or a buffer too)". torch's unflatten passes
    # the size in (also under preserve_module_call_signature): no export avoids it.
    dynamic = """
    dynamic:
      dims: {batch: {min: 2, max: 16}}
      shapes:
        args[0]: {0: batch}"""
    write_cases(replay, case("FlatNet", "[4, 3, 8]", dynamic, "export"))
    result = replay.runpytest("--exportcheck", "-k", "hierarchy", "-rA")
    result.assert_outcomes(passed=1)
    assert "exportcheck gaps" not in result.stdout.str()
    break_unflatten(replay, "u.flat.register_forward_hook(lambda m, a, out: out + 1.0)")
    result = hierarchy(replay)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- flat (Flatten) run alone on eager's inputs differs: flat output: *",
            "*flat: u.flat(float32[[]4, 3, 8[]]) raises (RuntimeError: Expected positional "
            "argument for parameter *): its graph takes the sizes it reads from its parent, *"
            "run as u.flat(4, float32[[]4, 3, 8[]])",
        ]
    )


def test_a_forward_mutating_state_has_its_children_run_from_the_state_eager_saw(
    replay: pytest.Pytester,
) -> None:
    # Was a pass with the gap "submodules not run alone: forward mutates state (step.count)".
    write_cases(replay, case("OneStep"))
    result = replay.runpytest("--exportcheck", "-k", "hierarchy", "-rA")
    result.assert_outcomes(passed=1)
    assert "not run alone" not in result.stdout.str()
    # A child whose state update is wrong when run alone is named, with the state.
    break_unflatten(
        replay, "u.step.register_forward_hook(lambda m, a, out: m.count.add_(1) * 0 + out)"
    )
    result = hierarchy(replay)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- step (Stepper) run alone from the state eager's call started from leaves other "
            "state: 'count': *eager 1, unflattened *"
        ]
    )


def test_a_returned_output_that_differs_still_fails(replay: pytest.Pytester) -> None:
    write_cases(replay, case("KeepsContext", "[2, 3, 8]"))
    break_unflatten(replay, "u.attention.register_forward_hook(lambda m, a, out: out + 1.0)")
    result = hierarchy(replay)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- attention (SelfAttn) run alone on eager's inputs differs: attention "
            "output[[]0[]]: 48 / 48 elements outside tolerance*"
        ]
    )


def test_parity_localization_walks_past_a_child_returning_fewer_outputs(
    replay: pytest.Pytester,
) -> None:
    # Was: "where: first diverging: attention (SelfAttn) — max abs err 0; inputs agree":
    # eager's (context, probs) against unflatten's context, whose value agrees.
    write_cases(replay, case("ContextPerturbed", "[2, 3, 8]"))
    result = replay.runpytest("--exportcheck", "-k", "parity")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["  where: first diverging: act (Perturbed) — max abs err 0.1; inputs agree"]
    )


def test_a_vacuous_parity_headline_does_not_blame_a_child_for_its_dropped_output(
    replay: pytest.Pytester,
) -> None:
    # Was: "inside the model, self_attention (MultiheadAttention) differs: structure differs".
    write_cases(replay, case("ZeroHead", "[2, 3, 8]"))
    result = replay.runpytest("--exportcheck", "-k", "parity")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*[[]parity[]] vacuous: no output of eager carries signal*"])
    result.stdout.no_fnmatch_line("*structure differs*")


def test_a_shared_block_unflatten_keeps_shared_is_counted_per_object(
    replay: pytest.Pytester,
) -> None:
    import sys

    import torch

    sys.path.insert(0, str(replay.path / "cases"))
    try:
        import replay_models
    finally:
        sys.path.pop(0)
    model = replay_models.SharedSeq()
    u = torch.export.unflatten(torch.export.export(model, (torch.randn(2, 8),), strict=True))
    if u.seq.get_submodule("0") is not u.seq.get_submodule("2"):
        pytest.skip("this torch's unflatten splits the shared block (a sharing finding)")
    # Was: "'seq.0.fc' / 'seq.2.fc': eager called it 2 time(s), the unflattened graph has 1
    # call_module node(s)": one fc node in the one seq.0 graph, which runs twice.
    write_cases(replay, case("SharedSeq", capture="export-strict"))
    hierarchy(replay).assert_outcomes(passed=1)


def test_a_call_the_unflattened_module_drops_is_counted_missing(replay: pytest.Pytester) -> None:
    write_cases(replay, case("SharedSeq", capture="export-strict"))
    break_unflatten(
        replay,
        """g = u.seq.graph
            node = next(n for n in g.nodes if n.op == "call_module" and n.target == "2")
            node.replace_all_uses_with(node.args[0])
            g.erase_node(node)""",
        "export-strict",
    )
    result = hierarchy(replay)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*'seq.0' / 'seq.2': eager called it 2 time(s), the unflattened module calls it "
            "1 time(s) per forward (call_module nodes)"
        ]
    )


def test_calls_traced_apart_are_calls_of_one_module(replay: pytest.Pytester) -> None:
    # Was: "module FQNs ... differ (1 extra)", "state_dict keys only after unflatten: n@1.w"
    # and "'n': eager called it 2 time(s), the unflattened graph has 1 call_module node(s)".
    write_cases(replay, case("TracedApart"))
    hierarchy(replay).assert_outcomes(passed=1)


def test_the_second_call_traced_apart_is_replayed_on_its_own_graph(
    replay: pytest.Pytester,
) -> None:
    # Matched by position as documented (this one held before too: `n@1` is call 2's name).
    write_cases(replay, case("TracedApart"))
    break_unflatten(
        replay, 'u.get_submodule("n@1").register_forward_hook(lambda m, a, out: out + 1.0)'
    )
    result = hierarchy(replay)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*- n (call 2, run as 'n@1') (ByWidth) run alone on eager's inputs differs: *"]
    )


def test_the_second_call_of_a_split_shared_module_is_replayed_where_it_ran(
    replay: pytest.Pytester,
) -> None:
    # Was replayed on seq.0, whose graph is specialized to the first call's width.
    write_cases(replay, case("SharedTracedApart"))
    break_unflatten(
        replay, 'u.seq.get_submodule("2").register_forward_hook(lambda m, a, out: out + 1.0)'
    )
    result = hierarchy(replay)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*- seq.0 (call 2, run as 'seq.2') (ByWidth) run alone on eager's inputs differs: *"]
    )
