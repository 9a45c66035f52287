"""The hierarchy replay's models and case helpers, shared by its test files
(``test_hierarchy_replay.py``, ``test_child_calls.py``)."""

from __future__ import annotations

import textwrap

import pytest
from casekit import inject

REPLAY_MODELS = '''
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


class Shifted(nn.Module):
    """Reads its parent's buffer through a plain reference (not a submodule of its own)."""

    def __init__(self, holder: nn.Module) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        object.__setattr__(self, "holder", holder)

    def forward(self, x):
        return self.lin(x) + self.holder.shift


class ShiftsNet(nn.Module):
    """unflatten gives ``shifted`` the root's buffer as an input: u.shifted(x) raises."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("shift", torch.ones(8))
        self.shifted = Shifted(self)

    def forward(self, x):
        return self.shifted(x)
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
