"""mode: the program carries the mode the case exported in, and capturing left torch's
random number generators where eager would.

- **What the graph carries.** Each op with a training flag (``mode_ops.py``) made
  by one of torch.nn's mode-following modules runs with the flag that module's mode
  gives (BatchNorm in training mode ships with ``training=True``: the case asked for
  that, or it did not). A mismatch is a finding naming the node and the module.
- **Switching.** The mode is baked in: what ``ep.module().train()`` / ``.eval()``
  and ``unflatten(ep)``'s do on this torch is told (``Info``). Where a switch is
  silent — ``unflatten(ep).eval()`` sets ``training`` and computes as before — on a
  program exported in train mode whose outputs depend on the mode, it is a finding:
  a user who fine-tuned it and calls ``.eval()`` to validate gets dropout and batch
  statistics (pytorch/pytorch#103681). A program exported in eval mode stays eval
  under ``.train()`` the same way; that is told, not failed: a served eval program
  is not switched.
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
from pytest_exportcheck.checks.mode_ops import mode_ops
from pytest_exportcheck.comparison.compare_values import Tolerance, compare_trees
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
    if others:
        where = sorted({_module_name(op.module) for op in others})
        findings.append(
            Note(
                f"{len(others)} op(s) with a training flag made outside torch.nn's "
                f"mode-following modules (in {', '.join(where[:4])}"
                f"{' ...' if len(where) > 4 else ''}): a model's own module may pass any "
                "flag, so theirs were not judged"
            )
        )
    if ops and isinstance(record, ProgramRecord):
        findings += switch_findings(case, record)
    return findings


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
    """What ``.train()`` / ``.eval()`` does to ``ep.module()`` and ``unflatten(ep)``."""
    other = "eval" if case.model.mode == "train" else "train"
    switch = f".{other}()"
    told = [_module_switch(record, switch, other)]
    subject = record.subject
    tolerance = Tolerance.of_case(case)
    own = subject.eager_steps(1)[0].output
    other_model = subject.model_copy().train(other == "train")
    other_output = subject.run(other_model, subject.inputs_copy(), steps=1, eager=True)[0].output
    if not compare_trees(own, other_output, tolerance=tolerance):
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
        first = (exception_text(exc).splitlines() or [""])[0][:200]
        why = f"unflatten(ep) raised {type(exc).__name__}: {first}"
        return [*told, Note(f"unflatten(ep){switch} not checked: {why}")]
    if not compare_trees(other_output, got, tolerance=tolerance):
        return [
            *told,
            Info(f"unflatten(ep){switch} switches: it computes as eager in {other} mode"),
        ]
    if compare_trees(own, got, tolerance=tolerance):
        return [*told, Info(f"unflatten(ep){switch}: outputs match neither mode's eager")]
    silent = (
        f"unflatten(ep){switch} sets training={other == 'train'} and computes as before, in "
        f"{case.model.mode} mode: the program will not switch"
    )
    if case.model.mode == "train":
        return [*told, f"{silent}; export the model in eval mode for an eval program"]
    return [*told, Info(f"{silent} (an eval program is served as it is: told, not failed)")]


def _module_switch(record: ProgramRecord, switch: str, other: str) -> Any:
    module = record.fresh_module()
    try:
        getattr(module, other)()
    except Exception as exc:
        first = (exception_text(exc).splitlines() or [""])[0]
        return Info(
            f"ep.module(){switch} raises {type(exc).__name__} on torch {torch.__version__}: {first}"
        )
    return Info(f"ep.module(){switch} does not raise on torch {torch.__version__}")
