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

import torch

VOCAB = 100
HIDDEN = 32
LAYERS = 2


def tiny_bert() -> torch.nn.Module:
    """``BertModel``: 2 layers, hidden 32, 4 heads, intermediate 64, absolute positions."""
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
