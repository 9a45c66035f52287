"""A declared range the capture narrowed: a finding, unless eager refuses the sizes cut off.

A guard in the model narrows what the case declared (``Dim.DYNAMIC(min=1, max=16)``
on a sequence a ``Conv1d(kernel_size=3)`` reads is recorded as ``[3, 16]``). Where
eager computes a size cut off, the program refuses what the case allows: a
finding. Where eager raises there too ("Calculated padded input size per
channel: (2). Kernel size: (3)"), the program is right to refuse it: the case
declares sizes the model cannot run, which is a fact about the case, told as an
``Info``::

    note: dynamic (args[0] dim 2) is declared Dim.DYNAMIC(min=1, max=16), but export
    narrowed it to [3, 16]: eager raises at args[0] dim 2=1 and 2 too (RuntimeError:
    Calculated padded input size per channel: ...): the case declares sizes the model
    cannot run, and the program refuses them as eager does

Eager is asked at each side's ends: the declared bound and the size next to the
recorded one. Where it cannot be asked (an input factory that takes no sizes, a
size over the elements cap), the finding stands.
"""

from __future__ import annotations

from collections.abc import Callable

from pytest_exportcheck.capture.record import CaptureRecord
from pytest_exportcheck.checks.shape_runs import Sizes, inputs_at, run_once
from pytest_exportcheck.containment.failures import Info
from pytest_exportcheck.model.build import BuildError
from pytest_exportcheck.spec import Case
from pytest_exportcheck.spec.dynamic import DynamicSpec

REFUSES = "the program refuses sizes the case allows"


class Narrowed(str):
    """The finding, with what it takes to ask eager: the dim's size key (as the size
    checks name it) and the sizes cut off to try."""

    head: str
    key: str
    cut: tuple[int, ...]
    enforced: bool  # a program that checks its inputs' sizes (not a Dynamo graph)


def narrowed(
    head: str,
    key: str,
    declared: tuple[int, int | None],
    recorded: tuple[int, int | str],
    tail: str = REFUSES,
) -> Narrowed:
    """``head``: the dim, declared and recorded; the finding is ``head: tail``."""
    found = Narrowed(f"{head}: {tail}")
    found.head, found.key, found.enforced = head, key, tail == REFUSES
    (low, high), (kept_low, kept_high) = declared, recorded
    cut: set[int] = set()
    if isinstance(kept_low, int) and kept_low > low:
        cut |= {low, kept_low - 1}
    if high is not None and isinstance(kept_high, int) and kept_high < high:
        cut |= {kept_high + 1, high}
    found.cut = tuple(sorted(cut))
    return found


def told(
    found: Narrowed,
    case: Case,
    record: CaptureRecord,
    spec: DynamicSpec,
    fits: Callable[[Sizes], bool],
) -> str:
    """``found`` as a plain finding, or an ``Info`` where eager raises at every size
    cut off (``spec``: the sizing spec, with the dim among its named ones)."""
    if found.key not in spec.named or not found.cut:
        return str(found)
    example = {name: spec.example.get(name, dim.min) for name, dim in spec.named.items()}
    errors = []
    for size in found.cut:
        sizes = {**example, found.key: size}
        if not fits(sizes):
            return str(found)
        inputs = inputs_at(case, spec, sizes, record.subject.device)
        if isinstance(inputs, BuildError):
            return str(found)
        _, error = run_once(lambda: record.subject.model_copy(), inputs, case.seed)
        if error is None:
            return str(found)  # eager computes a size the program refuses
        errors.append(error)
    shown = [str(size) for size in found.cut]
    sizes_text = ", ".join(shown[:-1]) + f" and {shown[-1]}" if len(shown) > 1 else shown[0]
    text = (
        f"note: {found.head}: eager raises at {found.key}={sizes_text} too ({errors[0]}): "
        "the case declares sizes the model cannot run"
    )
    # A Dynamo graph checks no size: what it computes there is judged at the sizes run.
    return Info(text + (", and the program refuses them as eager does" if found.enforced else ""))
