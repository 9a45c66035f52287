"""The lowered program at the sizes its findings name (``checks/lowered_sizes.py``).

A ``dynamic:`` case's lowered program is called again at each size ``shapes`` checks
and just outside each named dim's range; a finding there is worded as the shapes
check words its own (``at batch=17 (above batch's max 16): the program lowered to
aoti accepted a size outside the declared range [1, 16] and computed a result``), so
the script is made the same way: ``shapes_kind.parse`` reads the sizes and what the
program did, ``shapes_source`` writes ``inputs_at_N()`` drawing the case's inputs at
them, and the script calls the one lowered program there, eager beside it. It shows
the finding where the program refused where eager computed, computed where eager
raised, computed outside the declared range, or gave what ``assert_close`` rejects.
"""

from __future__ import annotations

from pytest_exportcheck.repro import shapes_kind
from pytest_exportcheck.repro.source import Imports
from pytest_exportcheck.spec import Case


def at_sizes(case: Case, findings: tuple[str, ...]) -> tuple[tuple[str, ...], str | None]:
    """The findings at sizes among ``findings`` (each a head ``at <sizes> (<label>): ``),
    and why no script shows them where one does not."""
    sized = tuple(f for f in findings if f.startswith("at "))
    for finding in sized:
        head = finding.splitlines()[0]
        if not isinstance(shapes_kind.parse(case, finding), shapes_kind.AtSizes):
            return sized, f"the lowered finding {head[:80]!r} is not written yet"
    return sized, shapes_kind.unwritten(case, sized) if sized else None


def sizes_source(case: Case, findings: tuple[str, ...], imports: Imports) -> str:
    """``SIZED`` (the sizes the lowered program is called at) and their inputs."""
    sized, _ = at_sizes(case, findings)
    if not sized:
        return "SIZED = []  # the item's findings name no sizes"
    return shapes_kind.shapes_source(case, sized, imports)


LOWERED_SIZES = '''
def lowered_at(model, program, label, entry):
    """(shown, told): the lowered program, and eager, at the entry's sizes."""
    inputs, eager, eager_error, told = eager_at(model, entry)
    got, error = run_once(lambda: program, inputs)
    shown, what = judged(entry["claim"], eager, eager_error, got, error)
    told.append(f"  {label}: {what}")
    return shown, "\\n".join(told)
'''
