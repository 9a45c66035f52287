"""mode: the program carries the mode the case exported in, and capturing left torch's
random number generators where eager would.

- **What the graph carries.** Each op with a training flag (``mode_ops.py``) made
  by one of torch.nn's mode-following modules runs with the flag that module's mode
  gives (BatchNorm in training mode ships with ``training=True``: the case asked for
  that, or it did not). A mismatch is a finding naming the node and the module.
- **Switching.** The mode is baked in: what ``ep.module().train()`` / ``.eval()``
  and ``unflatten(ep)``'s do on this torch is told (``Info``). ``unflatten(ep).eval()``
  sets ``training`` and computes as before (torch 2.9 through 2.14): a train-mode
  program stays one, which is what a user exporting a training graph on purpose
  relies on, and no export of the model could change it, so it is told, not failed
  (pytorch/pytorch#103681). A case that needs a program which switches says so
  (``expect: {mode: {switches: true}}``); there a silent switch is a finding. The
  probe runs eager in the other mode, which can raise where the case's mode does not
  (BatchNorm on a batch of one in training): that is the check's limit, told.
- **Generators.** A capture that moves torch's global generator (the CPU one, or a
  started accelerator's) changes every later draw of the user's process; it is a
  finding unless eager's own forward, from the same state, leaves it the same way.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from pytest_exportcheck.capture.export import ProgramRecord
from pytest_exportcheck.capture.record import CaptureRecord
from pytest_exportcheck.checks.mode_ops import expected_flag, mode_ops
from pytest_exportcheck.comparison.compare_values import Tolerance, compare_trees, untracked
from pytest_exportcheck.containment.failures import Info, Note, exception_text
from pytest_exportcheck.model.rng_state import rng_state, under_rng
from pytest_exportcheck.spec import Case


def check_mode(case: Case, record: CaptureRecord) -> list[str]:
    findings = generator_findings(record)
    ops = mode_ops(record.graph_module, record.subject.pristine_model)
    judged = [op for op in ops if op.expected is not None]
    for op in judged:
        if op.flag != op.expected:
            mode = "training" if op.expected else "eval"
            findings.append(
                f"{op.render()}, where eager's module {op.module!r} runs it in {mode} mode "
                f"(the case's mode: {case.model.mode}): the program carries the other mode"
            )
    others = [op for op in ops if op.expected is None]
    # A flag equal to the one mode every module of the model gives cannot contradict the
    # module that made it, whichever that is: such an op is judged, not a gap.
    uniform = _uniform_flag(record.subject.pristine_model)
    unjudged = [op for op in others if op.flag != uniform]
    if len(unjudged) < len(others):
        findings.append(
            Info(
                f"{len(others) - len(unjudged)} op(s) with a training flag whose module is not "
                f"judged run with training={uniform}, the flag every module of the model gives"
            )
        )
    unrecorded = [op for op in unjudged if op.module is None]
    if unrecorded:
        why = (
            "the model's modules run in different modes"
            if uniform is None
            else f"they run with training={not uniform}, which a model's own code may pass"
        )
        findings.append(
            Note(
                f"{len(unrecorded)} op(s) with a training flag not judged: the graph records "
                f"no module that made them (an AOT joint graph keeps no nn_module_stack), and "
                f"{why}"
            )
        )
    owned = [op for op in unjudged if op.module is not None]
    if owned:
        where = sorted({_module_name(op.module) for op in owned})
        findings.append(
            Note(
                f"{len(owned)} op(s) with a training flag made outside torch.nn's "
                f"mode-following modules (in {', '.join(where[:4])}"
                f"{' ...' if len(where) > 4 else ''}): a model's own module may pass any "
                "flag, so theirs were not judged"
            )
        )
    if ops and isinstance(record, ProgramRecord):
        findings += switch_findings(case, record)
    return findings


def _uniform_flag(model: torch.nn.Module) -> bool | None:
    """The training flag every module of ``model`` gives (its mode, and what each of
    torch.nn's mode-following modules passes in it), or None where they differ."""
    flags = {module.training for module in model.modules()}
    flags |= {flag for module in model.modules() if (flag := expected_flag(module)) is not None}
    return flags.pop() if len(flags) == 1 else None


def _module_name(fqn: str | None) -> str:
    return "(no module recorded)" if fqn is None else (fqn or "the root module")


def generator_findings(record: CaptureRecord) -> list[str]:
    if record.rng_around is None:
        return [Note("generators not compared: this record was not made by a capture")]
    before, after = record.rng_around
    moved = before.moved_in(after)
    if not moved:
        return []
    subject = record.subject
    with under_rng(before):  # eager's forward from the state the capture started in
        model = subject.model_copy()
        args, kwargs = subject.inputs_copy()
        with contextlib.suppress(Exception):  # eager's failures are the value checks' to tell
            model(*args, **kwargs)
        eager_after = rng_state()
    if not after.moved_in(eager_after):
        return [Info(f"capturing moved the {', '.join(moved)} generator as eager's forward does")]
    return [
        f"capturing moved torch's global random number generator ({', '.join(moved)}) "
        "where eager's forward from the same state leaves it elsewhere: every later random "
        "draw of the user's process changes with the capture"
    ]


def switch_findings(case: Case, record: ProgramRecord) -> list[str]:
    """What ``.train()`` / ``.eval()`` does to ``ep.module()`` and ``unflatten(ep)``.

    Told, unless the case asks for a switchable program (``expect.mode.switches``):
    torch.export bakes the mode in, so no export of a train-mode model switches, and a
    user exporting a training graph on purpose relies on exactly that.
    """
    other = "eval" if case.model.mode == "train" else "train"
    switch = f".{other}()"
    told = [_module_switch(record, switch, other)]
    limit = Note if case.expect.mode_switches else Info  # a gap only where it is judged
    subject = record.subject
    tolerance = Tolerance.of_case(case)
    own = subject.eager_steps(1)[0].output
    try:
        other_model = subject.model_copy().train(other == "train")
        other_inputs = subject.inputs_copy()
        other_output = subject.run(other_model, other_inputs, steps=1, eager=True)[0].output
    except Exception as exc:  # the probe's limit (BatchNorm on a batch of one), not the case's
        return [*told, limit(f"unflatten(ep){switch} not compared: {_raised('eager', exc)}")]
    with untracked():  # a probe: does the mode matter here at all?
        same_in_both = not compare_trees(own, other_output, tolerance=tolerance)
    if same_in_both:
        return [
            *told,
            Info(
                f"eager's outputs do not depend on the mode, so {switch} changes nothing to check"
            ),
        ]
    try:
        unflattened = record.fresh_unflattened()
        getattr(unflattened, other)()  # .eval() or .train(), as a user calls it
        got = subject.run(unflattened, subject.inputs_copy(), steps=1)[0].output
    except Exception as exc:  # the hierarchy and parity items report it in full
        return [*told, limit(f"unflatten(ep){switch} not checked: {_raised('unflatten(ep)', exc)}")]
    # Judged (the item's comparison) only where the case asks for a switch; else what
    # it finds is told, and the item reports no tolerance it was not held to.
    with contextlib.nullcontext() if case.expect.mode_switches else untracked():
        switches = not compare_trees(other_output, got, tolerance=tolerance)
    if switches:
        return [
            *told,
            Info(f"unflatten(ep){switch} switches: it computes as eager in {other} mode"),
        ]
    asked = (
        f"the case asks for a program that switches (expect.mode.switches, "
        f"{case.at(case.expect.mode_line)})"
    )
    with untracked():  # which of two texts to tell
        neither_mode = bool(compare_trees(own, got, tolerance=tolerance))
    if neither_mode:
        neither = f"unflatten(ep){switch}: outputs match neither mode's eager"
        return [*told, f"{neither}; {asked}" if case.expect.mode_switches else Info(neither)]
    silent = (
        f"unflatten(ep){switch} sets training={other == 'train'} and computes as before, in "
        f"{case.model.mode} mode: the program will not switch"
    )
    if case.expect.mode_switches:
        return [
            *told,
            f"{silent}; {asked}, and torch.export bakes the mode in: export the model in "
            f"{other} mode for an {other} program",
        ]
    if case.model.mode == "train":
        return [
            *told,
            Info(
                f"{silent} (a train-mode program stays one, as the case exported it: told, not "
                "failed; export in eval mode for an eval program, or set "
                "expect.mode.switches to require a switch)"
            ),
        ]
    return [*told, Info(f"{silent} (an eval program is served as it is: told, not failed)")]


def _raised(what: str, exc: BaseException) -> str:
    return f"{what} raised {type(exc).__name__}: {_first_line(exc)}"


def _first_line(exc: BaseException) -> str:
    return (exception_text(exc).splitlines() or [""])[0][:200]


def _module_switch(record: ProgramRecord, switch: str, other: str) -> Any:
    module = record.fresh_module()
    try:
        getattr(module, other)()
    except Exception as exc:
        return Info(
            f"ep.module(){switch} raises {type(exc).__name__} on torch {torch.__version__}: "
            f"{_first_line(exc)}"
        )
    return Info(f"ep.module(){switch} does not raise on torch {torch.__version__}")
