"""shapes: the dims a case declares dynamic stay dynamic, and every program holds across them.

Export's own record (``ep.range_constraints``) is not enough to trust: strict
export can specialize a named ``Dim`` silently, or record a range exactly as
declared and still refuse sizes inside it; ``Dim.AUTO`` narrows without a word;
lower bounds of 0, 1 and 2 are not enforced at run time. So the check reads
what export recorded *and runs* sizes::

    declared    batch [1, 64] at args[0] dim 0
    recorded    placeholder x: f32[s0, 8], range_constraints s0: [1, 64]
    run         min (1), max (64), a seeded size inside, the example; 0 and 1 where
                allowed; the case's sizes:
                eager vs ep.module() / unflatten(ep) / decomposed / saved and loaded;
                state over the mutation steps at the size inside
    outside     max + 1 (and min - 1 where min > 2): each program must refuse it;
                below a min of 0-2, a program that computes is judged by what it computes

Findings name the dim, the size and the program; a size eager refuses and a
program computes is one too.
"""

from __future__ import annotations

import random

from pytest_exportcheck.capture.record import CaptureRecord
from pytest_exportcheck.capture.symbolic import KeptDim, kept_dims
from pytest_exportcheck.checks.narrowed import REFUSES, Narrowed, narrowed, told
from pytest_exportcheck.checks.shape_markers import marker_verdicts, specialized_markers
from pytest_exportcheck.checks.shape_runs import (
    PROGRAM,
    Sizes,
    grouped,
    inputs_at,
    not_made,
    programs_at,
    programs_with_state,
    run_once,
    show_sizes,
)
from pytest_exportcheck.checks.signal import no_signal, not_judged
from pytest_exportcheck.checks.size_plan import one_size, size_plan
from pytest_exportcheck.checks.size_specs import refused
from pytest_exportcheck.checks.sized import sized_leaves
from pytest_exportcheck.checks.steps import compare_step, lifted_state
from pytest_exportcheck.comparison.compare_values import Tolerance, compare_trees
from pytest_exportcheck.containment.failures import Info, Note
from pytest_exportcheck.model.build import BuildError
from pytest_exportcheck.spec import Case
from pytest_exportcheck.spec.dynamic import DynamicSpec, Placement, resized_inputs, tensor_paths

# Elements per input at the largest checked size: a declared max of 512 x 64 would
# make every size check a benchmark. The size actually run is said.
SIZE_ELEMENTS_CAP = 1 << 20


def check_shapes(case: Case, record: CaptureRecord) -> list[str]:
    spec = case.dynamic
    assert spec is not None  # the item exists only for cases with dynamic dims
    kept = kept_dims(record, spec)
    findings = declared_vs_recorded(spec, record, kept)
    findings += marker_verdicts(spec, kept, record.capture)
    findings += record.programs_not_run() + not_made(record)
    why = one_size(case)  # the Python API's caller gives inputs in one size
    if why is not None:
        findings = [str(f) if isinstance(f, Narrowed) else f for f in findings]  # eager not asked
        return [*findings, Note(f"note: sizes not run: the inputs come in one size ({why})")]
    plan = size_plan(case, record, kept)  # markers torch kept dynamic run as named dims

    def fits(sizes: Sizes) -> bool:
        return _largest_input(case, plan.sized, sizes) <= SIZE_ELEMENTS_CAP

    # A narrowing is a finding where eager computes a size it cut off (``narrowed.py``).
    findings = [
        told(f, case, record, plan.sized, fits) if isinstance(f, Narrowed) else f for f in findings
    ]
    findings += across_sizes(case, record, plan.sized, plan.undeclared)
    findings += stepped_at_another_size(case, record, plan.sized)
    findings += outside_range(case, record, plan.sized, skip=set(plan.unbounded))
    findings += specialized_markers(case, record, plan.spec, kept, plan.examples)
    return findings


# --- declared vs recorded ---------------------------------------------------------------


def declared_vs_recorded(
    spec: DynamicSpec, record: CaptureRecord, kept_by: dict[Placement, KeptDim]
) -> list[str]:
    """Each declared dim symbolic in the placeholders, with the declared range; where a
    guard narrowed it, the guard's frame in the model's code (markers: shape_markers)."""
    findings: list[str] = []
    for placement, kept in kept_by.items():
        if placement.marker is not None:
            continue
        what = f"{placement.dim} ({placement.describe()})"
        if kept.kind == "static":
            findings.append(
                f"declared dim {what} was specialized to {kept.size}: {record.capture} "
                "made it static, so the program takes only that size"
            )
            continue
        declared = spec.named.get(placement.dim)
        if declared is not None and kept.expr is not None:
            findings.append(
                f"declared dim {what} became {kept.expr} in {record.capture}: a guard "
                "rewrote it, so the program takes only sizes of that form"
            )
            continue
        if kept.kind != "symbolic" or kept.range is None:
            continue  # an input export dropped (the signature says), or a derived dim
        low, high = kept.range
        source = "ep.range_constraints" if _is_program(record) else "the graph's ShapeEnv"
        if declared is None:
            continue
        if kept.range != (declared.min, declared.max):
            at = _narrowed_at(kept, low != declared.min, high != declared.max)
            head = (
                f"declared dim {what} is [{declared.min}, {declared.max}], but "
                f"{record.capture} narrowed it to [{low}, {high}] ({source}){at}"
            )
            graph = "the graph holds only for sizes in that range"
            tail = REFUSES if _is_program(record) else graph
            findings.append(
                narrowed(head, placement.dim, (declared.min, declared.max), (low, high), tail)
            )
    return findings


def _narrowed_at(kept: KeptDim, lower: bool, upper: bool) -> str:
    """``, by the guard at model.py:12 in forward (if x.shape[0] > 4:)``, or nothing
    where torch set the bound itself."""
    frames = [f for f, moved in ((kept.lower_at, lower), (kept.upper_at, upper)) if moved and f]
    return f", by the guard at {'; '.join(dict.fromkeys(frames))}" if frames else ""


def _is_program(record: CaptureRecord) -> bool:
    """An ExportedProgram (range constraints, input guards) rather than a Dynamo graph."""
    return getattr(record, "program", None) is not None


# --- sizes inside the range -------------------------------------------------------------


def checked_sizes(case: Case, spec: DynamicSpec) -> list[tuple[str, Sizes]]:
    """``(label, sizes)``: min, max (capped), a seeded size inside, the example, 0 and 1
    where the range allows them, the case's own sizes; each assignment once."""
    example = {name: spec.example.get(name, dim.min) for name, dim in spec.named.items()}
    rng = random.Random(case.seed)
    largest = {n: d.max for n, d in spec.named.items()}
    capped = _capped(case, spec, largest)
    candidates: list[tuple[str, Sizes]] = [
        ("min", {n: d.min for n, d in spec.named.items()}),
        ("max" if capped == largest else "max, shrunk to 2^20 elements per input", capped),
        ("inside", {n: rng.randint(d.min, d.max) for n, d in spec.named.items()}),
        ("example", example),
    ]
    for small in (0, 1):
        if any(d.min <= small <= d.max for d in spec.named.values()):
            sizes = {
                n: small if d.min <= small <= d.max else example[n] for n, d in spec.named.items()
            }
            candidates.append((f"{small}", sizes))
    candidates += [(f"sizes[{i}]", {**example, **s}) for i, s in enumerate(spec.sizes)]
    seen: list[Sizes] = []
    chosen = []
    for label, sizes in candidates:
        if sizes not in seen:
            seen.append(sizes)
            chosen.append((label, sizes))
    return chosen


def _capped(case: Case, spec: DynamicSpec, sizes: Sizes) -> Sizes:
    """``sizes`` shrunk (largest dim halved first) until no input exceeds the cap."""
    sizes = dict(sizes)
    while _largest_input(case, spec, sizes) > SIZE_ELEMENTS_CAP:
        name = max(sizes, key=lambda n: sizes[n] - spec.named[n].min)
        if sizes[name] <= spec.named[name].min:
            break
        sizes[name] = max(spec.named[name].min, sizes[name] // 2)
    return sizes


def _largest_input(case: Case, spec: DynamicSpec, sizes: Sizes) -> int:
    largest = 0
    for _, shape in tensor_paths(resized_inputs(case.inputs, spec, sizes)):
        numel = 1
        for dim in shape:
            numel *= dim
        largest = max(largest, numel)
    return largest


def across_sizes(
    case: Case, record: CaptureRecord, spec: DynamicSpec, undeclared: dict[str, str] | None = None
) -> list[str]:
    """Every program at each checked size against eager; ``undeclared``: the markers that
    left a bound to torch (``size_specs.py``), so a refusal names the spec it breaks."""
    tolerance = Tolerance.of_case(case)
    findings: list[str] = []
    for label, sizes in checked_sizes(case, spec):
        where = f"at {show_sizes(sizes)} ({label})"
        inputs = inputs_at(case, spec, sizes, record.subject.device)
        if isinstance(inputs, BuildError):
            findings.append(f"{where}: the inputs cannot be made at this size: {inputs}")
            continue
        eager, eager_error = run_once(lambda: record.subject.model_copy(), inputs, case.seed)
        why = no_signal(eager, tolerance, sized_leaves(record, eager)) if not eager_error else None
        if why:
            findings.append(not_judged(why, "program", where))
        found: dict[str, list[str]] = {}  # what went wrong (PROGRAM for the program) -> programs
        for program, got, error in programs_at(record, inputs, case.seed):
            what = None
            if eager_error is not None and error is None:
                what = f"eager raised {eager_error}, but {PROGRAM} computed a result"
            elif eager_error is None and error is not None:
                what = f"{PROGRAM} {refused(sizes, undeclared or {})}: {error}"
            elif eager_error is None:
                problems = compare_trees(eager, got, tolerance=tolerance, names=("eager", program))
                what = problems[0].replace(program, PROGRAM) if problems else None
            if what is not None:
                found.setdefault(what, []).append(program)
        findings += grouped(where, found)
    return findings


def stepped_at_another_size(case: Case, record: CaptureRecord, spec: DynamicSpec) -> list[str]:
    """State over the mutation check's steps at one size other than the example (the
    seeded one inside the range where it differs): an update whose size follows a
    dynamic dim (a running statistic over the batch) must keep up there too. Only for
    models that mutate state."""
    if not record.subject.eager.mutated_state:
        return []
    example = {n: spec.example.get(n) for n in spec.named}
    others = [c for c in checked_sizes(case, spec) if c[1] != example]
    if not others:
        return []
    label, sizes = next((c for c in others if c[0] == "inside"), others[0])
    steps = case.expect.mutation_steps
    where = f"at {show_sizes(sizes)} ({label}), over {steps} steps"
    inputs = inputs_at(case, spec, sizes, record.subject.device)
    if isinstance(inputs, BuildError):
        return []  # across_sizes says so
    tolerance = Tolerance.of_case(case)
    try:
        eager_steps = record.subject.run(
            record.subject.model_copy(), inputs, steps=steps, eager=True
        )
    except Exception:
        return []  # eager refuses this size: across_sizes says so
    lifted = lifted_state(record)
    findings: list[str] = []
    for runnable in record.runnables():
        if not runnable.stateful:
            continue
        try:
            call, module = runnable.make()
            runs = record.subject.run(call, inputs, steps=steps, state_of=module)
        except Exception:
            continue  # a refused size is across_sizes' finding
        for index, (want, got) in enumerate(zip(eager_steps, runs, strict=True), start=1):
            groups = record.subject.tensor_groups
            problems = compare_step(want, got, runnable.label, lifted, groups, tolerance)
            if problems:
                findings.append(f"{where}: after step {index}: {problems[0]}")
                break
    return findings


# --- sizes outside the range ------------------------------------------------------------


def outside_range(
    case: Case, record: CaptureRecord, spec: DynamicSpec, skip: set[str] | None = None
) -> list[str]:
    """Above max every program must refuse; below min too where min > 2 (torch does not
    enforce lower bounds of 0-2 at run time: there the result is judged instead).

    A Dynamo graph checks no input at all (``torch._dynamo.export`` returns its guards
    beside the graph; Dynamo's graph capture keeps none), so there every size outside
    is judged by its result.
    """
    enforced = _is_program(record)
    example = {name: spec.example.get(name, dim.min) for name, dim in spec.named.items()}
    tolerance = Tolerance.of_case(case)
    findings: list[str] = []
    for name, dim in spec.named.items():
        if name in (skip or ()):
            continue  # a marker the case gave no max: its range is torch's to choose
        tries = [(dim.max + 1, f"above {name}'s max {dim.max}")]
        if dim.min >= 1:
            tries.append((dim.min - 1, f"below {name}'s min {dim.min}"))
        for size, why in tries:
            sizes = {**example, name: size}
            if _largest_input(case, spec, sizes) > SIZE_ELEMENTS_CAP:
                continue
            inputs = inputs_at(case, spec, sizes, record.subject.device)
            if isinstance(inputs, BuildError):
                continue  # a factory that refuses a size outside the range: nothing to run
            eager, eager_error = run_once(lambda: record.subject.model_copy(), inputs, case.seed)
            where = f"at {show_sizes(sizes)} ({why})"
            found: dict[str, list[str]] = {}
            agreeing = []
            for program, got, error, nan in programs_with_state(record, inputs, case.seed):
                if error is not None:
                    continue  # refused, as it should be
                if enforced and (size > dim.max or size > 2):
                    what = (
                        f"{PROGRAM} accepted a size outside the declared range "
                        f"[{dim.min}, {dim.max}] and computed a result"
                    )
                elif eager_error is not None:
                    why_run = (
                        "a Dynamo graph checks no input sizes"
                        if not enforced
                        else "torch does not enforce lower bounds of 0-2 at run time"
                    )
                    what = (
                        f"{PROGRAM} computed a result where eager raised {eager_error} ({why_run})"
                    )
                    if nan:  # the state every later call reads is lost, not only this output
                        what += f", and left {', '.join(nan)} NaN"
                else:
                    names = ("eager", program)
                    problems = compare_trees(eager, got, tolerance=tolerance, names=names)
                    if not problems:
                        agreeing.append(program)
                        continue
                    what = f"{PROGRAM} accepted it and " + problems[0].replace(program, PROGRAM)
                found.setdefault(what, []).append(program)
            findings += grouped(where, found)
            if agreeing:
                accepted = f"{', '.join(agreeing)} accept it and agree with eager"
                findings.append(Info(f"note: {where}: {accepted}"))  # verified: not a gap
    return findings
