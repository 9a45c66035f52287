"""The ``hierarchy`` reproduction: ``torch.export.unflatten(ep)`` against the eager tree.

The check (``checks/hierarchy.py``) has four parts; a script runs those its item's
findings come from (all four where it has none to read, as for an XPASS):

- ``tree``: module names, sharing, ``state_dict`` keys and values, non-persistent
  buffers (here);
- ``calls``: ``call_module`` runs per forward of each module against eager's forward
  calls, counted with hooks (``hierarchy_calls.py``);
- ``outputs``: the unflattened module called as the model is, against eager;
- ``alone``: every eager submodule call replayed on the unflattened child, with
  eager's arguments, state and generator state (``hierarchy_alone.py``).
"""

from __future__ import annotations

PARTS = ("tree", "calls", "outputs", "alone")
# The finding heads (first lines, ``checks/hierarchy.py`` and ``submodules.py``) by part.
HEADS = {
    "tree": (
        "torch.export.unflatten raised",
        "module FQNs after unflatten differ",
        "are one module in eager but two",
        "are two modules in eager but one",
        "state_dict keys missing after unflatten",
        "state_dict keys only after unflatten",
        "state_dict[",
        "non-persistent buffer ",
    ),
    "calls": ("per forward (call_module nodes)", "call_module node "),
    "outputs": ("calling the unflattened module raised",),
    "alone": (
        " run alone on eager's inputs differs: ",
        " run alone from the state eager's call started from",
        ": the return type changed: ",
        "returns on the same call",
        ", as its parent calls it, raises ",
    ),
}


def hierarchy_parts(findings: tuple[str, ...]) -> tuple[tuple[str, ...], str | None]:
    """(the parts a script runs for ``findings``, the first head no part covers, or None)."""
    if not findings:
        return PARTS, None
    parts: set[str] = set()
    for finding in findings:
        head = (finding.splitlines() or [""])[0]
        part = _part_of(head)
        if part is None:
            return (), head
        parts.add(part)
    return tuple(p for p in PARTS if p in parts), None


def _part_of(head: str) -> str | None:
    for part, heads in HEADS.items():
        if any(h in head for h in heads):
            return part
    # compare_trees of the whole output: ``output: ...``, ``output[0]: ...``
    if head.startswith("output"):
        return "outputs"
    return None


TREE = '''
def base_name(name):
    """``blocks.0.act@1`` -> ``blocks.0.act``: the module a call traced apart is a call of."""
    return re.sub(r"@\\d+(?=\\.|$)", "", name)


def fqns(module):
    """Submodule names in order; a later call traced into a graph of its own (``act@1``)
    is a call of ``act``, not a module, where ``act`` is there too."""
    named = [name for name, _ in module.named_modules(remove_duplicate=False) if name]
    return [n for n in named if base_name(n) == n or base_name(n) not in named]


def tree_findings(model, unflat):
    found = []
    expected = EXPECTED_MODULES if EXPECTED_MODULES is not None else fqns(model)
    if fqns(unflat) != expected:
        source = "expect.modules" if EXPECTED_MODULES is not None else "the eager module tree"
        found.append(f"module FQNs after unflatten differ from {source}:\\n"
                     f"  expected:    {expected}\\n  unflattened: {fqns(unflat)}")
    eager_mods = dict(model.named_modules(remove_duplicate=False))
    unflat_mods = dict(unflat.named_modules(remove_duplicate=False))
    names = [n for n in eager_mods if n and n in unflat_mods]
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            one_in_eager = eager_mods[a] is eager_mods[b]
            if one_in_eager != (unflat_mods[a] is unflat_mods[b]):
                how = ("one module in eager but two" if one_in_eager
                       else "two modules in eager but one")
                found.append(f"{a!r} and {b!r} are {how} after unflatten")
    want, got = model.state_dict(), unflat.state_dict()
    held = unflat.state_dict(keep_vars=True)
    if set(want) - set(got):
        found.append(f"state_dict keys missing after unflatten: {sorted(set(want) - set(got))}")
    extra = [k for k in got if k not in want
             and not (base_name(k) != k and base_name(k) in held and held[base_name(k)] is held[k])]
    if extra:
        found.append(f"state_dict keys only after unflatten: {extra}")
    for key in [k for k in want if k in got]:
        if want[key].shape != got[key].shape or not torch.equal(want[key], got[key].to(want[key])):
            found.append(f"state_dict[{key!r}]: the unflattened value is not eager's")
    unflat_buffers = {name for name, _ in unflat.named_buffers(remove_duplicate=False)}
    for name, _ in model.named_buffers(remove_duplicate=False):
        if name in want:
            continue
        if name not in unflat_buffers:
            found.append(f"non-persistent buffer {name!r} is not a buffer after unflatten")
        elif name in got:
            found.append(f"non-persistent buffer {name!r} became persistent after unflatten")
    return found
'''

HIERARCHY_MAIN = """
def main():
    model, inputs = built()
    ep = capture(model, inputs)
    try:
        unflat = torch.export.unflatten(copy.deepcopy(ep))
    except Exception as exc:
        print(f"reproduced: torch.export.unflatten raised {type(exc).__name__}: {exc}")
        return 1
    found = []
    if "tree" in PARTS:
        found += tree_findings(model, unflat)
    if "calls" in PARTS:
        found += call_findings(model, inputs, unflat)
    if "outputs" in PARTS:
        found += output_findings(model, inputs, unflat)
    if "alone" in PARTS:
        found += alone_findings(model, inputs, ep)
    if found:
        print("reproduced: " + "\\n".join(found))
        return 1
    print(f"not reproduced: unflatten(ep) agrees with eager ({', '.join(PARTS)})")
    return 0
"""
