"""The ``loaded`` reproduction: a program an older torch saved, loaded by this one.

As ``checks/loaded.py``: the stored ``program.pt2`` the item loaded (by its path;
the saving run's ``values.pt`` beside it holds the inputs it was called on and
eager's outputs on the saving torch) is loaded with ``torch.export.load(...).module()``
and called on the saved inputs, once per saved output. Each output is compared with
the saved one (in the structure the saving torch wrote), then, where this torch's
model holds the very values the program does, with this torch's eager on the same
inputs. A load or call that raises is the finding too.
"""

from __future__ import annotations

LOADED_MAIN = '''
def first_different_state(model, loaded):
    """The first tensor the loaded program holds that this torch's model lacks or holds
    other values for."""
    held = dict([*model.named_parameters(remove_duplicate=False),
                        *model.named_buffers(remove_duplicate=False)])
    for name, tensor in loaded.state_dict().items():
        own = held.get(name)
        if own is None or own.shape != tensor.shape or not torch.equal(own.cpu(), tensor.cpu()):
            return name
    return None


def on_device(leaves):
    return [leaf.to(DEVICE) if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]


def main():
    model, built_inputs = built()
    values = torch.load(os.path.join(SAVED, "values.pt"), weights_only=True, map_location="cpu")
    leaves, spec, _ = values["inputs"]
    structure = pytree.tree_structure(built_inputs)
    if spec != str(structure):
        raise ValueError(f"the saved inputs have the structure {spec}, this torch's case "
                         f"builds {structure}: the case changed since they were saved")
    inputs = pytree.tree_unflatten(on_device(leaves), structure)
    saved = values["outputs"]
    steps = len(saved)
    what = f"the program torch {SAVED_BY} saved ({os.path.join(SAVED, 'program.pt2')})"
    try:
        module = torch.export.load(os.path.join(SAVED, "program.pt2")).module()
    except Exception as exc:
        print(f"reproduced: torch {torch.__version__} loading {what} raised "
              f"{type(exc).__name__}: {exc}")
        return 1
    different = first_different_state(model, module)
    try:
        runs = calls(module, inputs, steps, eager=False)
    except Exception as exc:
        print(f"reproduced: {what}, loaded and called, raised {type(exc).__name__}: {exc}")
        return 1
    found = []
    for index, ((want_leaves, text, dumped), (got, _, _)) in enumerate(zip(saved, runs), 1):
        got_leaves, got_spec = pytree.tree_flatten(got)
        if dumped is not None and pytree.treespec_loads(dumped) != got_spec:
            found.append(f"call {index}/{steps}: output structure {got_spec}, where eager on "
                         f"torch {SAVED_BY} gave {pytree.treespec_loads(dumped)}")
            break
        if dumped is None and len(got_leaves) != len(want_leaves):
            found.append(f"call {index}/{steps}: {len(got_leaves)} output leaves, where eager "
                         f"on torch {SAVED_BY} gave {len(want_leaves)} ({text})")
            break
        message = differs(pytree.tree_unflatten(on_device(want_leaves), got_spec), got)
        if message is not None:
            found.append(f"call {index}/{steps}: the output differs from eager's on torch "
                         f"{SAVED_BY}:\\n{message}")
            break
    if different is None:  # this torch's eager holds the program's values: compared too
        eager = calls(copy.deepcopy(model), inputs, steps, eager=True)
        for index, (want, got) in enumerate(zip(eager, runs), 1):
            message = differs(want[0], got[0])
            if message is not None:
                found.append(f"call {index}/{steps}: the output differs from eager's on torch "
                             f"{torch.__version__}:\\n{message}")
                break
    if found:
        print("reproduced: " + "\\n".join(found))
        return 1
    compared = "" if different is None else f" (not this torch's eager: {different} differs)"
    print(f"not reproduced: {what} agrees with the saved outputs over {steps} call(s){compared}")
    return 0
'''
