"""The ``mode`` reproduction: what the program carries of the mode, against eager.

The same three comparisons as ``checks/mode.py``, in torch's terms:

- the generator: torch's global generator states around the capture call, against
  those eager's forward leaves from the same state;
- each op of ``ep.graph_module`` with a training flag (its schema's ``training`` /
  ``train`` argument, or ``_no_training`` / ``_with_update`` in its name), made by one
  of torch.nn's mode-following modules (``nn_module_stack``), against the flag that
  module's mode gives (``checks/mode_ops.py``);
- where the case asks for a program that switches (``expect.mode.switches``):
  ``unflatten(ep).eval()`` (``.train()``) against eager in that mode, where the mode
  changes eager's outputs at all.
"""

from __future__ import annotations

MODE_MAIN = '''
NAMED_FLAGS = {"_no_training": False, "_no_update": False, "_with_update": True}


def generators():
    """The CPU generator's state and each started CUDA device's."""
    states = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        for index in range(torch.cuda.device_count()):
            states[f"cuda:{index}"] = torch.cuda.get_rng_state(index)
    return states


def set_generators(states):
    for name, state in states.items():
        if name == "cpu":
            torch.set_rng_state(state)
        else:
            torch.cuda.set_rng_state(state, int(name.partition(":")[2]))


def moved(before, after):
    return [name for name, state in before.items()
            if name in after and not torch.equal(state, after[name])]


def flag_of(node):
    """The training flag ``node`` runs with, where its op takes one."""
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return None
    name = schema.name + (f".{schema.overload_name}" if schema.overload_name else "")
    for part, flag in NAMED_FLAGS.items():
        if part in name:
            return flag
    for index, argument in enumerate(schema.arguments):
        if argument.name in ("training", "train"):
            if index < len(node.args):
                value = node.args[index]
            else:
                default = argument.default_value if argument.has_default_value() else None
                value = node.kwargs.get(argument.name, default)
            return value if isinstance(value, bool) else None
    return None


def made_by(node):
    """The FQN of the innermost module whose forward made ``node`` (nn_module_stack)."""
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return None
    path = str(list(stack.values())[-1][0])
    while (plain := re.sub(r"getattr\\(([^()]*), '([^']*)'\\)", r"\\1.\\2", path)) != path:
        path = plain
    dynamo_source = path.startswith("L['")
    path = re.sub(r"\\._modules\\['([^']*)'\\]|\\['([^']*)'\\]|\\[(\\d+)\\]", r".\\1\\2\\3", path)
    if dynamo_source:
        path = path.split(".", 2)[2] if path.count(".") >= 2 else ""
    path = re.sub(r"@\\d+$", "", path).strip(".")
    return path if re.fullmatch(r"[\\w.]*", path) else None


def flag_by_rule(module):
    """The flag one of torch.nn's mode-following modules passes in its mode (None: any other)."""
    norms = (torch.nn.modules.batchnorm._BatchNorm, torch.nn.modules.instancenorm._InstanceNorm)
    if isinstance(module, norms):
        return module.training or not module.track_running_stats
    if isinstance(module, (torch.nn.modules.dropout._DropoutNd, torch.nn.RNNBase)):
        return module.training
    return None


def flag_findings(model, ep):
    found = []
    for graph_module in ep.graph_module.modules():
        if not isinstance(graph_module, torch.fx.GraphModule):
            continue
        for node in graph_module.graph.nodes:
            flag = flag_of(node) if node.op == "call_function" else None
            fqn = made_by(node) if flag is not None else None
            if fqn is None:
                continue
            try:
                owner = model.get_submodule(fqn) if fqn else model
            except AttributeError:
                continue
            want = flag_by_rule(owner)
            if want is not None and want != flag:
                op = getattr(node.target, "__name__", str(node.target))
                found.append(
                    f"{node.name} ({op} in {fqn!r}) runs with training={flag}, where eager's "
                    f"module {fqn!r} runs it in {'training' if want else 'eval'} mode: the "
                    "program carries the other mode")
    return found


def generator_findings(model, inputs):
    """The capture call's move of the generators, against eager's forward from the same state."""
    seed_everything(SEED)
    before = generators()
    ep = capture(model, inputs)  # seeds the same SEED first: it starts from ``before``
    after = generators()
    if not moved(before, after):
        return ep, []
    set_generators(before)
    args, kwargs = cloned(inputs)
    try:
        copy.deepcopy(model)(*args, **kwargs)
    except Exception:
        pass
    if not moved(after, generators()):
        return ep, []
    return ep, [f"capturing moved torch's global random number generator "
                f"({', '.join(moved(before, after))}) where eager's forward from the same "
                "state leaves it elsewhere"]


def switch_findings(model, inputs, ep):
    """``unflatten(ep).eval()`` / ``.train()`` against eager in the other mode."""
    other = "eval" if model.training else "train"
    own = calls(copy.deepcopy(model), inputs, 1, eager=True)[0][0]
    other_model = copy.deepcopy(model).train(other == "train")
    other_output = calls(other_model, inputs, 1, eager=True)[0][0]
    if differs(own, other_output) is None:
        return []  # eager's outputs do not depend on the mode: nothing to switch
    unflat = torch.export.unflatten(copy.deepcopy(ep))
    getattr(unflat, other)()
    got = calls(unflat, inputs, 1, eager=False)[0][0]
    message = differs(other_output, got)
    if message is None:
        return []
    if differs(own, got) is None:
        return [f"unflatten(ep).{other}() computes as before: the program will not switch "
                f"(expect.mode.switches asks for one):\\n{message}"]
    return [f"unflatten(ep).{other}(): outputs match neither mode's eager:\\n{message}"]


def main():
    model, inputs = built()
    ep, found = generator_findings(model, inputs)
    found += flag_findings(model, ep)
    if EXPECT_SWITCHES:
        found += switch_findings(model, inputs, ep)
    if found:
        print("reproduced: " + "\\n".join(found))
        return 1
    print("not reproduced: the program carries eager's mode, and capturing leaves the "
          "generators where eager's forward does")
    return 0
'''
