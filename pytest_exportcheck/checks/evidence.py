"""Graph-level evidence for a failed mapping check: the nodes the findings name, with users.

Shown under ``-vv`` (or ``--exportcheck-tb=long``) after a signature, hierarchy
or recorded failure, e.g. for a placeholder mapped to the wrong tensor::

    %p_a_weight : [num_users=1] = placeholder[target=p_a_weight]
        %linear : [num_users=1] = call_function[target=torch.ops.aten.linear.default](
            args = (%x, %p_a_weight, %p_a_bias), kwargs = {})
"""

from __future__ import annotations

import re
from typing import Any

MAX_LINES = 40


def graph_excerpt(record: Any, text: str) -> str | None:
    """The placeholders / get_attr / call_module nodes named in ``text``, each with its users."""
    graph = record.graph_module.graph
    named = {p.name for p in record.placeholders if p.name and p.name in text}
    quoted = set(re.findall(r"'([\w.]+)'", text))
    lines: list[str] = []
    for node in graph.nodes:
        state = node.op in ("placeholder", "get_attr") and (
            node.name in named or str(node.target) in named
        )
        called = node.op == "call_module" and str(node.target) in quoted
        if not (state or called):
            continue
        lines.append(node.format_node() or node.name)
        lines += [f"    {user.format_node() or user.name}" for user in node.users]
    if not lines:
        return None
    if len(lines) > MAX_LINES:
        lines = [*lines[:MAX_LINES], f"... ({len(lines) - MAX_LINES} more lines)"]
    return "\n".join(lines)
