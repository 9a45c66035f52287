"""The programs an export capture runs as (``programs:``, ``capture/chains.py``), as source.

Each starts from a private copy of ``ep`` (a program run shares no state with another)
and applies its steps: ``decompose`` is ``run_decompositions()``, ``save`` a
``torch.export.save`` and ``load`` through a file, ``retrace`` a non-strict export of
``ep.module()``; it ends in ``.module()`` or ``torch.export.unflatten``. A chain that
moves the program to a device is not written yet: :func:`unwritten` says so.
"""

from __future__ import annotations

from pytest_exportcheck.spec import Case
from pytest_exportcheck.spec.case import CHAIN_ENDS, DEFAULT_PROGRAM_LABELS

STEPS = {
    "decompose": "{program}.run_decompositions()",
    "save": "saved_and_loaded({program})",
    "retrace": "torch.export.export({program}.module(), *cloned(inputs), strict=False)",
}

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


def unwritten(case: Case) -> list[str]:
    """The case's programs a script cannot make yet, each with why."""
    missing = []
    for spelling in case.programs:
        steps = spelling.split(">")
        if any(step.startswith("move:") for step in steps):
            missing.append(f"program {spelling}: moving a program to a device is not written yet")
        elif "retrace" in steps and case.dynamic is not None:
            missing.append(f"program {spelling}: a retrace with dynamic: is not written yet")
    return missing


def program_source(spelling: str) -> str:
    """An expression making the module ``spelling`` names from ``ep`` (and ``inputs``)."""
    *steps, last = spelling.split(">")
    end = last if last in CHAIN_ENDS else "module"
    if last not in CHAIN_ENDS:
        steps.append(last)
    program = "copy.deepcopy(ep)"
    for step in steps:
        program = STEPS[step].format(program=program)
    return f"torch.export.unflatten({program})" if end == "unflatten" else f"{program}.module()"


def programs_source(case: Case, *, only_stateful: bool) -> str:
    """``PROGRAMS``: (label, a function making the module) for each program the item ran
    (a case with a program :func:`unwritten` names gets no such script: ``kinds.py``)."""
    lines = ["PROGRAMS = ["]
    for spelling in case.programs:
        if only_stateful and not stateful(spelling):
            continue
        lines.append(f"    ({label(spelling)!r}, lambda ep, inputs: {program_source(spelling)}),")
    return "\n".join([*lines, "]"])
