"""How a submodule call reads to a user, and whether a child kept eager's return convention.

The hierarchy replay (``submodules.py``) calls an unflattened child the way a
user would, ``u.blocks[0](x, mask=m)``, and its findings quote that call. A
child that computes the right values but returns them in another container
(measured on torch 2.13: eager ``HeadOut(logits=..., hidden=...)``, unflattened
a bare ``Tensor``) breaks every caller that reads ``.logits``: the return
convention is judged here, by the containers of both returns, not by values.
"""

from __future__ import annotations

import dataclasses
import keyword
from typing import Any

import torch
from torch.utils import _pytree as pytree

from pytest_exportcheck.checks.child_outputs import describe_leaf
from pytest_exportcheck.checks.listdiff import capped

_FIELDS_SHOWN = 6  # a ModelOutput of 12 fields still reads on one line


def module_access(path: str) -> str:
    """``blocks.attn`` → ``u.blocks.attn``: how a user reaches the unflattened child. A
    list's item is ``get_submodule``'s: unflatten's ``layers`` is no ``ModuleList`` and
    ``u.layers[0]`` raises (torch 2.13), and a call traced apart (``n@1``) has no attribute."""
    parts = path.split(".")
    if all(p.isidentifier() and not keyword.iskeyword(p) for p in parts):
        return "u." + path
    return f"u.get_submodule({path!r})"


def render_value(value: Any, depth: int = 0) -> str:
    """A short spelling of an argument: tensors by dtype and shape, others by ``repr``."""
    if isinstance(value, torch.Tensor):
        return describe_leaf(value)
    if depth < 2 and isinstance(value, (tuple, list)):
        inner = capped([render_value(v, depth + 1) for v in value], limit=4)
        return (
            f"({inner}{',' if len(value) == 1 else ''})"
            if isinstance(value, tuple)
            else (f"[{inner}]")
        )
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def render_call(path: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """``u.inner(float32[2, 4], scale=2.0)``."""
    parts = [render_value(a) for a in args] + [f"{k}={render_value(v)}" for k, v in kwargs.items()]
    return f"{module_access(path)}({capped(parts, limit=6)})"


def structure(value: Any, depth: int = 0) -> str:
    """The container shape of a return, without values: ``Tensor``,
    ``tuple(Tensor, None)``, ``HeadOut(.logits, .hidden)``, ``dict('a', 'b')``."""
    if isinstance(value, torch.Tensor):
        return "Tensor"
    if value is None or isinstance(value, (bool, int, float, str)):
        return type(value).__name__ if value is not None else "None"
    # torch.fx's immutable_list is what an unflattened child's list is: a list to callers.
    name = type(value).__name__.removeprefix("immutable_")
    if depth >= 2:
        return name
    fields = _fields(value)
    if fields is not None:
        return f"{name}({capped([f'.{f}' for f in fields], limit=_FIELDS_SHOWN)})"
    if isinstance(value, dict):
        return f"{name}({capped([repr(k) for k in value], limit=_FIELDS_SHOWN)})"
    if isinstance(value, (tuple, list)):
        inner = [structure(v, depth + 1) for v in value]
        return f"{name}({capped(inner, limit=_FIELDS_SHOWN)})"
    if type(value) in pytree.SUPPORTED_NODES:
        children, _ = pytree.tree_flatten(value)
        return f"{name}({len(children)} leaves)"
    return name


def _fields(value: Any) -> list[str] | None:
    """Names a caller reads a return by: a dataclass's fields, a namedtuple's, the keys of a
    ``ModelOutput`` (an ``OrderedDict`` whose keys are its set fields)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if isinstance(value, dict):  # ModelOutput: a dataclass and a dict; unset fields absent
            return [str(k) for k in value]
        return [f.name for f in dataclasses.fields(value)]
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return list(type(value)._fields)
    return None


def return_change(eager_output: Any, unflat_output: Any) -> str | None:
    """How the unflattened child's return differs in kind from eager's, or None if alike:
    ``returns Tensor where eager's returns HeadOut(.logits, .hidden)``."""
    want, got = structure(eager_output), structure(unflat_output)
    if want == got:
        return None
    return f"returns {got} where eager's returns {want}"


def read_by_caller(eager_output: Any, got: Any = None) -> str | None:
    """How a caller reads eager's return (``.logits``, ``[0]``, ``[1][0]``) where the
    child's return ``got`` no longer gives what eager's did, to say what breaks."""
    sequences = isinstance(eager_output, (tuple, list)) and isinstance(got, (tuple, list))
    if got is not None and (type(got) is type(eager_output) or sequences):
        pairs: list[tuple[str, Any, Any]] = []
        if isinstance(eager_output, (tuple, list)) and len(got) == len(eager_output):
            pairs = [
                (f"[{i}]", e, g) for i, (e, g) in enumerate(zip(eager_output, got, strict=True))
            ]
        elif isinstance(eager_output, dict) and list(got) == list(eager_output):
            pairs = [(f"[{k!r}]", eager_output[k], got[k]) for k in eager_output]
        for step, want, have in pairs:
            if type(want) is not type(have) or not _reads_alike(want, have):
                return step  # a None for eager's int, or another tensor in its place
            deeper = read_by_caller(want, have)
            if deeper:
                return step + deeper
        if pairs:
            return None  # every part reads as eager's: nothing a caller's read breaks
    fields = _fields(eager_output)
    if fields:
        return f".{fields[0]}"
    if isinstance(eager_output, dict) and eager_output:
        return f"[{next(iter(eager_output))!r}]"
    if isinstance(eager_output, (tuple, list)) and eager_output:
        return "[0]"
    return None


def _reads_alike(want: Any, have: Any) -> bool:
    """Whether a caller reading ``have`` where eager's return held ``want`` gets it: a
    tensor of its shape and values (unflatten may return a child's outputs reordered)."""
    if not isinstance(want, torch.Tensor):
        return True  # a container is read further; a constant's type was compared
    return (
        want.shape == have.shape
        and want.dtype == have.dtype
        and bool(torch.allclose(want, have, equal_nan=True))
    )
