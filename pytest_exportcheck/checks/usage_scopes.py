"""Graph evidence for the signature check: where the graph reads each lifted tensor.

Export and Dynamo graphs record per node the stack of modules whose forward made
it (``nn_module_stack``); a placeholder read only inside a module unrelated to the
owner of its target is mapped to the wrong tensor, whatever its shape.
"""

from __future__ import annotations

import re

import torch

from pytest_exportcheck.capture.record import STATE_KINDS, CaptureRecord


def usage_scopes(record: CaptureRecord) -> list[str]:
    """Graph evidence: a lifted tensor is used inside the module that owns its target.

    Export and Dynamo graphs record per node the stack of modules whose forward
    made it (``nn_module_stack``). A placeholder mapped to ``b.weight`` but read
    only by ops made inside module ``a`` — neither ``b``, nor an ancestor or a
    descendant of it — is mapped to the wrong tensor, even where every shape
    and the signature itself agree. Nodes without a stack (AOT joint graphs)
    and reads in the root's own forward say nothing.
    """
    nodes: dict[str, list[torch.fx.Node]] = {}
    calls: dict[str, list[torch.fx.Node]] = {}
    for node in record.graph_module.graph.nodes:
        if node.op in ("placeholder", "get_attr"):
            for key in {node.name, str(node.target)}:
                nodes.setdefault(key, []).append(node)
        elif node.op == "call_module":  # legacy Dynamo before 2.13 keeps leaf modules
            calls.setdefault(str(node.target), []).append(node)
    groups = record.subject.tensor_groups
    findings = []
    for p in record.placeholders:
        if p.kind not in STATE_KINDS or not p.target or is_traced_constant(p.target):
            continue
        readers = [user for node in nodes.get(p.name, []) for user in node.users]
        # State held by a called module (`L__self___fc1.weight`) is read by the call.
        readers += calls.get(p.name.rpartition(".")[0], [])
        scopes = {scope for user in readers if (scope := innermost_module(user)) is not None}
        owners = {fqn.rpartition(".")[0] for fqn in groups.get(p.target, (p.target,))}
        if scopes and not any(_on_one_line(s, o) for s in scopes for o in owners):
            findings.append(
                f"{p.render()}: the graph reads it only inside module(s) "
                f"{', '.join(repr(s) for s in sorted(scopes))}, which neither own "
                f"{p.target!r} nor contain or sit inside its owner"
            )
    return findings


def innermost_module(node: torch.fx.Node) -> str | None:
    """The FQN of the innermost module whose forward made ``node``, if recorded."""
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return None
    path = str(list(stack.values())[-1][0])
    # Dynamo spells sources: L['self']._modules['a'].b[0], getattr(L['self'].seq, '0').lin
    while (unwrapped := re.sub(r"getattr\(([^()]*), '([^']*)'\)", r"\1.\2", path)) != path:
        path = unwrapped
    dynamo_source = path.startswith("L['")
    path = re.sub(r"\._modules\['([^']*)'\]|\['([^']*)'\]|\[(\d+)\]", r".\1\2\3", path)
    if dynamo_source:
        path = path.split(".", 2)[2] if path.count(".") >= 2 else ""
    path = re.sub(r"@\d+$", "", path).strip(".")
    # A spelling not understood says nothing (rather than a false finding).
    return path if re.fullmatch(r"[\w.]*", path) else None


def _on_one_line(scope: str, owner: str) -> bool:
    return (
        not scope
        or not owner
        or scope == owner
        or scope.startswith(owner + ".")
        or owner.startswith(scope + ".")
    )


def is_traced_constant(target: str) -> bool:
    """Export's name for a tensor created inside forward, lifted as a constant
    (``lifted_tensor_0``): no module owns it."""
    return TRACED_CONSTANT.fullmatch(target) is not None


TRACED_CONSTANT = re.compile(r"(.+\.)?lifted_tensor_\d+")
