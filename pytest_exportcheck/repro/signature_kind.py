"""``signature``: the program's ``graph_signature.input_specs`` against the eager model
and ``expect.placeholders``, read in torch's own terms.

The script prints each input spec (placeholder name, ``InputKind``, target; a user
input's target is the flattened case input it takes, ``args[0]``, in order) and
compares, as ``checks/signature.py`` does: ``expect.placeholders`` (rendered
``name: kind -> target``; an expectation without a target compares name and kind), each
state target against the eager model (it exists, is a parameter / buffer / constant as
the spec says, with the spec's persistence, the placeholder's dtype and shape, and the
program's tensor in ``ep.state_dict`` / ``ep.constants`` equal to eager's), every eager
parameter and buffer lifted or held, and each user input's dtype and shape.

Not written (:func:`unwritten` names one): which module's ops read a placeholder
(``nn_module_stack``), which tensor ``ep.module()`` feeds a placeholder by identity,
alias groups, the input tree's structure, and a placeholder kind torch does not name.
"""

from __future__ import annotations

from pytest_exportcheck.spec import Case

# The finding texts of checks/signature.py the script shows (after ``<placeholder>: ``).
WRITTEN = (
    "placeholders differ from expect.placeholders",
    ": the eager model has no tensor at ",
    ": in eager, ",
    ": signature says persistent=",
    ": graph expects ",
    ": program tensor ",
    ": the program holds no tensor for ",
    "is neither lifted, an alias of a lifted one, nor held by the program",
    "case inputs without a user-input placeholder",
)


def unwritten(findings: tuple[str, ...]) -> str | None:
    """Why no script shows the signature findings, or None where one shows each."""
    if not findings:
        return "the signature finding is not known (an xfail's): no comparison to make"
    heads = [f.splitlines()[0] for f in findings if f]
    others = [h for h in heads if not any(w in h for w in WRITTEN)]
    if others:
        return f"the signature finding {others[0][:80]!r} is not written yet"
    return None


def expected_source(case: Case, capture: str) -> str:
    """``EXPECTED_PLACEHOLDERS``: expect.placeholders for this capture, as (name, kind,
    target or None), or None where the case gives none."""
    expected = case.expect.placeholders_for(capture)
    rows = None if expected is None else [(e.name, e.kind, e.target) for e in expected]
    return f"EXPECTED_PLACEHOLDERS = {rows!r}  # expect.placeholders, for {capture}"


SIGNATURE_MAIN = '''
KINDS = {"PARAMETER": "parameter", "BUFFER": "buffer", "CONSTANT_TENSOR": "constant",
         "CUSTOM_OBJ": "custom_obj", "TOKEN": "token", "USER_INPUT": "user_input"}


def defaults(model):
    """Tensors forward takes by default (``default:y``): export lifts them as constants."""
    try:
        parameters = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return {}
    return {"default:" + name: p.default for name, p in parameters.items()
            if isinstance(p.default, torch.Tensor)}


def tensor_at(model, fqn):
    if fqn.startswith("default:"):
        return defaults(model).get(fqn)
    owner_path, _, attr = fqn.rpartition(".")
    try:
        owner = model.get_submodule(owner_path) if owner_path else model
    except AttributeError:
        return None
    value = getattr(owner, attr, None)
    return value if isinstance(value, torch.Tensor) else None


def placeholders(ep, model, inputs):
    """Each of ``ep.graph_signature.input_specs``: name, kind, target (a user input's: the
    case input it takes, in order), persistence, and the placeholder's value."""
    paths = [input_path(p) for p, _ in pytree.tree_flatten_with_path(inputs)[0]]
    by_tensor = {id(t): name for name, t in defaults(model).items()}
    nodes = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    rows, users = [], iter(paths)
    for spec in ep.graph_signature.input_specs:
        kind = KINDS.get(spec.kind.name, str(spec.kind))
        target = spec.target
        if kind == "user_input":
            target = next(users, None)
        elif kind == "constant" and id(ep.constants.get(target)) in by_tensor:
            target = by_tensor[id(ep.constants[target])]
        if hasattr(spec.arg, "value"):  # a constant argument: the value baked in
            value = spec.arg.value
        else:
            node = nodes.get(getattr(spec.arg, "name", None))
            value = None if node is None else node.meta.get("val")
        rows.append(dict(name=spec.arg.name, kind=kind, target=target, value=value,
                         persistent=getattr(spec, "persistent", None)))
    return rows


def render(row, untargeted=()):
    if row["name"] in untargeted or row["target"] is None:
        return f"{row['name']}: {row['kind']}"
    return f"{row['name']}: {row['kind']} -> {row['target']}"


def described(t):
    return f"{str(t.dtype).removeprefix('torch.')}{list(t.shape)}"


def same_shape(graph, eager):
    """Dims the graph holds symbolic take any size."""
    return len(graph) == len(eager) and all(
        isinstance(g, torch.SymInt) or int(g) == int(e) for g, e in zip(graph, eager))


def held(ep, fqn, model):
    if fqn.startswith("default:"):
        return tensor_at(model, fqn)
    if fqn in ep.state_dict:
        return ep.state_dict[fqn]
    value = ep.constants.get(fqn)
    return value if isinstance(value, torch.Tensor) else None


def state_targets(ep, model, rows):
    found = []
    parameters = dict(model.named_parameters(remove_duplicate=False))
    buffers = dict(model.named_buffers(remove_duplicate=False))
    persistent = {f"{prefix}.{name}" if prefix else name
                  for prefix, module in model.named_modules(remove_duplicate=False)
                  for name, b in module._buffers.items()
                  if b is not None and name not in module._non_persistent_buffers_set}
    for row in rows:
        if row["kind"] not in ("parameter", "buffer", "constant") or not row["target"]:
            continue
        fqn, shown = row["target"], render(row)
        eager = tensor_at(model, fqn)
        if eager is None:
            if not (row["kind"] == "constant" and re.fullmatch(r"(.+\\.)?lifted_tensor_\\d+", fqn)):
                found.append(f"{shown}: the eager model has no tensor at {fqn!r}")
            continue
        kind = "buffer" if fqn in buffers else "parameter" if fqn in parameters else "constant"
        if kind != row["kind"]:
            found.append(f"{shown}: in eager, {fqn!r} is a {kind}")
        if row["kind"] == "buffer" and row["persistent"] is not None and (
                row["persistent"] != (fqn in persistent)):
            found.append(f"{shown}: input_specs says persistent={row['persistent']}, the eager "
                         f"buffer is {'persistent' if fqn in persistent else 'non-persistent'}")
        value = row["value"]
        if isinstance(value, torch.Tensor) and (
                value.dtype != eager.dtype or not same_shape(value.shape, eager.shape)):
            found.append(f"{shown}: graph expects {described(value)}, eager {fqn} is "
                         f"{described(eager)}")
        tensor = held(ep, fqn, model)
        if tensor is None:
            found.append(f"{shown}: the program holds no tensor for {fqn!r}")
        elif tensor.dtype != eager.dtype or tensor.shape != eager.shape:
            found.append(f"{shown}: program tensor {described(tensor)} != eager "
                         f"{described(eager)}")
        elif not torch.equal(tensor.detach().cpu(), eager.detach().cpu()) and not (
                tensor.is_floating_point() and torch.allclose(
                    tensor.detach().cpu(), eager.detach().cpu(), rtol=0, atol=0, equal_nan=True)):
            found.append(f"{shown}: program tensor values differ from eager's")
    lifted = {id(t) for row in rows if row["kind"] in ("parameter", "buffer", "constant")
              and row["target"] and (t := tensor_at(model, row["target"])) is not None}
    for kind, named in (("parameter", model.named_parameters(remove_duplicate=False)),
                        ("buffer", model.named_buffers(remove_duplicate=False))):
        for name, t in named:
            if id(t) not in lifted and held(ep, name, model) is None:
                found.append(f"eager {kind} {name!r} is neither lifted, an alias of a lifted "
                             "one, nor held by the program")
    return found


def user_inputs(rows, inputs):
    found = []
    flat = [(input_path(p), v) for p, v in pytree.tree_flatten_with_path(inputs)[0]]
    users = [row for row in rows if row["kind"] == "user_input"]
    for row in users:
        given = dict(flat).get(row["target"])
        value = row["value"]
        if isinstance(given, torch.Tensor) and isinstance(value, torch.Tensor) and (
                value.dtype != given.dtype or not same_shape(value.shape, given.shape)):
            found.append(f"{row['name']} (input {row['target']}): graph expects "
                         f"{described(value)}, the case gives {described(given)}")
    missing = [path for path, _ in flat if path not in {row["target"] for row in users}]
    if missing:
        found.append(f"case inputs without a user-input placeholder: {', '.join(missing)}")
    return found


def main():
    model, inputs = built()
    ep = capture(model, inputs)
    rows = placeholders(ep, model, inputs)
    print("ep.graph_signature.input_specs:")
    for spec, row in zip(ep.graph_signature.input_specs, rows):
        print(f"  {spec.arg.name}: {spec.kind.name} target={spec.target!r} "
              f"persistent={getattr(spec, 'persistent', None)!r}  (read as {render(row)})")
    found = []
    if EXPECTED_PLACEHOLDERS is not None:
        untargeted = {name for name, _, target in EXPECTED_PLACEHOLDERS if target is None}
        want = [render(dict(name=n, kind=k, target=t)) for n, k, t in EXPECTED_PLACEHOLDERS]
        got = [render(row, untargeted) for row in rows]
        if want != got:
            found.append("placeholders differ from expect.placeholders:\\n  expected: "
                         + "\\n            ".join(want) + "\\n  actual:   "
                         + "\\n            ".join(got))
    found += state_targets(ep, model, rows)
    found += user_inputs(rows, inputs)
    if found:
        print("reproduced: " + "\\n".join(found))
        return 1
    print("not reproduced: the input specs map to eager's tensors and inputs as expected")
    return 0
'''
