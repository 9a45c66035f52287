"""The hierarchy check calls each unflattened child as a user calls it: with eager's
arguments and keywords, reading the container eager returned. A raise or another
container is a finding naming ``preserve_signatures`` (torch.export's
``preserve_module_call_signature``) where that keeps eager's convention, and told where
no export does. Each behaviour measured in plain torch 2.13 (benchmarks/confirm_children.py).
"""

from __future__ import annotations

import pytest
from casekit import write_cases
from replaykit import REPLAY_MODELS, case, hierarchy, masked_case


@pytest.fixture
def replay(project: pytest.Pytester) -> pytest.Pytester:
    (project.path / "cases" / "replay_models.py").write_text(REPLAY_MODELS)
    return project


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


def test_a_child_that_raises_names_the_error_and_what_its_graph_takes_beyond_eager_s(
    replay: pytest.Pytester,
) -> None:
    # Was "called with eager's arguments it raised RuntimeError (its graph may take a size
    # or a buffer too)": neither the error nor which. torch's unflatten passes the root's
    # buffer in as the child's input b_shift (torch 2.13).
    write_cases(replay, case("ShiftsNet"))
    result = hierarchy(replay)
    result.stdout.fnmatch_lines(
        [
            "*shifted (Shifted): u.shifted(float32[[]2, 8[]]) raises RuntimeError: Expected "
            "positional argument for parameter x, but one was not passed in!; eager's shifted "
            "returns on the same call. The unflattened shifted takes (b_shift, x); besides "
            "eager's arguments it takes the buffer 'shift' (b_shift) (no export keeps its "
            "calling convention: torch's unflatten passes that state in, under "
            "preserve_module_call_signature too; told, not failed)"
        ]
    )
    result.assert_outcomes(passed=1)  # no export of the case could pass it otherwise
