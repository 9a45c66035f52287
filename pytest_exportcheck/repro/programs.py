"""The programs an export capture runs as (``programs:``, ``capture/chains.py``), as source.

Each starts from a private copy of ``ep`` (a program run shares no state with another)
and applies its steps: ``decompose`` is ``run_decompositions()``, ``save`` a
``torch.export.save`` and ``load`` through a file, ``retrace`` a non-strict export of
``ep.module()`` (with the case's dims, where it has ``dynamic:``), ``move:<device>``
``move_to_device_pass`` (``moved_kind.py``); it ends in ``.module()`` or
``torch.export.unflatten``, called with the inputs moved where the chain moved it.
"""

from __future__ import annotations

from pytest_exportcheck.spec import Case
from pytest_exportcheck.spec.case import CHAIN_ENDS, DEFAULT_PROGRAM_LABELS

STEPS = {
    "decompose": "{program}.run_decompositions()",
    "save": "saved_and_loaded({program})",
    "retrace": "retraced({program}, inputs)",
}

RETRACED = '''
def retraced(program, inputs):
    """A non-strict export of ``program.module()``, with the case's dims where it has any."""
    module = program.module()
    args, kwargs = cloned(inputs)
    dynamic = dynamic_shapes(module, args, kwargs) if DYNAMIC else None
    return torch.export.export(module, args, kwargs, strict=False, dynamic_shapes=dynamic)
'''

SAVED_AND_LOADED = '''
def saved_and_loaded(program):
    """torch.export.load(<torch.export.save(program)>), through a file."""
    with tempfile.TemporaryFile(suffix=".pt2") as archive:
        torch.export.save(program, archive)
        archive.seek(0)
        return torch.export.load(archive)
'''


def label(spelling: str) -> str:
    return DEFAULT_PROGRAM_LABELS.get(spelling, spelling)


def stateful(spelling: str) -> bool:
    """Whether the stepped mutation runs compare this program (all but ``decompose``,
    whose mutation records are what the check reads instead)."""
    return spelling != "decompose"


def program_source(spelling: str) -> str:
    """An expression making the module ``spelling`` names from ``ep`` (and ``inputs``)."""
    *steps, last = spelling.split(">")
    end = last if last in CHAIN_ENDS else "module"
    if last not in CHAIN_ENDS:
        steps.append(last)
    program, device = "copy.deepcopy(ep)", None
    for step in steps:
        if step.startswith("move:"):
            device = step.partition(":")[2]
            program = f"moved_program({program}, {device!r})"
        else:
            program = STEPS[step].format(program=program)
    made = f"torch.export.unflatten({program})" if end == "unflatten" else f"{program}.module()"
    return made if device is None else f"called_on({made}, {device!r})"


def moves(case: Case) -> bool:
    """Whether a chain of the case moves its program to a device."""
    return any(step.startswith("move:") for p in case.programs for step in p.split(">"))


def programs_source(case: Case, *, only_stateful: bool) -> str:
    """``PROGRAMS``: (label, a function making the module) for each program the item ran."""
    lines = ["PROGRAMS = ["]
    for spelling in case.programs:
        if only_stateful and not stateful(spelling):
            continue
        lines.append(f"    ({label(spelling)!r}, lambda ep, inputs: {program_source(spelling)}),")
    return "\n".join([*lines, "]"])


# A Dynamo capture's one way of running (``capture/dynamo.py``'s "graph module"): the
# graph it captured, called as the model is. The item makes it once and puts its state
# back before each use (``capture/record.py``'s ``Resettable``); so does the script, as
# dynamo_graph_capture_for_export's module cannot be deep-copied (it recurses).
GRAPH_PROGRAMS = """
_FIRST_STATE = {}


def graph_module(captured):
    \"\"\"The GraphModule a Dynamo capture gives (in ``torch._dynamo.export``'s result),
    its parameters and buffers put back to the values it was captured with.\"\"\"
    gm = getattr(captured, "graph_module", captured)
    state = dict([*gm.named_parameters(), *gm.named_buffers()])
    first = _FIRST_STATE.setdefault(id(gm), {n: t.detach().clone() for n, t in state.items()})
    with torch.no_grad():
        for name, tensor in state.items():
            tensor.copy_(first[name])
    return gm


PROGRAMS = [
    ("graph module", lambda ep, inputs: graph_module(ep)),
]
"""
