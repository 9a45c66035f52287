"""The ``calls`` part of a hierarchy reproduction: forward calls per module, counted.

As ``checks/hierarchy.py`` counts them: eager's with a forward hook on every module of
a copy (per module *object*, reported under each of its names), the unflattened
module's from its graphs (a ``call_module`` node runs once per run of the module
whose graph holds it). A module every call of which returned its input (Dropout in
eval) is a no-op export records no call of: not compared.
"""

from __future__ import annotations

CALLS = '''
def eager_calls(model, inputs):
    """Forward calls per FQN (hooks), the no-op FQNs, and each FQN's group of names."""
    probe = copy.deepcopy(model)
    called, returned_input = {}, {}

    def count(module, args, output):
        called[id(module)] = called.get(id(module), 0) + 1
        if any(output is value for value in args):
            returned_input[id(module)] = returned_input.get(id(module), 0) + 1

    handles = [module.register_forward_hook(count) for module in probe.modules()]
    try:
        args, kwargs = cloned(inputs)
        seed_everything(SEED)
        with torch.enable_grad():
            probe(*args, **kwargs)
    finally:
        for handle in handles:
            handle.remove()
    named = [(n, m) for n, m in probe.named_modules(remove_duplicate=False) if n]
    by_object = {}
    for name, module in named:
        by_object.setdefault(id(module), []).append(name)
    groups = {name: by_object[id(module)] for name, module in named}
    counts = {name: called.get(id(module), 0) for name, module in named}
    noops = {n for n, m in named if 0 < called.get(id(m), 0) == returned_input.get(id(m), 0)}
    return counts, noops, groups


def runs_per_object(unflat):
    """How many times each module object runs per forward of ``unflat``, from its graphs."""
    callers, found = {}, []
    for prefix, module in unflat.named_modules():
        graph = getattr(module, "graph", None)
        if not isinstance(graph, torch.fx.Graph):
            continue
        for node in graph.nodes:
            if node.op != "call_module":
                continue
            try:
                callee = module.get_submodule(node.target)
            except AttributeError:
                where = f"{prefix}.{node.target}" if prefix else node.target
                found.append(f"call_module node {node.name!r} targets missing module {where!r}")
                continue
            callers.setdefault(id(callee), []).append(id(module))
    runs = {id(unflat): 1}

    def count(obj, seen):
        if obj not in runs:
            runs[obj] = sum(count(c, seen | {obj}) for c in callers.get(obj, []) if c not in seen)
        return runs[obj]

    for _, module in unflat.named_modules():
        count(id(module), frozenset())
    return runs, found


def call_findings(model, inputs, unflat):
    counts, noops, groups = eager_calls(model, inputs)
    runs, found = runs_per_object(unflat)
    stand_ins = {}
    for name, module in unflat.named_modules(remove_duplicate=False):
        stand_ins.setdefault(base_name(name), set()).add(id(module))
    reported = set()
    for name, calls in counts.items():
        if name in reported or name not in stand_ins:
            continue
        group = groups[name]
        reported.update(group)
        copies = set().union(*(stand_ins.get(n, set()) for n in group))
        nodes = sum(runs.get(c, 0) for c in copies)
        if nodes == calls or (nodes < calls and name in noops):
            continue
        label = " / ".join(repr(n) for n in group)
        found.append(f"{label}: eager called it {calls} time(s), the unflattened module "
                     f"calls it {nodes} time(s) per forward (call_module nodes)")
    return found
'''
