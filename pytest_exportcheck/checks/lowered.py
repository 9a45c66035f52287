"""lowered-<target>: the program lowered to a target (``lowering/``) behaves like eager.

The capture's program, as a private copy (a target may change what it is given),
is lowered into a temporary directory. Over ``expect.parity.steps`` calls, and at
least two where forward changes state (a dropped buffer update shows only on a
later call), the lowered program's outputs, its parameters and buffers where the
target exposes them, and the inputs it mutates are compared with eager's under
the case's tolerance policy (float64 eager arbitrates, as for parity). A lowering,
load or call that raises fails the item at that stage: ``[lower]``, ``[load]``,
``[run]``. An artifact a server loads (the AOTInductor package, the saved program)
is loaded and called again in a fresh interpreter that imports torch and the case's
``load_imports`` only (``lowering/fresh_process.py``), its outputs compared the
same way: what loads only where it was made is a finding.
"""

from __future__ import annotations

import tempfile
import time
import warnings
from dataclasses import replace
from pathlib import Path

from torch.utils import _pytree as pytree

from pytest_exportcheck.capture.export import ProgramRecord
from pytest_exportcheck.capture.record import CaptureRecord
from pytest_exportcheck.checks.lowered_sizes import lowered_across_sizes
from pytest_exportcheck.checks.signal import not_judged, output_signal
from pytest_exportcheck.checks.steps import compare_step, fp64_output, lifted_state
from pytest_exportcheck.comparison.compare_values import Tolerance, compare_trees
from pytest_exportcheck.containment.failures import ExportCheckWarning, Info, Note
from pytest_exportcheck.lowering import artifact_cache
from pytest_exportcheck.lowering.fresh_process import FreshRun, run_in_fresh_process
from pytest_exportcheck.lowering.target import LoweringError, Target, raising_at
from pytest_exportcheck.model.isolation import private_copy, quiet_torch_internals
from pytest_exportcheck.model.runs import Step
from pytest_exportcheck.model.subject import Subject
from pytest_exportcheck.spec import Case


def check_lowered(case: Case, record: CaptureRecord, target: Target) -> list[str]:
    artifact_cache.take_dropped()  # an earlier item's, told there
    try:
        return _check_lowered(case, record, target)
    finally:
        _tell_dropped(case)


def _tell_dropped(case: Case) -> None:
    """A damaged cache entry is a miss: made again, and said once, in pytest's warnings
    summary under the item that found it (never the model's failure)."""
    dropped = artifact_cache.take_dropped()
    if dropped:
        kinds = " and ".join(dict.fromkeys(artifact_cache.kind_of(name) for name in dropped))
        with warnings.catch_warnings():  # shown, never raised (-W error): it is no failure
            warnings.simplefilter("always", ExportCheckWarning)
            warnings.warn(
                ExportCheckWarning(
                    f"{case.location}: the lowering cache's {kinds} for this item did not hold "
                    f"the bytes that were kept (truncated or changed): removed, and made again "
                    f"({', '.join(dropped)})"
                ),
                stacklevel=2,
            )


def _check_lowered(case: Case, record: CaptureRecord, target: Target) -> list[str]:
    if not isinstance(record, ProgramRecord):  # not_applicable keeps others out
        raise TypeError(f"lowering needs an ExportedProgram; {record.capture} gives none")
    subject = record.subject
    mutated = sorted(subject.eager.mutated_state)
    steps = max(case.expect.parity.steps, 2 if mutated else 1)
    label = f"lowered to {target.name}"
    eager_steps = subject.eager_steps(steps)
    with tempfile.TemporaryDirectory(prefix="exportcheck-lowered-") as directory:
        with quiet_torch_internals():  # torch's own deprecation warnings on the way down
            lowered = target.lower(private_copy(record.program), Path(directory))
        inputs = subject.inputs_copy()
        first = "lower" if lowered.compiles_at_first_call else "run"
        started = time.perf_counter()
        with raising_at(first, f"the program {label}, at its first call,"):
            got = subject.run(lowered.call, inputs, steps=1, state_of=lowered.state)
        if lowered.compiles_at_first_call:  # the compile was that call
            lowered.seconds += time.perf_counter() - started
        if not lowered.keeps_state and mutated:  # the artifact has no state to carry
            steps, eager_steps = 1, eager_steps[:1]
        if steps > 1:
            with raising_at("run", f"the program {label}, at a later call,"):
                got += subject.run(lowered.call, inputs, steps=steps - 1, state_of=lowered.state)
        # After the steps: each size is another call of the same lowered program.
        at_sizes = lowered_across_sizes(case, record, lowered.call, label, bool(mutated))
        fresh = None
        if lowered.package is not None:
            fresh = run_in_fresh_process(
                lowered.package, inputs, loader=lowered.loader, imports=load_imports(case),
                steps=steps, seed=case.seed, directory=Path(directory), kept=lowered.kept,
            )  # fmt: skip
    lifted = lifted_state(record) if lowered.state is not None else set()
    tolerance = Tolerance.of_case(case)
    findings: list[str] = []
    # A lowered program reduces in its own order: state that is itself float noise
    # (the running mean of activations a BatchNorm just normalized: ~1e-10 where the
    # activations are ~1) differs by noise, so state is not shrunk to its own scale.
    state_tolerance = replace(tolerance, own_scale=False)
    for index, (want, step) in enumerate(zip(eager_steps, got, strict=True), start=1):
        problems = compare_step(
            want, step, label, lifted, subject.tensor_groups, tolerance,
            reference=lambda index=index: subject.fp64_step(index - 1, steps),
            state_tolerance=state_tolerance,
        )  # fmt: skip
        if problems:
            findings = [f"after call {index}/{steps}: {p}" for p in problems]
            break
    why, told = output_signal(record, eager_steps[0].output, tolerance)
    if why and not findings:  # parity fails the case's own program as vacuous (signal.py)
        findings.append(not_judged(why, f"program {label}"))
    findings += told  # constant outputs whose shape, compared, carries the signal
    findings += at_sizes
    if fresh is not None:
        where = f"{label}, loaded in a fresh process ({_imported(case)})"
        findings += fresh_findings(fresh, eager_steps, where, tolerance, subject, steps)
    more = len(mutated) - 4
    shown = ", ".join(mutated[:4]) + (f" and {more} more" if more > 0 else "")
    if not lowered.keeps_state and mutated:
        findings.append(
            Note(
                f"state not kept: {target.name} carries no state between calls, so the "
                f"updates of {shown} are not in what it built; judged at the first call only"
            )
        )
    elif lowered.state is None and mutated:
        findings.append(
            Note(
                f"state not read: {target.name} keeps parameters and buffers inside what it "
                f"built, so the updates of {shown} were judged by the outputs of {steps} "
                "calls only"
            )
        )
    size = "" if lowered.size_bytes is None else f", {lowered.size_bytes / 2**20:.1f} MiB"
    cached = ": what an earlier run lowered from the same program, loaded from the cache"
    cached = cached if lowered.from_cache else ""
    if fresh is not None and fresh.from_cache:
        cached += "; the fresh process's result as an earlier run's gave it for these inputs"
    findings.append(Info(f"lowered to {target.name} in {lowered.seconds:.1f} s{size}{cached}"))
    return findings


def load_imports(case: Case) -> tuple[str, ...]:
    """The case's ``load_imports``, files made absolute (the child runs anywhere)."""
    imports = []
    for name in case.load_imports:
        if name.endswith(".py"):
            path = (case.base_dir / name).resolve()
            if not path.is_file():
                raise LoweringError(
                    "load", f"load_imports of {case.location}: {name}: no such file ({path})"
                )
            name = str(path)
        imports.append(name)
    return tuple(imports)


def _imported(case: Case) -> str:
    return f"torch, {', '.join(case.load_imports)}" if case.load_imports else "torch only"


def fresh_findings(
    fresh: FreshRun,
    eager_steps: list[Step],
    where: str,
    tolerance: Tolerance,
    subject: Subject,
    steps: int,
    *,
    fp64: bool = True,
) -> list[str]:
    """The artifact in a new interpreter: it loads, runs, and gives eager's outputs
    (``fp64``: float64 eager of ``subject`` arbitrates, where the policy asks)."""
    if fresh.outputs is None and fresh.ended:  # no exception: how the process ended
        return [f"[{fresh.stage}] {where}: {fresh.error}"]
    if fresh.outputs is None:
        what = "loading it" if fresh.stage == "load" else "calling it"
        if fresh.error and fresh.error.startswith("importing "):
            what = "an import before the load"
        hint = (
            "\n(a server imports what registers the program's custom ops and output types "
            "before it loads it: name that in the case's load_imports)"
            if "(torch only)" in where
            else ""
        )
        return [
            f"[{fresh.stage}] {where}: {what} raised, where this process did not:\n"
            f"{fresh.error}{hint}"
        ]
    for index, (want, (leaves, spec)) in enumerate(zip(eager_steps, fresh.outputs, strict=True), 1):
        eager_spec = pytree.tree_structure(want.output)
        if spec != str(eager_spec):
            return [
                f"after call {index}/{steps}, {where}: output structure {spec}, where eager "
                f"gives {eager_spec}"
            ]
        output = pytree.tree_unflatten(leaves, eager_spec)
        problems = compare_trees(
            want.output, output, tolerance=tolerance, names=("eager", where),
            reference=fp64_output(subject, index - 1, steps) if fp64 else None,
        )  # fmt: skip
        if problems:
            return [f"after call {index}/{steps}, {where}: {p}" for p in problems]
    return []
