"""Builders for pytester projects of YAML cases: model sources, case text, injections."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

MODELS = '''
import random

import torch
from torch import nn


class Mlp(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, 8)
        self.fc2 = nn.Linear(8, dim)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Counter(nn.Module):
    """A buffer mutated in place on every call."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("count", torch.zeros(()))

    def forward(self, x):
        self.count.add_(1)
        return self.lin(x) * self.count


class Tied(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(16, 8)
        self.head = nn.Linear(8, 16, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, ids):
        return self.head(self.emb(ids))


class BatchOne(nn.Module):
    """A branch on batch == 1: exported at batch 4, every program keeps the other branch."""

    def forward(self, x):
        if x.shape[0] == 1:
            return x * 2
        return x - x.mean(0)


class HalfRows(nn.Module):
    """ExportDB's dynamic_shape_round: round() of a dynamic size is refused by export."""

    def forward(self, x):
        return x[: round(x.shape[0] / 2)]


class ConvBatchNorm(nn.Module):
    """A torchvision-style conv/BatchNorm stem: eval mode never reads num_batches_tracked."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).mean((2, 3)))


class PythonCounter(nn.Module):
    """Python-side state: export bakes the first call's value into the graph."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.lin(x) * self.calls


class DataDependent(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x + 1
        return x - 1


class Raising(nn.Module):
    def forward(self, x):
        raise ValueError("forward is broken on purpose")


class Silu(nn.Module):
    def forward(self, x):
        return torch.nn.functional.silu(x)


class Shared(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = self.a

    def forward(self, x):
        return self.b(self.a(x))


class CalledTwice(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(self.lin(x))


class NonPersistent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("scale", torch.full((4,), 2.0), persistent=False)

    def forward(self, x):
        return self.lin(x) * self.scale


class InputMutation(nn.Module):
    def forward(self, x):
        x.add_(1)
        return x * 2


class UnusedParameter(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.unused = nn.Parameter(torch.ones(3))

    def forward(self, x):
        return self.lin(x)


class StochasticDepth(nn.Module):
    """As torchvision's: returns its input object unchanged outside training, no op at all."""

    def forward(self, x):
        if not self.training:
            return x
        return x * (torch.rand(x.shape[0], 1) > 0.1)


class DepthBlocks(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.drop_path = StochasticDepth()

    def forward(self, x):
        return self.drop_path(self.lin(x)) + x


class PrintsThenBranches(nn.Module):
    """Prints a long dump to stderr while it is traced, then branches on data."""

    def forward(self, x):
        import sys

        if _exporting():
            for line in range(400):
                print(f"graph dump line {line}", file=sys.stderr)
        if x.sum() > 0:
            return x + 1
        return x - 1


class ScaledLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, scale=1.0):
        return self.lin(x) * scale


class Pair(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, y):
        return self.lin(x) + y


class PairChild(nn.Module):
    """A child called with two positional tensors, which its graph orders its own way."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = Pair()

    def forward(self, x):
        return self.inner(x, x * 2)


class NeedsParent(nn.Module):
    """Scales by a factor only its parent's forward sets: eager cannot call it alone."""

    def forward(self, x, scale=1.0):
        return x * self.factor * scale


class SetsUpChild(nn.Module):
    """Its child works only inside this forward, and is called with a keyword: the
    unflattened child's call raises, and so does eager's child called alone (a gap)."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = NeedsParent()

    def forward(self, x):
        self.inner.factor = 2.0
        return self.inner(x, scale=3.0)


class SetsUpAttention(nn.Module):
    """SetsUpChild's shape, its child named attn."""

    def __init__(self) -> None:
        super().__init__()
        self.attn = NeedsParent()

    def forward(self, x):
        self.attn.factor = 2.0
        return self.attn(x, scale=3.0)


class KeywordChild(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = ScaledLinear()

    def forward(self, x):
        return self.inner(x, scale=2.0)


class UnusedHeads(nn.Module):
    """Two auxiliary heads forward never calls (as googlenet's aux heads in eval)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.aux1 = nn.Linear(4, 2)
        self.aux2 = nn.Linear(4, 2)

    def forward(self, x):
        return self.lin(x)


class UnreadInput(nn.Module):
    def forward(self, x, unused):
        return x * 2


class TracedConstant(nn.Module):
    """A tensor created inside forward: export lifts it as `lifted_tensor_0`."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x) * torch.tensor([1.0, 2.0, 3.0, 4.0])


class ZeroScratch(nn.Module):
    """Writes zeros into a zero buffer: a mutation that changes no value."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("scratch", torch.zeros(4))

    def forward(self, x):
        self.scratch.zero_()
        return x + self.scratch


class GradModeBranch(nn.Module):
    """Behaves differently under no_grad; export traces with autograd on."""

    def forward(self, x):
        return x * 2 if torch.is_grad_enabled() else x * 3


class Twin(nn.Module):
    """Two same-shaped layers: swapping their mappings keeps every shape right."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x):
        out = self.b(torch.relu(self.a(x)))
        return out, out.pow(2).mean()


class CountingLoss(nn.Module):
    """A counter buffer and a scalar loss output, for the joint graph."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("count", torch.zeros(()))

    def forward(self, x):
        self.count.add_(1)
        out = self.lin(x) * self.count
        return out, out.pow(2).mean()


class Options(nn.Module):
    """Non-tensor inputs beside the tensor: an int, a bool keyword, a None (as Hugging Face's
    ``return_dict=False``), and a loss output."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, repeat=1, scale=None, negate=False):
        out = self.lin(x)
        for _ in range(repeat):
            out = torch.tanh(out)
        if scale is not None:
            out = out * scale
        out = -out if negate else out
        return out, out.pow(2).mean()


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.norm = nn.LayerNorm(8)

    def forward(self, h):
        return self.norm(torch.relu(self.lin(h)) + h)


class NestedTiedShared(nn.Module):
    """Nested blocks, one block registered under two names, a head tied to the embedding."""

    def __init__(self, share: bool = True) -> None:
        super().__init__()
        self.emb = nn.Linear(8, 8, bias=False)
        self.encoder = nn.Sequential(Block(), Block())
        self.shared = Block()
        self.also_shared = self.shared if share else Block()
        self.head = nn.Linear(8, 8, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, x):
        h = self.also_shared(self.shared(self.encoder(self.emb(x))))
        logits = self.head(h)
        return logits, logits.pow(2).mean()


def _exporting() -> bool:
    # torch.compiler.is_exporting() is recent; is_compiling() is also true under export.
    probe = getattr(torch.compiler, "is_exporting", None) or torch.compiler.is_compiling
    return probe()


class Perturbed(nn.Module):
    """Adds 0.1 to its input while being exported (a stand-in for an op whose export
    path differs from its eager one); eager passes the input through."""

    def __init__(self, on: bool = True) -> None:
        super().__init__()
        self.on = on

    def forward(self, x):
        if self.on and _exporting():
            return x + 0.1
        return x


class PerturbedBlock(nn.Module):
    """tanh, not relu: an output that is all zeros for some inputs would be vacuous."""

    def __init__(self, perturb: bool) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.act = Perturbed(perturb)

    def forward(self, x):
        return self.act(torch.tanh(self.lin(x)))


class OneBlockPerturbed(nn.Module):
    """blocks.1.act differs under export; everything before it agrees."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(
            PerturbedBlock(False), PerturbedBlock(True), PerturbedBlock(False)
        )

    def forward(self, x):
        return self.blocks(x)


class SecondCallPerturbed(nn.Module):
    """One module called twice: its exported form differs only on large inputs, which
    only its second call gets."""

    def __init__(self) -> None:
        super().__init__()
        self.act = LargeValuesPerturbed()

    def forward(self, x):
        return self.act(self.act(x) * 100)


class LargeValuesPerturbed(nn.Module):
    def forward(self, x):
        if _exporting():
            return torch.where(x.abs() > 5, x + 0.1, x)
        return x


class Compounding(nn.Module):
    """Eager rounds thirty times (one multiply per step, in the input's dtype); the exported
    form multiplies once. In bfloat16 the two differ by eager's own rounding noise; in
    float64 they agree. ``factor`` != 1.01 under export is a real error."""

    def __init__(self, factor: float = 1.01) -> None:
        super().__init__()
        self.factor = factor

    def forward(self, x):
        if _exporting():
            return (x.float() * (self.factor**30)).to(x.dtype)
        for _ in range(30):
            x = x * 1.01
        return x


class NoisyEagerKernel(nn.Module):
    """Eager's float32 matmul keeps bfloat16 precision (as a GPU kernel with less internal
    precision than its decomposition, cuDNN's GRU on an H100, may); the exported program
    computes in full float32, and float64 eager exactly. ``exported_error`` adds an error
    of that size to the exported program instead."""

    def __init__(self, exported_error: float = 0.0) -> None:
        super().__init__()
        self.lin = nn.Linear(32, 32)
        self.exported_error = exported_error

    def forward(self, x):
        y = self.lin(x)
        if _exporting():
            return y + self.exported_error
        if y.dtype == torch.float32:
            return y.bfloat16().float()
        return y


class HangsInForward(nn.Module):
    """Eager never returns (a Python loop the time limit can interrupt)."""

    def forward(self, x):
        import time

        while True:
            time.sleep(0.01)


class LogOfInput(nn.Module):
    """log() of a randn input: NaN wherever the input is negative."""

    def forward(self, x):
        return torch.log(x)


class DropoutMlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.lin(x))


_CALLS = iter(range(1_000_000))


class CountsItsCalls(nn.Module):
    """Adds how often any instance was called before: no seed fixes that."""

    def forward(self, x):
        return x + next(_CALLS)


_DEFAULT_OFFSET = torch.arange(4.0)


class DefaultTensor(nn.Module):
    """forward takes a tensor by default: export lifts it as a constant."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, offset=_DEFAULT_OFFSET):
        return self.lin(x) + offset


class AbortsInForward(nn.Module):
    """Kills its process in eager (a stand-in for a segfaulting kernel)."""

    def forward(self, x):
        import os

        os.abort()


class AbortsWhileExported(nn.Module):
    """Eager is fine; tracing for export kills the process."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        import os

        if _exporting():
            os.abort()
        return self.lin(x)


class SegfaultsInParity(nn.Module):
    """Eager and its capture are fine; when the parity check runs it, it kills its process
    with SIGSEGV (a stand-in for torch's crash in a lowering's load)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        import inspect
        import os
        import signal

        if any(frame.function == "check_parity" for frame in inspect.stack(0)):
            os.kill(os.getpid(), signal.SIGSEGV)
        return self.lin(x)


class HangsWhileExported(nn.Module):
    """Eager is fine; tracing for export never returns."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        import time

        while _exporting():
            time.sleep(0.01)
        return self.lin(x)


def not_a_module():
    return 42


def make_inputs():
    return (torch.randn(2, 4),), {}


def make_sized_inputs(dims=None):
    batch = 3 if dims is None else dims["batch"]
    return (torch.randn(batch, 4),), {}


def make_marked_inputs():
    x = torch.randn(3, 4)
    torch._dynamo.mark_dynamic(x, 0)
    return (x,), {}


class NarrowsAboveFour(nn.Module):
    def forward(self, x):
        if x.shape[0] > 4:
            return x * 2
        return x
'''


# The `dynamo` capture path needs a torch with dynamo_graph_capture_for_export. Asked
# when a marked test is set up (tests/conftest.py), not when this module is imported:
# asking imports torch._dynamo (~2.5 s), and the xdist controller, which imports the
# conftest and so this module, runs no test.
needs_dynamo = pytest.mark.needs_dynamo


def capture_params(*names: str) -> list[Any]:
    """Capture names as pytest params, `dynamo` skipped where torch lacks it."""
    return [pytest.param(n, marks=needs_dynamo) if n == "dynamo" else n for n in names]


def load_case(root: Any, text: str) -> Any:
    """The one case of ``text``, written as ``root/cases.yaml`` beside ``MODELS``."""
    from pytest_exportcheck.spec import load_case_file

    (root / "models.py").write_text(MODELS)
    (root / "cases.yaml").write_text(text)
    (entry,) = load_case_file(root / "cases.yaml")
    assert entry.case is not None
    return entry.case


def write_cases(pytester: pytest.Pytester, text: str, name: str = "cases/main.yaml") -> None:
    path = pytester.path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())


def saved_as_older(
    pytester: pytest.Pytester, torch_version: str, *args: str
) -> tuple[Path, pytest.RunResult]:
    """Save the project's programs with this torch (``--exportcheck-save-programs=progs``),
    then make them look saved by ``torch_version``: the folder and each ``about.json``
    renamed, the files this torch's own. Returns the folder and the saving run."""
    import torch

    from pytest_exportcheck.saved_programs.store import minor_label, minor_of

    saved = pytester.runpytest(
        "--exportcheck", "-p", "no:cacheprovider", "--exportcheck-save-programs=progs", *args
    )
    assert saved.ret == 0, saved.stdout.str()
    root = pytester.path / "progs"
    older = root / f"torch-{minor_label(minor_of(torch_version))}"
    shutil.move(root / f"torch-{minor_label(minor_of(torch.__version__))}", older)
    for about in older.glob("*/*/about.json"):
        text = json.loads(about.read_text())
        about.write_text(json.dumps({**text, "torch": torch_version}))
    return older, saved


def load_older(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """The ``loaded`` items of what :func:`saved_as_older` left in ``progs``."""
    return pytester.runpytest(
        "--exportcheck", "-p", "no:cacheprovider", "--exportcheck-load-programs=progs",
        "-k", "loaded", *args,
    )  # fmt: skip


MLP_CASE = """
cases:
  mlp:
    description: a plain MLP
    model: {target: models.py:Mlp}
    inputs: {args: [{shape: [2, 4]}]}
"""


# An `inject` body: the export capture re-exported without `dynamic_shapes`, so every
# dim it was asked to keep dynamic is static (what a torch that specializes them gives).
REEXPORTED_STATIC = """
import copy
static = torch.export.export(copy.deepcopy(record.captured_model), record.subject.inputs_copy()[0])
record.program = static
record._runnables.clear()
"""


def inject(pytester: pytest.Pytester, body: str, capture: str = "export") -> None:
    """Corrupt what a capture path returns, to prove a check catches it.

    ``body`` edits ``record`` (a CaptureRecord) in place; the wrapper is
    installed for one pytester run and removed at its end.
    """
    pytester.makeconftest(
        f"""
import torch
from pytest_exportcheck import capture as registry

def pytest_configure(config):
    original = registry.CAPTURES[{capture!r}]

    def corrupted(subject):
        record = original(subject)
{textwrap.indent(textwrap.dedent(body).strip(), " " * 8)}
        return record

    config.stash_original_capture = original
    registry.CAPTURES[{capture!r}] = corrupted

def pytest_unconfigure(config):
    registry.CAPTURES[{capture!r}] = config.stash_original_capture
"""
    )


def load_models(pytester: pytest.Pytester) -> Any:
    """The project's ``cases/models.py`` as a module, to build a model directly in a test."""
    from pytest_exportcheck.model.targets import resolve_target

    return sys.modules[resolve_target("models.py:Mlp", pytester.path / "cases").__module__]


# Two cases with recorded items: counter (export) and mlp (export, dynamo-legacy).
RECORDED_CASES = """
cases:
  counter:
    description: a counter buffer
    model: {target: models.py:Counter}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [recorded]
  mlp:
    description: a plain MLP
    model: {target: models.py:Mlp}
    inputs: {args: [{shape: [2, 4]}]}
    captures: [export, dynamo-legacy]
    checks: [recorded]
"""


# A test module of the pytester project: the models are the ones cases/models.py
# holds (the YAML cases' own classes), resolved the way a YAML target is.
API_TEST_HEADER = """
from pathlib import Path

import torch
from pytest_exportcheck.model.targets import resolve_target

def model(name):
    return resolve_target(f"models.py:{name}", Path(__file__).parent / "cases")()
"""


def write_api_test(pytester: pytest.Pytester, body: str, name: str = "test_model") -> str:
    """A test file: API_TEST_HEADER, then ``body``. Returns its name (as messages show it)."""
    source = API_TEST_HEADER + textwrap.dedent(body)
    pytester.makepyfile(**{name: source})
    return f"{name}.py"
