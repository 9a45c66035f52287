"""Where a hierarchy finding names the case key ``preserve_signatures`` as the remedy."""

from __future__ import annotations

from pathlib import Path

import torch

from pytest_exportcheck.checks.keep_signature import hint_applies, takes_sizes
from pytest_exportcheck.checks.localize import Call
from pytest_exportcheck.spec.case import Case, ModelSpec


def call(fqn: str, *args: object, index: int = 0, **kwargs: object) -> Call:
    return Call(fqn=fqn, index=index, kind="M", inputs=(args, kwargs), output=None)


def case(*preserved: str) -> Case:
    model = ModelSpec(target="m:M")
    return Case("c", Path("c.yaml"), 1, "", model, {}, preserve_signatures=preserved)


def test_a_child_called_once_gets_the_hint() -> None:
    x = torch.randn(2, 4)
    assert hint_applies(case(), "inner", [call("inner", x, scale=2.0)])
    # Called twice alike: torchvision's RAFT update block, preserved, drops its own
    # submodules' calls (torch 2.13), so the key is not known to keep it.
    calls = [call("inner", x, scale=2.0), call("inner", x * 3, index=1, scale=2.0)]
    assert not hint_applies(case(), "inner", calls)


def test_a_child_named_already_gets_no_hint() -> None:
    assert not hint_applies(case("inner"), "inner", [call("inner", torch.randn(2))])
    # A pattern names it too (`*` spans dots, as fnmatch's does).
    assert not hint_applies(case("blocks.*"), "blocks.0.attn", [call("blocks.0.attn")])
    assert hint_applies(case("blocks.*.mlp"), "blocks.0.attn", [call("blocks.0.attn")])


def test_a_child_called_with_other_constants_or_shapes_gets_no_hint() -> None:
    # Measured on torch 2.13: a preserved child keeps its first call's graph, so
    # u.step(x, scale=3.0) computes with 2.0, and a graph of width 8 raises at width 4.
    x = torch.randn(2, 8)
    other_constant = [call("step", x, scale=2.0), call("step", x, index=1, scale=3.0)]
    assert not hint_applies(case(), "step", other_constant)
    other_shape = [call("n", x), call("n", torch.randn(2, 4), index=1)]
    assert not hint_applies(case(), "n", other_shape)
    # Another child's calls do not count.
    assert hint_applies(case(), "n", [call("n", x), call("m", torch.randn(3))])


def test_a_size_the_parent_passes_is_told_apart() -> None:
    x = torch.randn(4, 3, 8)
    eager = call("flat", x)
    assert takes_sizes(call("flat", 4, x), eager)
    assert not takes_sizes(call("flat", x), eager)
    assert not takes_sizes(None, eager)
