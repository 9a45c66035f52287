"""The ``moved`` reproduction, and the ``move:`` step of a program chain.

``moved`` (``checks/moved.py``): the model and inputs are built on the CPU, exported
there, and the program moved with ``torch.export.passes.move_to_device_pass`` to the
item's device; eager runs the CPU model moved there (``.to()``, and the plain tensor
attributes ``.to()`` leaves behind, as the pass moves a program's constants). Over
``expect.parity.steps`` calls: outputs, every parameter and buffer, and the inputs
as the calls left them, within the case's tolerance.

A chain's ``move:<device>`` (``capture/chains.py``) is the same pass; the module it
ends in is called with the inputs moved there, and an input it mutates is copied
back into the caller's tensor.
"""

from __future__ import annotations

MOVE_HELPERS = '''
def moved_program(program, device):
    """torch.export.passes.move_to_device_pass, as the item moves the program."""
    from torch.export.passes import move_to_device_pass

    return move_to_device_pass(program, device)


def called_on(module, device):
    """``module`` called with the inputs moved to ``device``; an input it mutates there
    is copied back into the caller's tensor."""
    def call(*args, **kwargs):
        given = (args, kwargs)
        moved = pytree.tree_map(lambda t: t.to(device) if isinstance(t, torch.Tensor) else t,
                                given)
        output = module(*moved[0], **moved[1])
        with torch.no_grad():
            for mine, theirs in zip(pytree.tree_leaves(given), pytree.tree_leaves(moved)):
                if isinstance(mine, torch.Tensor) and mine is not theirs:
                    mine.copy_(theirs)
        return output
    return call
'''

MOVED_MAIN = '''
def with_strays_moved(model, device):
    """``model.to(device)``, and the plain tensor attributes (in lists, tuples and dicts
    too) ``.to()`` leaves behind, as the pass moves a program's constants."""
    model = model.to(device)
    internals = {"_parameters", "_buffers", "_modules"}

    def moved(value, depth):
        if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
            return value if value.device == torch.device(device) else value.to(device)
        if depth < 3 and type(value) in (list, tuple):
            return type(value)(moved(item, depth + 1) for item in value)
        if depth < 3 and type(value) is dict:
            return {key: moved(item, depth + 1) for key, item in value.items()}
        return value

    for module in model.modules():
        for name, value in list(vars(module).items()):
            if name not in internals:
                new = moved(value, 0)
                if new is not value:
                    module.__dict__[name] = new
    return model


def main():
    # The CPU build and capture the item moved: built() would make them on DEVICE.
    cpu_model, cpu_inputs = build_model(), build_inputs()
    try:
        ep = capture(cpu_model, cpu_inputs)
    except Exception as exc:
        print(f"reproduced: the CPU capture raised {type(exc).__name__}: {exc}")
        return 1
    try:
        program = moved_program(ep, DEVICE)
    except Exception as exc:
        print(f"reproduced: move_to_device_pass(<CPU export>, {DEVICE!r}) raised "
              f"{type(exc).__name__}: {exc}")
        return 1
    model = with_strays_moved(copy.deepcopy(cpu_model), DEVICE)
    inputs = pytree.tree_map(
        lambda t: t.to(DEVICE) if isinstance(t, torch.Tensor) else t, cpu_inputs)
    eager = calls(model, inputs, STEPS, eager=True)
    label = f"the program moved to {DEVICE}"
    try:
        runs = calls(program.module(), inputs, STEPS, eager=False)
    except Exception as exc:
        print(f"reproduced: running {label} raised {type(exc).__name__}: {exc}")
        return 1
    for step, (want, got) in enumerate(zip(eager, runs), start=1):
        problems = [f"output: {m}" for m in [differs(want[0], got[0])] if m]
        for name, value in want[1].items():
            if name in got[1] and (m := differs(value, got[1][name])) is not None:
                problems.append(f"{name}: {m}")
        if (m := differs(want[2], got[2])) is not None:
            problems.append(f"inputs after the call: {m}")
        if problems:
            print(f"reproduced: {label}, after step {step}/{STEPS}:\\n" + "\\n".join(problems))
            return 1
    print(f"not reproduced: {label} agrees with eager there over {STEPS} step(s)")
    return 0
'''
