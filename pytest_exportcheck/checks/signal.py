"""Can parity fail at all? Outputs that carry no signal, and signal found inside the model.

At random initialization many real models output values far below float32's
absolute tolerance — torchvision's mobilenet_v2 1e-13 to 3e-7 — or exactly 0
(vit_b_16's zero-initialized head), and every program passes ``allclose``
against them, one that returns ``-out`` or ``1000 * out`` too. Two remedies:

* a leaf whose largest magnitude is below 1000 x atol, but not all zero, is
  compared at its own scale (``compare_values.own_scale``: atol = max |eager| /
  1000), where a negated or halved program fails;
* a leaf that is *constant* — a single element that is 0, or elements all
  equal — cannot tell programs apart at any scale. When no leaf carries
  signal, the submodule outputs are compared (eager and ``unflatten(ep)``,
  hooked as in ``localize.py``): a divergence there is named; otherwise the
  item fails as *vacuous*, with the way out (``model.init: fan_in`` redraws
  the parameters, seeded, keeping activations at scale), since the root's
  own ops after its last submodule are still unchecked.

A constant leaf the program builds from sizes alone (``sized.py``: zeros of
``x.item()`` rows) carries signal in its shape where the program computes that
shape (a symbolic dim): a wrong size fails the shape comparison, so it is not
vacuous, and nothing is left unjudged (context says its shape is what is
compared: an ``Info``, not a gap). With its shape fixed in the program it is
constant in every way: vacuous, and the way out is a dynamic dim, not
``model.init``. Parity, ``shapes`` and the lowered programs ask
:func:`output_signal` and say :func:`not_judged` alike: one output, one text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from pytest_exportcheck.checks.child_outputs import compare_child_outputs
from pytest_exportcheck.checks.localize import hooked_calls
from pytest_exportcheck.checks.sized import SizedLeaf, free_dims, sized_leaves
from pytest_exportcheck.comparison.compare_values import (
    OWN_SCALE,
    Tolerance,
    flatten_with_paths,
)
from pytest_exportcheck.containment.failures import Info, Note


def no_signal(
    output: Any, tolerance: Tolerance, sized: Mapping[int, SizedLeaf] | None = None
) -> str | None:
    """Why no leaf of ``output`` carries signal (one reason per leaf), or None if one does.

    ``sized``: the leaves the program builds from sizes alone (``sized.py``), by index.
    """
    reasons = []
    for index, (path, leaf) in enumerate(flatten_with_paths(output)[0]):
        reason = _leaf_without_signal(leaf, tolerance)
        built = (sized or {}).get(index)
        if reason and built is not None:
            if built.symbolic:
                return None  # the program computes its shape: a wrong one fails
            reason += f", built from sizes alone, its shape {built.shape} fixed in the program"
        if reason is None:
            return None
        if reason:
            reasons.append(f"output{path}: {reason}")
    return "; ".join(reasons) if reasons else None


def output_signal(record: Any, output: Any, tolerance: Tolerance) -> tuple[str | None, list[Note]]:
    """Whether eager's ``output`` can tell a wrong program from a right one, one answer
    for every check that compares it: why no leaf carries signal (None where one
    does), and what is said of the constant leaves whose shape carries it."""
    sized = sized_leaves(record, output)
    why = no_signal(output, tolerance, sized)
    if why and sized:  # a static shape may still follow the inputs: one more program asked
        sized = free_dims(record.subject, output, sized)
        why = no_signal(output, tolerance, sized)
    return why, shape_signal(output, tolerance, sized)


def not_judged(why: str, wrong: str, where: str = "") -> Note:
    """Outputs compared equal that no wrong program could make differ (``why``)."""
    at = f" {where}" if where else ""
    return Note(
        f"outputs{at} not judged: no output of eager carries signal ({why}), so a wrong "
        f"{wrong} would agree with it as well"
    )


def shape_signal(output: Any, tolerance: Tolerance, sized: Mapping[int, SizedLeaf]) -> list[Note]:
    """What is said of the constant leaves whose signal is their shape, which the program
    computes: context (an ``Info``), since shapes are compared: nothing is left unjudged."""
    notes: list[Note] = []
    for index, (path, leaf) in enumerate(flatten_with_paths(output)[0]):
        built = sized.get(index)
        reason = _leaf_without_signal(leaf, tolerance) if built and built.symbolic else None
        if not reason:
            continue
        assert built is not None
        how = (
            f"fixed in this program but following the inputs ({built.follows} with every "
            "input dim free)"
            if built.follows
            else "which the program computes from its inputs"
        )
        notes.append(
            Info(
                f"note: output{path}: {reason}, built from sizes alone: its shape "
                f"{built.shape}, {how}, is what is compared, not its values"
            )
        )
    return notes


def _leaf_without_signal(leaf: Any, tolerance: Tolerance) -> str | None:
    """Why this leaf cannot tell programs apart; None if it can; "" if it is no tensor."""
    if not isinstance(leaf, torch.Tensor):
        return ""  # compared by value, nothing numeric to carry
    if leaf.device.type == "meta" or leaf.numel() == 0:
        return ""
    flat = leaf.detach().flatten()
    if flat.numel() == 1:
        return "a single element, 0" if bool(flat[0] == 0) else None
    if bool((flat == flat[0]).all()):
        return f"all {flat.numel()} elements are {flat[0].item()!r}"
    return None


def loose_atol(output: Any, tolerance: Tolerance) -> list[Note]:
    """Notes for the leaves a case's own atol is not small against.

    ``compare_values.own_scale`` compares such a leaf at its scale only under the
    dtype's default atol: an atol the case states is kept as written, and this says
    what it lets through.
    """
    notes = []
    for path, leaf in flatten_with_paths(output)[0]:
        if not isinstance(leaf, torch.Tensor) or not leaf.is_floating_point():
            continue
        atol = tolerance.resolve(leaf.dtype, leaf.device).atol
        if not atol or leaf.device.type == "meta" or leaf.numel() == 0:
            continue
        finite = leaf.detach()[leaf.detach().isfinite()]
        scale = float(finite.abs().max()) if finite.numel() else 0.0
        if 0.0 < scale < OWN_SCALE * atol:
            notes.append(
                Note(
                    f"note: output{path}: the case's atol {atol:g} is not small against the "
                    f"output (max |eager| {scale:.3g} < {OWN_SCALE} x atol): a program off by "
                    f"up to {atol:g} passes"
                )
            )
    return notes


def signal_inside(record: Any, tolerance: Tolerance, why: str) -> list[str]:
    """With outputs that carry no signal (``why``): findings from the submodule outputs.

    A divergence inside is named; with none, the item is vacuous: the root's own
    ops after its last submodule could still be wrong.
    """
    make = getattr(record, "fresh_unflattened", None)
    way_out = (
        "Parity cannot fail on these outputs: set `model.init: fan_in` to redraw the "
        "parameters (seeded, activations kept at scale), or give inputs for which they vary"
    )
    if all("built from sizes alone" in reason for reason in why.split("; ")):
        # Constant by construction: neither a redraw nor other values change them.
        way_out = (
            "Parity cannot fail on these outputs: they are built from sizes alone, so only "
            "a shape the program computes could differ; where it follows an input dim, "
            "declare that dim dynamic (`dynamic:`), else xfail parity (nothing to compare)"
        )
    if make is None:
        return [
            f"vacuous: no output of eager carries signal ({why}), and {record.capture} has "
            f"no module hierarchy to compare inside. {way_out}"
        ]
    subject = record.subject
    try:
        eager = hooked_calls(subject.model_copy(), subject.inputs_copy(), subject.case.seed, True)
        exported = hooked_calls(make(), subject.inputs_copy(), subject.case.seed, False)
    except Exception as exc:
        return [
            f"vacuous: no output of eager carries signal ({why}), and the hooked run to "
            f"compare submodule outputs raised {type(exc).__name__}. {way_out}"
        ]
    by_key = {(call.fqn, call.index): call for call in exported}
    carried = 0
    for want in eager:
        got = by_key.get((want.fqn, want.index))
        if got is None or no_signal(want.output, tolerance) is not None:
            continue
        carried += 1
        # A child returns only the outputs its parent uses (child_outputs.py).
        problems, _ = compare_child_outputs(
            want.output, got.output, tolerance=tolerance,
            root=f"{want.fqn} output", names=("eager", "unflatten(ep)"),
        )  # fmt: skip
        if problems:
            return [
                f"no output of eager carries signal ({why}); inside the model, "
                f"{want.fqn} ({want.kind}) differs: {problems[0]}"
            ]
    if carried == 1:
        inside = "the one submodule output that does agrees, but the root's own ops are unchecked"
    elif carried:
        inside = (
            f"the {carried} submodule outputs that do agree, but the root's own ops are unchecked"
        )
    else:
        inside = "nor does any submodule output"
    return [f"vacuous: no output of eager carries signal ({why}); {inside}. {way_out}"]
