"""How deep an output or input nests, measured without recursion, to name the cause of
a ``RecursionError``.

torch walks a model's outputs and inputs recursively (pytree's flatten, the
``TreeSpec`` a program keeps, ``copy.deepcopy`` of that spec), a few Python frames
a level. A model returning a tuple nested a few hundred deep runs fine in eager,
yet on torch 2.13 under the default limit of 1000 frames ``copy.deepcopy(ep)``
and ``ep.run_decompositions()`` raise ``RecursionError`` past 163 levels and
``torch.export.export`` past 478 (measured at the top of a script: under pytest
less is left). Torch's message says only "maximum recursion depth exceeded"; the
words here say what is that deep. Every walk here keeps its own stack, so it
never meets the limit it explains.
"""

from __future__ import annotations

import sys
from typing import Any

from torch.utils import _pytree as pytree

# The public name where torch has it: 2.13 warns that ``_is_leaf`` is private.
_is_leaf = getattr(pytree, "tree_is_leaf", None) or pytree._is_leaf

# Below this no output is deep enough to be named as the cause: ordinary models
# return structures a handful of levels deep, and torch's walks fail from 164 on.
NAMED_DEPTH = 50


def nesting_depth(value: Any) -> int:
    """How many pytree containers deep ``value`` nests (a leaf: 0; ``(x,)``: 1).

    Containers are those pytree flattens (tuples, lists, dicts, namedtuples and
    registered types), opened one level at a time; one seen before (a cycle, or a
    container shared by two branches) is not opened again.
    """
    deepest = 0
    seen: set[int] = set()
    stack = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if id(node) in seen or _is_leaf(node):
            continue
        seen.add(id(node))
        try:
            children, _ = pytree.SUPPORTED_NODES[pytree._get_node_type(node)].flatten_fn(node)
        except Exception:  # a registered type whose flatten raises: not opened
            continue
        stack.extend((child, depth + 1) for child in children)
    return deepest


def spec_depth(spec: Any) -> int:
    """How many levels a pytree ``TreeSpec`` (a program's ``call_spec``) nests."""
    deepest = 0
    stack = [(spec, 0)]
    while stack:
        node, depth = stack.pop()
        children = _spec_children(node)
        if children:
            deepest = max(deepest, depth + 1)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _spec_children(spec: Any) -> list[Any]:
    if spec is None:
        return []
    # ``children()`` where torch has it: 2.13 warns that ``children_specs`` is deprecated.
    children = getattr(spec, "children", None)
    return list(children()) if callable(children) else list(spec.children_specs)


def deep_nesting(output_depth: int, input_depth: int) -> str | None:
    """``the output nests 200 deep`` (or the inputs), for whichever is deeper, where
    that is deep enough to be the cause of a RecursionError; else None."""
    if max(output_depth, input_depth) < NAMED_DEPTH:
        return None
    if output_depth >= input_depth:
        return f"the output nests {output_depth} deep"
    return f"the inputs nest {input_depth} deep"


def program_nesting(program: Any) -> str | None:
    """:func:`deep_nesting` of an ``ExportedProgram``'s outputs and inputs (its call spec)."""
    call_spec = getattr(program, "call_spec", None)
    # The input spec is ``(args, kwargs)``: two levels above the deepest input.
    inputs = max(spec_depth(getattr(call_spec, "in_spec", None)) - 2, 0)
    return deep_nesting(spec_depth(getattr(call_spec, "out_spec", None)), inputs)


def input_depth(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """How deep the deepest of a call's inputs nests."""
    return max((nesting_depth(value) for value in (*args, *kwargs.values())), default=0)


def with_nesting(message: str, nesting: str) -> str:
    """``message`` (a failure whose first line ends in torch's ``RecursionError: maximum
    recursion depth exceeded``) with its first line saying what is too deep instead."""
    head, newline, rest = message.partition("\n")
    before, found, _ = head.partition("RecursionError: ")
    if found:
        head = f"{before}RecursionError: {too_deep(f'{nesting}: walking it', None)}"
    else:  # raised from a RecursionError under another exception's name
        head = f"{head} ({too_deep(f'{nesting}: walking it', None)})"
    return head + newline + rest


def too_deep(what: str, nesting: str | None) -> str:
    """``copying the program (copy.deepcopy) exceeds Python's recursion limit (1000):
    the output nests 200 deep``."""
    text = f"{what} exceeds Python's recursion limit ({sys.getrecursionlimit()})"
    return f"{text}: {nesting}" if nesting else text


def recursion_in(exc: BaseException) -> RecursionError | None:
    """The ``RecursionError`` ``exc`` is or was raised from (its causes and contexts)."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        if isinstance(current, RecursionError):
            return current
        seen.append(current)
        current = current.__cause__ or current.__context__
    return None
