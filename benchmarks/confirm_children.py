"""Plain torch, no plugin: the field corpus's hierarchy findings on unflattened children.

Each model is exported (non-strict) and unflattened twice, without and with
``preserve_module_call_signature`` for the children named; each child is then called
as eager called it (its first call, recorded with a forward hook: arguments and
keywords as given), and what it returns is compared with eager's: its structure
(pytree), then each tensor (``allclose``, atol 1e-5, rtol 1e-4). Run in the field
environment (torchvision 0.28, timm 1.0.31, transformers 4.57.6; docs/field-corpus.md):

    python benchmarks/confirm_children.py            # every model below
    python benchmarks/confirm_children.py vit bert   # some
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path
from typing import Any

import torch
from torch.utils import _pytree as pytree

warnings.simplefilter("ignore")
ROOT = Path(__file__).resolve().parents[1]


def _module(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compared(eager: Any, got: Any) -> str:
    eager_leaves, eager_spec = pytree.tree_flatten(eager)
    got_leaves, got_spec = pytree.tree_flatten(got)
    if eager_spec != got_spec:
        return f"structure differs: eager {type(eager).__name__}, unflattened {type(got).__name__}"
    for want, have in zip(eager_leaves, got_leaves, strict=True):
        if isinstance(want, torch.Tensor):
            if want.shape != have.shape:
                return f"shape {tuple(want.shape)} vs {tuple(have.shape)}"
            if not torch.allclose(want, have, atol=1e-5, rtol=1e-4):
                return f"values differ, max abs {(want - have).abs().max().item():.3g}"
        elif want != have:
            return f"constant {want!r} vs {have!r}"
    return "equal"


def probe(label: str, model: torch.nn.Module, args: tuple, kwargs: dict, children: list[str],
          preserve: tuple[str, ...], dynamic: Any = None) -> None:  # fmt: skip
    model = model.eval()
    calls: dict[str, Any] = {}

    entered: dict[str, Any] = {}

    def clone(tree: Any) -> Any:  # HRNet's modules write into the list they are given
        return pytree.tree_map(lambda v: v.clone() if isinstance(v, torch.Tensor) else v, tree)

    def on_entry(fqn: str) -> Any:
        def record(module: Any, args: Any, kwargs: Any) -> None:
            entered.setdefault(fqn, clone((args, kwargs)))

        return record

    def on_exit(fqn: str) -> Any:
        def record(module: Any, args: Any, out: Any) -> None:  # None: the output is kept
            calls.setdefault(fqn, (*entered[fqn], clone(out)))

        return record

    hooks = []
    for fqn in children:
        child = model.get_submodule(fqn)
        hooks.append(child.register_forward_pre_hook(on_entry(fqn), with_kwargs=True))
        hooks.append(child.register_forward_hook(on_exit(fqn)))
    with torch.no_grad():
        model(*args, **kwargs)
    for hook in hooks:
        hook.remove()
    for kept in ((), preserve):
        program = torch.export.export(
            model, args, kwargs, dynamic_shapes=dynamic, preserve_module_call_signature=kept
        )
        unflattened = torch.export.unflatten(program)
        for fqn in children:
            a, k, out = calls[fqn]
            try:
                with torch.no_grad():
                    verdict = compared(out, unflattened.get_submodule(fqn)(*a, **k))
            except Exception as exc:
                verdict = f"raises {type(exc).__name__}: {str(exc).splitlines()[0][:110]}"
            print(f"{label:14s} {'preserved' if kept else 'default  '} {fqn}: {verdict}")


def raft_calls(zoo: Any) -> None:
    """RAFT runs its update block once per flow update: the child calls of its submodules
    that unflatten keeps, by default and with the update block preserved."""
    model = zoo.tv("raft_small").eval()
    frames = (torch.randn(2, 3, 128, 128), torch.randn(2, 3, 128, 128))
    for kept in ((), ("update_block",)):
        program = torch.export.export(
            model, frames, {"num_flow_updates": 3}, preserve_module_call_signature=kept
        )
        unflattened = torch.export.unflatten(program)
        calls = sum(
            node.op == "call_module" and "motion_encoder" in str(node.target)
            for module in unflattened.modules()
            if isinstance(getattr(module, "graph", None), torch.fx.Graph)
            for node in module.graph.nodes
        )
        label = "preserved" if kept else "default  "
        print(f"raft_small     {label} call_module nodes of update_block.motion_encoder: {calls}")


def main(which: list[str]) -> None:
    sys.path.insert(0, str(ROOT / "cases" / "field"))
    zoo = _module("exportcheck_field_zoo", ROOT / "cases" / "field" / "zoo.py")
    zoo._torchvision()
    torch.manual_seed(0)
    image = torch.randn(2, 3, 64, 64)
    models = {
        "vit": lambda: ("vit_tiny", zoo.timm_model("vit_tiny_patch16_224", img_size=64), (image,),
                        {}, ["blocks.0.attn"], ("blocks.0.attn",)),
        "vit_dynamic": lambda: ("vit_dynamic", zoo.timm_model("vit_tiny_patch16_224",
                                img_size=64), (image,), {}, ["blocks.0.attn"], ("blocks.0.attn",),
                                {"x": {0: torch.export.Dim("batch", min=1, max=8)}}),
        "swin": lambda: ("swin_tiny", zoo.timm_model("swin_tiny_patch4_window7_224", img_size=64,
                         window_size=2), (image,), {}, ["layers.0.blocks.0.attn"],
                         ("layers.0.blocks.0.attn",)),
        "xcit": lambda: ("xcit_nano", zoo.timm_model("xcit_nano_12_p16_224", img_size=64),
                         (image,), {}, ["patch_embed"], ("patch_embed",)),
        "deeplab": lambda: ("deeplabv3", zoo.tv("deeplabv3_mobilenet_v3_large",
                            weights_backbone=None), (image,), {}, ["backbone"], ("backbone",)),
        "lraspp": lambda: ("lraspp", zoo.tv("lraspp_mobilenet_v3_large", weights_backbone=None),
                           (image,), {}, ["backbone", "classifier"], ("backbone", "classifier")),
        "densenet": lambda: ("densenet121", zoo.tv("densenet121"), (image,), {},
                             ["features.denseblock1.denselayer1"],
                             ("features.denseblock1.denselayer1",)),
        "dla": lambda: ("dla46_c", zoo.timm_model("dla46_c"), (image,), {},
                        ["level2.root", "level3.tree1"], ("level2.root", "level3.tree1")),
        "hrnet": lambda: ("hrnet_w18_s", zoo.timm_model("hrnet_w18_small"), (image,), {},
                          ["stage2.0"], ("stage2.0",)),
    }  # fmt: skip
    hf = ROOT / "cases" / "thirdparty" / "models" / "hf.py"
    if hf.exists():
        ids = torch.randint(0, 100, (2, 8))
        mask = torch.ones(2, 8, dtype=torch.int64)
        bert_kept = (
            "embeddings",
            "encoder",
            "encoder.layer.0",
            "encoder.layer.0.attention",
            "encoder.layer.0.attention.self",
            "encoder.layer.0.attention.output",
        )
        models["bert"] = lambda: (
            "bert_tiny", _module("hf_models", hf).tiny_bert(), (ids,),
            {"attention_mask": mask, "return_dict": False},
            ["embeddings", "encoder.layer.0.attention.output"], bert_kept,
        )  # fmt: skip
    print(torch.__version__)
    if not which or "raft" in which:
        raft_calls(zoo)
    for name in [w for w in which if w != "raft"] if which else list(models):
        try:
            probe(*models[name]())
        except Exception as exc:  # one model's trouble does not hide the others'
            print(f"{name}: {type(exc).__name__}: {str(exc).splitlines()[0][:150]}")


if __name__ == "__main__":
    main(sys.argv[1:])
