"""The ``outputs`` and ``alone`` parts of a hierarchy reproduction.

``outputs``: ``unflatten(ep)`` called as the model is, against eager (the case's
tolerance). ``alone`` (``checks/submodules.py``): every submodule call of one seeded
eager forward is recorded with hooks (its arguments, output, generator state, and the
state forward changes that its module holds, before and after); each is replayed on
the unflattened child that stood for it in the unflattened module's own run (else
the one of its name, ``name@k`` for its k-th call), on a fresh ``unflatten``, from
that state. A call that raises where eager's own child, run alone, does not; a return
in another container; values or state that differ: each is shown. Where the check
judged a finding a note (a convention no export keeps), the script shows it too:
it runs for an item that failed on this part.
"""

from __future__ import annotations

OUTPUTS = """
def output_findings(model, inputs, unflat):
    want = calls(copy.deepcopy(model), inputs, 1, eager=True)[0][0]
    try:
        got = calls(unflat, inputs, 1, eager=False)[0][0]
    except Exception as exc:
        return [f"calling the unflattened module raised {type(exc).__name__}: {exc}"]
    message = differs(want, got)
    return [] if message is None else [f"the unflattened module's output differs:\\n{message}"]
"""

ALONE = '''
def rng_now():
    started = torch.cuda.is_available() and torch.cuda.is_initialized()
    return torch.get_rng_state(), torch.cuda.get_rng_state_all() if started else None


def set_rng(state):
    torch.set_rng_state(state[0])
    if state[1] is not None:
        torch.cuda.set_rng_state_all(state[1])


def held_state(module):
    return dict([*module.named_parameters(remove_duplicate=False),
                 *module.named_buffers(remove_duplicate=False)])


def changed_by_forward(model, inputs):
    """The FQNs of the parameters and buffers one seeded eager call changes."""
    probe = copy.deepcopy(model)
    before = {n: t.detach().clone() for n, t in held_state(probe).items()}
    args, kwargs = cloned(inputs)
    seed_everything(SEED)
    probe(*args, **kwargs)
    after = held_state(probe)
    return {n for n, t in before.items()
            if n not in after or t.shape != after[n].shape or not torch.equal(t, after[n])}


def hooked(module, inputs, watch, grad):
    """Every submodule call of one seeded forward, in the order the calls finish."""
    names = {}
    for name, sub in module.named_modules():
        names.setdefault(id(sub), name)
    counts, pending, made = {}, {}, []

    def own(sub):
        prefix = names[id(sub)] + "."
        state = held_state(sub)
        return {n[len(prefix):]: state[n[len(prefix):]].detach().clone() for n in watch
                if n.startswith(prefix) and n[len(prefix):] in state}

    def before(sub, args, kwargs):
        pending.setdefault(id(sub), []).append((cloned((args, kwargs)), rng_now(), own(sub)))

    def after(sub, args, kwargs, output):
        index = counts.get(id(sub), 0)
        counts[id(sub)] = index + 1
        given, rng, state = pending[id(sub)].pop()
        made.append({"fqn": names[id(sub)], "index": index, "inputs": given,
                     "output": cloned(detached(output)), "rng": rng, "before": state,
                     "after": own(sub)})

    handles = []
    for name, sub in module.named_modules():
        if name:
            handles.append(sub.register_forward_pre_hook(before, with_kwargs=True))
            handles.append(sub.register_forward_hook(after, with_kwargs=True))
    try:
        args, kwargs = cloned(inputs)
        seed_everything(SEED)
        with torch.set_grad_enabled(grad):
            module(*args, **kwargs)
    finally:
        for handle in handles:
            handle.remove()
    return made


def paired(eager, unflat, groups):
    """Each eager call with the unflattened call that stood for it, or None."""
    canonical = {name: names[0] for name, names in groups.items()}
    by_module, by_name, counts = {}, {}, {}
    for call in unflat:
        by_name[(call["fqn"], call["index"])] = call
        owner = canonical.get(base_name(call["fqn"]))
        if owner is not None:
            by_module.setdefault(owner, []).append(call)
    for call in eager:
        counts[call["fqn"]] = counts.get(call["fqn"], 0) + 1
    pairs = []
    for call in eager:
        stand_ins = by_module.get(canonical.get(call["fqn"], call["fqn"]), [])
        if len(stand_ins) == counts[call["fqn"]]:
            pairs.append((call, stand_ins[call["index"]]))
        else:
            pairs.append((call, by_name.get((call["fqn"], call["index"]))))
    return pairs


def structure(value, depth=0):
    """The container shape of a return, without values (``HeadOut(.logits, .hidden)``)."""
    import dataclasses

    if isinstance(value, torch.Tensor):
        return "Tensor"
    if value is None or isinstance(value, (bool, int, float, str)):
        return type(value).__name__ if value is not None else "None"
    name = type(value).__name__.removeprefix("immutable_")
    if depth >= 2:
        return name
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        keys = [f.name for f in dataclasses.fields(value)]
        keys = list(value) if isinstance(value, dict) else keys
        return f"{name}({', '.join(f'.{k}' for k in keys)})"
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return f"{name}({', '.join(f'.{k}' for k in type(value)._fields)})"
    if isinstance(value, dict):
        return f"{name}({', '.join(repr(k) for k in value)})"
    if isinstance(value, (tuple, list)):
        return f"{name}({', '.join(structure(v, depth + 1) for v in value)})"
    return name


def leafwise(want, got):
    """Each leaf the child returns against an eager output leaf of its kind (each used
    once, the one at its position first): the first that agrees with none, or None."""
    def kind(leaf):
        if isinstance(leaf, torch.Tensor):
            return ("tensor", tuple(leaf.shape), leaf.dtype, leaf.device.type)
        return (type(leaf).__name__,)

    wanted = [w for w in pytree.tree_leaves(want) if w is not None]
    unclaimed = list(range(len(wanted)))
    for position, leaf in enumerate(g for g in pytree.tree_leaves(got) if g is not None):
        candidates = sorted((i for i in unclaimed if kind(wanted[i]) == kind(leaf)),
                            key=lambda i: i != position)
        if not candidates:
            return f"the child returns a leaf (position {position}) no eager output matches"
        first = None
        for index in candidates:
            message = differs(wanted[index], leaf)
            if message is None:
                unclaimed.remove(index)
                break
            first = first or message
        else:
            return f"returned leaf {position}: {first}"
    return None


def restored(module, state):
    """``state`` (by the module's own names) set on ``module`` in place; False where it
    does not hold it."""
    held = held_state(module)
    if any(name not in held for name in state):
        return False
    with torch.no_grad():
        for name, value in state.items():
            held[name].copy_(value)
    return True


def alone_findings(model, inputs, ep):
    counts, noops, groups = eager_calls(model, inputs)
    watch = changed_by_forward(model, inputs)
    eager = hooked(copy.deepcopy(model), inputs, watch, grad=True)
    try:
        ran = hooked(torch.export.unflatten(copy.deepcopy(ep)), inputs, set(), grad=False)
    except Exception:
        ran = []
    found = []
    for call, stand_in in paired(eager, ran, groups):
        fqn, index = call["fqn"], call["index"]
        if fqn in noops:
            continue
        modules = dict(torch.export.unflatten(copy.deepcopy(ep)).named_modules(
            remove_duplicate=False))
        path = fqn
        if stand_in is not None and stand_in["fqn"] in modules:
            path = stand_in["fqn"]
        elif index and f"{fqn}@{index}" in modules:
            path = f"{fqn}@{index}"
        target = modules.get(path)
        if target is None or not restored(target, call["before"]):
            continue
        label = fqn + (f" (call {index + 1}, run as {path!r})" if index or path != fqn else "")
        args, kwargs = cloned(call["inputs"])
        try:
            set_rng(call["rng"])
            with torch.no_grad():
                output = target(*args, **kwargs)
        except Exception as exc:
            try:  # eager's own child, alone, on the same call
                child = copy.deepcopy(model).get_submodule(fqn)
                restored(child, call["before"])
                set_rng(call["rng"])
                with torch.no_grad():
                    child(*cloned(call["inputs"])[0], **cloned(call["inputs"])[1])
            except Exception:
                continue  # it needs what its parent's forward sets up: no finding
            first = (str(exc).strip().splitlines() or [""])[0][:200]
            found.append(f"{label}: run alone on eager's arguments raises "
                         f"{type(exc).__name__}: {first}; eager's {fqn} returns on the same call")
            continue
        want_kind, got_kind = structure(call["output"]), structure(output)
        if want_kind != got_kind:
            found.append(f"{label}: the return type changed: it returns {got_kind} where "
                         f"eager's returns {want_kind}")
            message = leafwise(call["output"], output)
        else:
            message = differs(call["output"], output)
        if message is not None:
            found.append(f"{label} run alone on eager's inputs differs:\\n{message}")
        now = held_state(target)
        for name, want in call["after"].items():
            message = differs(want, now[name].detach()) if name in now else "not held"
            if message is not None:
                found.append(f"{label} run alone leaves other state in {name!r}:\\n{message}")
    return found
'''
