"""Write a deterministic corpus of small, varied exportcheck cases for the benchmarks.

    python benchmarks/generate_cases.py                  # 120 cases into benchmarks/generated/
    python benchmarks/generate_cases.py --count 500 --out /tmp/corpus

The output directory gets ``gen_models.py`` (every model class the cases use),
``gen_NNN.yaml`` files of ``--per-file`` cases each, and ``manifest.json``
(case → file, kind, parameter count) from which ``run.py`` picks the largest
case. Case ``i`` depends only on ``(--seed, i)``, so a corpus of 500 is a
superset of the corpus of 120 with the same seed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "generated"
DEFAULT_COUNT = 120
DEFAULT_SEED = 0
DEFAULT_PER_FILE = 10
MODELS_FILE = "gen_models.py"
MANIFEST_FILE = "manifest.json"
ALL_CHECKS = ("signature", "hierarchy", "mutation", "parity")

MODELS_SOURCE = '''\
"""Models of the generated benchmark corpus (written by benchmarks/generate_cases.py)."""

from __future__ import annotations

import torch
from torch import nn

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, "silu": nn.SiLU}


class DeepMLP(nn.Module):
    """Linear layers in a ModuleList, one activation module reused between them."""

    def __init__(self, dims: list[int], act: str = "relu", norm: bool = False) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.use_norm = norm
        if norm:
            self.norms = nn.ModuleList(nn.LayerNorm(d) for d in dims[1:-1])
        self.act = ACTIVATIONS[act]()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < last:
                if self.use_norm:
                    x = self.norms[i](x)
                x = self.act(x)
        return x


class ConvNet(nn.Module):
    """Conv2d (+BatchNorm2d) + ReLU stages in a Sequential, optional pooling, a Linear head."""

    def __init__(
        self,
        in_ch: int,
        channels: list[int],
        kernel: int = 3,
        classes: int = 4,
        batchnorm: bool = True,
        pool: bool = True,
    ) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        prev = in_ch
        for ch in channels:
            layers.append(nn.Conv2d(prev, ch, kernel, padding=kernel // 2))
            if batchnorm:
                layers.append(nn.BatchNorm2d(ch))
            layers.append(nn.ReLU())
            prev = ch
        self.features = nn.Sequential(*layers)
        self.use_pool = pool
        if pool:
            self.pool = nn.MaxPool2d(2)
        self.head = nn.Linear(prev, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        if self.use_pool:
            x = self.pool(x)
        return self.head(x.mean(dim=(2, 3)))


class CountingMLP(nn.Module):
    """Buffers mutated in forward: an int64 call counter and a running mean (EMA)."""

    def __init__(self, dim: int, hidden: int, momentum: float = 0.9) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.momentum = momentum
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64))
        self.register_buffer("running", torch.zeros(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        self.calls.add_(1)
        self.running.mul_(self.momentum).add_(h.detach().mean(0), alpha=1.0 - self.momentum)
        return self.fc2(h - self.running) * self.calls


class TiedLM(nn.Module):
    """Embedding and output head share one weight (tied)."""

    def __init__(self, vocab: int, dim: int, layers: int) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(nn.Linear(dim, dim) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.emb(ids)
        for layer in self.layers:
            x = x + torch.tanh(layer(x))
        return self.head(self.norm(x))


class NestedNet(nn.Module):
    """ModuleList of Sequential of Sequential, a ModuleDict of heads, a dict output."""

    def __init__(self, dim: int, stages: int, depth: int) -> None:
        super().__init__()
        self.stages = nn.ModuleList(
            nn.Sequential(*[nn.Sequential(nn.Linear(dim, dim), nn.Tanh()) for _ in range(depth)])
            for _ in range(stages)
        )
        self.heads = nn.ModuleDict({"cls": nn.Linear(dim, 2), "reg": nn.Linear(dim, 1)})

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        for stage in self.stages:
            x = x + stage(x)
        return {"cls": self.heads["cls"](x), "reg": self.heads["reg"](x)}


class DictInputNet(nn.Module):
    """A dict of tensors in, a per-key projection, a float keyword, a tuple out."""

    def __init__(self, keys: list[str], dim: int, out: int) -> None:
        super().__init__()
        self.keys = list(keys)
        self.proj = nn.ModuleDict({k: nn.Linear(dim, out) for k in keys})

    def forward(
        self, feats: dict[str, torch.Tensor], scale: float = 1.0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        total = self.proj[self.keys[0]](feats[self.keys[0]])
        for key in self.keys[1:]:
            total = total + self.proj[key](feats[key])
        return total * scale, feats[self.keys[0]].sum(dim=-1)


class ResidualNorm(nn.Module):
    """Pre-norm residual blocks, then one Linear applied ``repeat`` times."""

    def __init__(self, dim: int, blocks: int, repeat: int) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim), nn.GELU()) for _ in range(blocks)
        )
        self.shared = nn.Linear(dim, dim)
        self.repeat = repeat

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = x + block(x)
        for _ in range(self.repeat):
            x = self.shared(x)
        return x


class InputScaler(nn.Module):
    """Scales its first input in place (a user-input mutation)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.linspace(0.5, 1.5, dim))
        self.lin = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x.mul_(self.scale.detach())
        return self.lin(x) - y


class ConstantsNet(nn.Module):
    """A plain tensor attribute (a lifted constant) and a non-persistent buffer."""

    def __init__(self, dim: int, out: int) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, out)
        self.table = torch.linspace(-1.0, 1.0, out)
        self.register_buffer("offset", torch.full((out,), 0.1), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * self.table + self.offset
'''


@dataclass(frozen=True)
class GeneratedCase:
    name: str
    kind: str
    spec: dict[str, Any]


def tensor(shape: list[int], **extra: Any) -> dict[str, Any]:
    return {"shape": shape, **extra}


def _mlp(rng: random.Random) -> tuple[dict[str, Any], dict[str, Any], list[str] | None]:
    depth = rng.randint(1, 6)
    dims = [rng.choice([4, 8, 16, 32, 64]) for _ in range(depth + 1)]
    kwargs = {"dims": dims, "act": rng.choice(["relu", "gelu", "tanh", "silu"])}
    if depth > 1 and rng.random() < 0.4:
        kwargs["norm"] = True
    inputs = {"args": [tensor([rng.randint(1, 4), dims[0]])]}
    return {"kwargs": kwargs}, inputs, []


def _conv(rng: random.Random) -> tuple[dict[str, Any], dict[str, Any], list[str] | None]:
    channels = [rng.choice([2, 4, 8]) for _ in range(rng.randint(1, 3))]
    batchnorm = rng.random() < 0.7
    kwargs = {
        "in_ch": rng.choice([1, 3]),
        "channels": channels,
        "kernel": rng.choice([1, 3]),
        "classes": rng.randint(2, 6),
        "batchnorm": batchnorm,
        "pool": rng.random() < 0.6,
    }
    train = batchnorm and rng.random() < 0.4
    model: dict[str, Any] = {"kwargs": kwargs}
    mutated: list[str] = []
    if train:
        model["mode"] = "train"
        index, stage = 0, []
        for _ in channels:
            stage.append(index + 1)  # conv, bn, relu: the bn is the second module of a stage
            index += 3
        mutated = [
            f"features.{i}.{name}"
            for i in stage
            for name in ("running_mean", "running_var", "num_batches_tracked")
        ]
    inputs = {"args": [tensor([rng.randint(2, 3), kwargs["in_ch"], 8, 8])]}
    return model, inputs, mutated


def _counter(rng: random.Random) -> tuple[dict[str, Any], dict[str, Any], list[str] | None]:
    dim, hidden = rng.choice([4, 8, 16]), rng.choice([8, 16, 32])
    kwargs = {"dim": dim, "hidden": hidden, "momentum": rng.choice([0.5, 0.9, 0.99])}
    return {"kwargs": kwargs}, {"args": [tensor([rng.randint(2, 4), dim])]}, ["calls", "running"]


def _tied(rng: random.Random) -> tuple[dict[str, Any], dict[str, Any], list[str] | None]:
    vocab, dim = rng.choice([8, 16, 32]), rng.choice([4, 8, 16])
    kwargs = {"vocab": vocab, "dim": dim, "layers": rng.randint(0, 2)}
    ids = tensor([rng.randint(1, 3), rng.randint(2, 6)], dtype="int64", low=0, high=vocab)
    return {"kwargs": kwargs}, {"args": [ids]}, []


def _nested(rng: random.Random) -> tuple[dict[str, Any], dict[str, Any], list[str] | None]:
    dim = rng.choice([4, 8, 16])
    kwargs = {"dim": dim, "stages": rng.randint(1, 3), "depth": rng.randint(1, 3)}
    return {"kwargs": kwargs}, {"args": [tensor([rng.randint(1, 4), dim])]}, []


def _dict_input(rng: random.Random) -> tuple[dict[str, Any], dict[str, Any], list[str] | None]:
    keys = rng.sample(["img", "txt", "audio", "depth"], rng.randint(1, 3))
    dim, batch = rng.choice([4, 8]), rng.randint(1, 3)
    kwargs = {"keys": keys, "dim": dim, "out": rng.choice([2, 4, 8])}
    inputs = {
        "args": [{key: tensor([batch, dim]) for key in keys}],
        "kwargs": {"scale": rng.choice([0.5, 1.0, 2.0])},
    }
    return {"kwargs": kwargs}, inputs, []


def _residual(rng: random.Random) -> tuple[dict[str, Any], dict[str, Any], list[str] | None]:
    dim = rng.choice([8, 16, 32])
    kwargs = {"dim": dim, "blocks": rng.randint(1, 4), "repeat": rng.randint(1, 3)}
    return {"kwargs": kwargs}, {"args": [tensor([rng.randint(1, 3), 3, dim])]}, []


def _input_mutation(rng: random.Random) -> tuple[dict[str, Any], dict[str, Any], list[str] | None]:
    dim, batch = rng.choice([4, 8, 16]), rng.randint(1, 4)
    return {"kwargs": {"dim": dim}}, {"args": [tensor([batch, dim]), tensor([batch, dim])]}, []


def _constants(rng: random.Random) -> tuple[dict[str, Any], dict[str, Any], list[str] | None]:
    dim, out = rng.choice([4, 8, 16]), rng.choice([2, 4, 8])
    return {"kwargs": {"dim": dim, "out": out}}, {"args": [tensor([rng.randint(1, 4), dim])]}, []


Maker = Callable[[random.Random], tuple[dict[str, Any], dict[str, Any], list[str] | None]]

# kind -> (model class, weight, what the case exercises, maker)
KINDS: dict[str, tuple[str, int, str, Maker]] = {
    "mlp": ("DeepMLP", 20, "MLP of varied depth/width, one activation module reused", _mlp),
    "conv": ("ConvNet", 12, "conv stack, BatchNorm eval or train (buffers mutated)", _conv),
    "counter": ("CountingMLP", 12, "counter and running-mean buffers mutated in forward", _counter),
    "tied": ("TiedLM", 10, "embedding and head weight tied", _tied),
    "nested": ("NestedNet", 12, "nested ModuleList/Sequential/ModuleDict, dict output", _nested),
    "dict_input": ("DictInputNet", 10, "dict input, float keyword, tuple output", _dict_input),
    "residual": ("ResidualNorm", 10, "residual LayerNorm blocks, a Linear reused", _residual),
    "input_mutation": ("InputScaler", 7, "forward scales its input in place", _input_mutation),
    "constants": ("ConstantsNet", 7, "tensor constant and non-persistent buffer", _constants),
}  # fmt: skip


def make_case(seed: int, index: int) -> GeneratedCase:
    """Case ``index`` of the corpus: a function of ``(seed, index)`` only."""
    rng = random.Random(f"exportcheck-bench:{seed}:{index}")
    names = list(KINDS)
    kind = rng.choices(names, weights=[KINDS[k][1] for k in names])[0]
    cls, _, what, maker = KINDS[kind]
    model, inputs, mutated = maker(rng)
    spec: dict[str, Any] = {
        "description": f"generated #{index}: {what}",
        "model": {"target": f"{MODELS_FILE}:{cls}", **model},
        "inputs": inputs,
        "seed": index,
        "captures": ["export", "export-strict"] if rng.random() < 0.25 else ["export"],
    }
    if rng.random() < 0.2:
        chosen = [c for c in ALL_CHECKS if rng.random() < 0.5] or [rng.choice(ALL_CHECKS)]
        spec["checks"] = chosen
    expect: dict[str, Any] = {}
    if mutated is not None:
        expect["mutated_buffers"] = mutated
    if rng.random() < 0.3:
        expect["parity"] = {"steps": 2}
    if rng.random() < 0.3:
        expect["mutation"] = {"steps": rng.choice([2, 4])}
    if kind == "tied" and len(spec["captures"]) > 1:
        # No draw from rng here: the other cases of the corpus stay as they were.
        reason = "non-strict export lifts the tied weight once per name, strict export once"
        expect["consistency"] = {"accept": [{"row": "lifted: emb.weight", "reason": reason}]}
    if expect:
        spec["expect"] = expect
    return GeneratedCase(f"gen_{index:04d}_{kind}", kind, spec)


def _parameter_count(models: Any, case: GeneratedCase) -> int:
    """Elements of every parameter, buffer and tensor constant of the case's model."""
    import torch

    target = case.spec["model"]["target"].split(":")[1]
    module = getattr(models, target)(**case.spec["model"].get("kwargs", {}))
    tensors = {id(t): t.numel() for t in module.parameters()}
    tensors.update({id(t): t.numel() for t in module.buffers()})
    for sub in module.modules():
        for value in vars(sub).values():
            if isinstance(value, torch.Tensor):
                tensors[id(value)] = value.numel()
    return sum(tensors.values())


def generate(
    out: Path,
    count: int = DEFAULT_COUNT,
    *,
    seed: int = DEFAULT_SEED,
    per_file: int = DEFAULT_PER_FILE,
    sizes: bool = True,
) -> list[Path]:
    """Write the corpus into ``out`` (stale ``gen_*.yaml`` removed); return the YAML files."""
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("gen_*.yaml"):
        stale.unlink()
    models_path = out / MODELS_FILE
    models_path.write_text(MODELS_SOURCE, encoding="utf-8")

    cases = [make_case(seed, i) for i in range(count)]
    models = _load_models(models_path) if sizes else None
    files: list[Path] = []
    manifest: list[dict[str, Any]] = []
    for start in range(0, count, per_file):
        chunk = cases[start : start + per_file]
        path = out / f"gen_{start // per_file:03d}.yaml"
        header = (
            f"# Generated by benchmarks/generate_cases.py (seed {seed}, cases {start}"
            f"-{start + len(chunk) - 1}); do not edit.\n"
        )
        body = yaml.safe_dump(
            {"cases": {c.name: c.spec for c in chunk}},
            sort_keys=False,
            default_flow_style=None,
            width=100,
        )
        path.write_text(header + body, encoding="utf-8")
        files.append(path)
        for case in chunk:
            entry: dict[str, Any] = {"file": path.name, "name": case.name, "kind": case.kind}
            if models is not None:
                entry["elements"] = _parameter_count(models, case)
            manifest.append(entry)
    (out / MANIFEST_FILE).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return files


def largest_case(out: Path) -> tuple[Path, str]:
    """``(file, case name)`` of the case with the most parameter/buffer elements."""
    manifest = json.loads((out / MANIFEST_FILE).read_text(encoding="utf-8"))
    best = max(manifest, key=lambda entry: (entry.get("elements", 0), entry["name"]))
    return out / best["file"], best["name"]


def _load_models(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("_exportcheck_bench_models", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT, help="number of cases")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--per-file", type=int, default=DEFAULT_PER_FILE, help="cases per YAML")
    parser.add_argument(
        "--no-sizes", action="store_true", help="skip model sizes in the manifest (no torch)"
    )
    args = parser.parse_args(argv)
    files = generate(
        args.out, args.count, seed=args.seed, per_file=args.per_file, sizes=not args.no_sizes
    )
    print(f"wrote {args.count} cases in {len(files)} files to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
