"""Tiny Hugging Face transformers models, built from a config: nothing is downloaded.

Each factory imports transformers inside the function, so this file imports without
it (the cases that use it say ``requires: ["transformers==4.57.6"]`` and skip before any
factory runs). Sizes are the smallest that keep each architecture's structure: two
layers, hidden 32, a 100-token vocabulary; weights come from the config's own
initializer under the case's seed. ``use_cache=False`` is set where the model has a
KV cache: with it on, GPT-2 and Llama return a ``DynamicCache`` in their output,
which is not a pytree node, and export refuses it (transformers 4.57.6, torch 2.13:
non-strict ``RuntimeError: Found <class 'transformers.cache_utils.DynamicCache'> in
output, which is not a known type``; strict ``AssertionError: Encountered
unrecognized type UserDefinedObjectVariable(DynamicCache) at output 1``).

The cases call them with ``return_dict=False`` (an input of the case), so they
return plain tuples instead of their ``ModelOutput`` dataclasses. Export handles
ModelOutput (transformers registers each subclass as a pytree node), but without a
``flatten_with_keys_fn``, and the plugin compares outputs with
``torch.utils._pytree.tree_flatten_with_path``, which raises ``ValueError: Did not
find a flatten_with_keys_fn`` for such a node: hierarchy, mutation, parity and
consistency items fail as [internal] errors (transformers 4.57.6, torch 2.13). Not in the
config: ``LlamaConfig(return_dict=False)`` breaks eager LlamaForCausalLM in 4.57.6
(its inner LlamaModel then returns a tuple, and the outer forward reads
``outputs.last_hidden_state``: AttributeError); the call's keyword is popped by the
outer forward and the inner model keeps returning its dataclass. No wrapper module
is needed, so the module tree and state names are transformers' own.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

# The name cases/field/zoo.py loads the shim under: one module however it was first loaded.
_SHIM_NAME = "exportcheck_field_torchvision_cpu"
_SHIM = Path(__file__).resolve().parents[2] / "field" / "torchvision_cpu.py"


def _transformers_importable() -> None:
    """transformers imports torchvision where it is installed, and torchvision 0.28.0 imports
    on torch 2.13.0+cpu only through cases/field/torchvision_cpu.py. cases/field/conftest.py
    loads it for a pytest run; loaded here too, a factory works in any process, such as
    the plain-torch reproduction ``--exportcheck-repro`` writes (it runs no conftest)."""
    if importlib.util.find_spec("torchvision") is None or not _SHIM.is_file():
        return
    shim = sys.modules.get(_SHIM_NAME)
    if shim is None:
        spec = importlib.util.spec_from_file_location(_SHIM_NAME, _SHIM)
        assert spec is not None and spec.loader is not None
        shim = importlib.util.module_from_spec(spec)
        sys.modules[_SHIM_NAME] = shim
        spec.loader.exec_module(shim)
    shim.load()


VOCAB = 100
HIDDEN = 32
LAYERS = 2


def tiny_bert() -> torch.nn.Module:
    """``BertModel``: 2 layers, hidden 32, 4 heads, intermediate 64, absolute positions."""
    _transformers_importable()
    from transformers import BertConfig, BertModel

    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        type_vocab_size=2,
        attn_implementation="eager",
    )
    return BertModel(config)


def tiny_gpt2() -> torch.nn.Module:
    """``GPT2LMHeadModel``: 2 layers, n_embd 32, 4 heads; lm_head tied to wte."""
    _transformers_importable()
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=VOCAB,
        n_positions=64,
        n_embd=HIDDEN,
        n_layer=LAYERS,
        n_head=4,
        use_cache=False,
        attn_implementation="eager",
    )
    return GPT2LMHeadModel(config)


def tiny_llama() -> torch.nn.Module:
    """``LlamaForCausalLM``: 2 layers, hidden 32, 4 query / 2 key-value heads, RoPE."""
    _transformers_importable()
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        intermediate_size=64,
        num_hidden_layers=LAYERS,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        use_cache=False,
        attn_implementation="eager",
    )
    return LlamaForCausalLM(config)
