"""``shapes``: the sizes a finding names, run again in plain torch, and what export recorded.

The shapes check (``checks/shapes.py``) words each finding after what it saw, so the
script is made from the findings themselves: no size is guessed again.

- ``at batch=1 (min): ep.module() refused ...`` (and the outside-the-range ones): the
  case's inputs at those sizes (``spec.dynamic.resized_inputs``, drawn as the item drew
  them), eager and each program it names run once, seeded, with autograd on; it
  reproduces when every program named shows it: a refusal where eager computes, a
  result where eager raised, a result outside the declared range, or an output
  ``torch.testing.assert_close`` rejects at the case's ``atol`` / ``rtol``;
- ``declared dim batch (args[0] dim 0) was specialized to 2`` / ``became 2*s0`` / ``is
  [1, 8], but export narrowed it to [2, 8]`` (a marker's alike): the placeholder's
  size at that dim, and its range in ``ep.range_constraints``.

Other findings (state over steps at another size, a marker made static run at the next
size) are not written: :func:`unwritten` names one. A program the check could not make
is made again the same way (``UNMADE``).
"""

from __future__ import annotations

import dataclasses
import re

from pytest_exportcheck.repro.source import Imports, inputs_source
from pytest_exportcheck.spec import Case
from pytest_exportcheck.spec.case import DEFAULT_PROGRAM_LABELS
from pytest_exportcheck.spec.dynamic import DynamicSpec, Placement, resized_inputs

# What the program did at a size, as the check words it (checks/shapes.py).
REFUSED, EAGER_RAISED, ACCEPTED, DIFFERS = "refused", "eager raised", "accepted", "differs"
_AT = re.compile(
    r"at (?P<sizes>.+?) \((?P<label>[^()]*)\)(?P<steps>, over \d+ steps)?: (?P<what>.*)"
)
_RANGE = re.compile(r"narrowed it to \[(-?\d+), (-?\d+|inf|-inf|oo)\]")
# A program the check could not make, so ran at no size (checks/shape_runs.py).
_UNMADE = re.compile(r"(?P<label>.+?) could not be made, so no size ran it: ")


@dataclasses.dataclass(frozen=True)
class AtSizes:
    """A finding at sizes: what the item saw its programs do there."""

    text: str
    sizes: dict[str, int]
    claim: str  # REFUSED, EAGER_RAISED, ACCEPTED or DIFFERS
    programs: tuple[str, ...]  # the programs the finding names


@dataclasses.dataclass(frozen=True)
class Recorded:
    """A finding about the placeholder's size at one dim: static, an expression, or a
    range narrower than the declared one."""

    text: str
    path: str
    index: int
    claim: str  # "static", "expr" or "narrowed"
    declared: tuple[int, int | None] | None = None
    exact: bool = True  # a named dim's range is compared as is; a marker's by its ends


@dataclasses.dataclass(frozen=True)
class Unmade:
    """A program the item could not make from the capture (saving it, say)."""

    text: str
    label: str


def unwritten(case: Case, findings: tuple[str, ...]) -> str | None:
    """Why no script shows the shapes findings, or None where one shows each of them."""
    if not findings:
        return "the shapes finding names no sizes to run (an xfail's is not known)"
    for finding in findings:
        parsed = parse(case, finding)
        if isinstance(parsed, str):
            return parsed
        if isinstance(parsed, AtSizes) and _by_place(case, parsed.sizes):
            return "sizing an input factory's unnamed marker (cut or repeated) is not written yet"
    return None


def unwritten_on_graph(case: Case, findings: tuple[str, ...], capture: str) -> str | None:
    """As :func:`unwritten`, for a Dynamo capture's graph: findings at sizes only (a
    Dynamo graph has no ``range_constraints`` to read a recorded range from)."""
    why = unwritten(case, findings)
    if why is not None:
        return why
    for finding in findings:
        if not isinstance(parse(case, finding), AtSizes):
            head = finding.splitlines()[0][:80]
            return f"the shapes finding {head!r} of a {capture} capture is not written yet"
    return None


def parse(case: Case, finding: str) -> AtSizes | Recorded | Unmade | str:
    """The finding as a script runs it, or why it cannot be written."""
    spec = case.dynamic
    head = finding.splitlines()[0] if finding else ""
    why = f"the shapes finding {head[:80]!r} is not written yet"
    if spec is None:
        return why
    unmade = _UNMADE.match(head)
    if unmade is not None and unmade["label"] in [_label(p) for p in case.programs]:
        return Unmade(head, unmade["label"])
    at = _AT.match(head)
    if at is not None:
        sizes = _sizes(at["sizes"], _keys(spec))
        claim = _claim(at["what"])
        if sizes is None or claim is None or at["steps"]:
            return why
        labels = [_label(p) for p in case.programs]
        named = tuple(label for label in labels if label in at["what"])
        return AtSizes(head, sizes, claim, named)
    for placement in spec.placements:
        recorded = _recorded(placement, spec, head)
        if recorded is not None:
            return recorded
    return why


def _keys(spec: DynamicSpec) -> list[str]:
    """The names a size goes by in a finding: named dims, then markers' keys."""
    keys = [*spec.named, *(p.key() for p in spec.markers())]
    return sorted(set(keys), key=len, reverse=True)


def _sizes(text: str, keys: list[str]) -> dict[str, int] | None:
    """``batch=1, args[0] dim 1=3`` → ``{"batch": 1, "args[0] dim 1": 3}``, by known keys."""
    sizes: dict[str, int] = {}
    rest = text
    while rest:
        for key in keys:
            found = re.match(re.escape(key) + r"=(-?\d+)(?:, |$)", rest)
            if found is not None:
                sizes[key] = int(found[1])
                rest = rest[found.end() :]
                break
        else:
            return None
    return sizes or None


def _claim(what: str) -> str | None:
    if what.startswith("the inputs cannot be made"):
        return None
    if " accepted a size outside the declared range " in what:
        return ACCEPTED
    if what.startswith("eager raised ") or " computed a result where eager raised " in what:
        return EAGER_RAISED
    if " refused " in what:
        return REFUSED
    return DIFFERS  # a difference of outputs, as compare_trees words it


def _label(spelling: str) -> str:
    return DEFAULT_PROGRAM_LABELS.get(spelling, spelling)


def _recorded(placement: Placement, spec: DynamicSpec, head: str) -> Recorded | None:
    marker = placement.marker
    what = f"{placement.label()} ({placement.describe()}) "
    start = f"declared dim {placement.dim} ({placement.describe()}) " if marker is None else what
    if not head.startswith(start):
        return None
    rest = head[len(start) :]
    where = {"text": head, "path": placement.path, "index": placement.index}
    if rest.startswith("was specialized to "):
        return Recorded(**where, claim="static")
    if rest.startswith("became ") and marker is None:
        return Recorded(**where, claim="expr")
    if _RANGE.search(rest) is None:
        return None
    if marker is None:
        named = spec.named.get(placement.dim)
        if named is None:
            return None
        return Recorded(**where, claim="narrowed", declared=(named.min, named.max))
    low = 2 if marker.min is None else marker.min
    return Recorded(**where, claim="narrowed", declared=(max(low, 2), marker.max), exact=False)


def _by_place(case: Case, sizes: dict[str, int]) -> bool:
    """Whether a factory's inputs would need an unnamed marker cut or repeated."""
    spec = case.dynamic
    if spec is None or "factory" not in case.inputs:
        return False
    return any(p.by_place() and p.key() in sizes for p in spec.markers())


def shapes_source(case: Case, findings: tuple[str, ...], imports: Imports) -> str:
    """``SIZED`` and ``RECORDED``: the findings as the script runs them, with a function
    drawing the case's inputs at each set of sizes."""
    spec = case.dynamic
    assert spec is not None
    parsed = [parse(case, f) for f in findings]
    functions: dict[tuple[tuple[str, int], ...], str] = {}
    sections = ["# the sizes the item ran its programs at, as its findings name them"]
    sized, recorded, unmade = [], [], []
    for entry in parsed:
        if isinstance(entry, Unmade):
            unmade.append(f"    dict(finding={entry.text!r}, program={entry.label!r}),")
        if isinstance(entry, AtSizes):
            key = tuple(entry.sizes.items())
            if key not in functions:
                functions[key] = name = f"inputs_at_{len(functions)}"
                resized = dataclasses.replace(
                    case, inputs=resized_inputs(case.inputs, spec, entry.sizes)
                )
                body = inputs_source(resized, imports)
                shown = ", ".join(f"{k}={v}" for k, v in entry.sizes.items())
                lines = [f"def {name}():", f"    # {shown!r}"]
                lines += [f"    {line}" for line in body.splitlines()]
                sections.append("\n".join(lines))
            fields = [
                f"finding={entry.text!r}",
                f"sizes={entry.sizes!r}",
                f"claim={entry.claim!r}",
                f"programs={list(entry.programs)!r}",
                f"inputs={functions[key]}",
            ]
            sized.append("    dict(" + ", ".join(fields) + "),")
        elif isinstance(entry, Recorded):
            fields = [
                f"finding={entry.text!r}",
                f"path={entry.path!r}",
                f"index={entry.index!r}",
                f"claim={entry.claim!r}",
                f"declared={entry.declared!r}",
                f"exact={entry.exact!r}",
            ]
            recorded.append("    dict(" + ", ".join(fields) + "),")
    sections.append("\n".join(["SIZED = [", *sized, "]"]))
    sections.append("\n".join(["RECORDED = [", *recorded, "]"]))
    sections.append("\n".join(["UNMADE = [", *unmade, "]"]))
    return "\n\n\n".join(sections)


# What a run at sizes shows, shared with the lowered program's (``lowered_sizes.py``).
SIZE_HELPERS = '''
def run_once(make, inputs):
    """A fresh callable's output on copies of the inputs, or what it raised: seeded,
    with autograd on, as the item runs each size."""
    args, kwargs = cloned(inputs)
    try:
        call = make()
        seed_everything(SEED)
        with torch.enable_grad():
            return detached(call(*args, **kwargs)), None
    except Exception as exc:
        return None, exc


def raised(exc):
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first[:200]}"


def shapes_of(inputs):
    leaves = pytree.tree_flatten_with_path(inputs)[0]
    return ", ".join(f"{input_path(p)} {list(t.shape)}" for p, t in leaves
                     if isinstance(t, torch.Tensor))


def eager_at(model, entry):
    """The inputs at the entry's sizes, eager's output there or what it raised, and
    what is told of them."""
    inputs = entry["inputs"]()
    if DEVICE != "cpu":  # drawn on the CPU, then moved, as the item's sizes are
        inputs = pytree.tree_map(
            lambda t: t.to(DEVICE) if isinstance(t, torch.Tensor) else t, inputs)
    eager, eager_error = run_once(lambda: copy.deepcopy(model), inputs)
    told = [f"  inputs: {shapes_of(inputs)}",
            "  eager: " + (f"raised {raised(eager_error)}" if eager_error else "computed")]
    return inputs, eager, eager_error, told


def judged(claim, eager, eager_error, got, error):
    """(shown, what): whether a program's run at the sizes shows the finding's claim."""
    if error is not None:
        return claim == "refused" and eager_error is None, f"raised {raised(error)}"
    if claim == "differs" and eager_error is None:
        message = differs(eager, got)
        what = "computed, as eager" if message is None else "differs from eager:\\n    " + (
            message.strip().replace("\\n", "\\n    "))
        return message is not None, what
    shown = claim == "accepted" or (claim == "eager raised" and eager_error is not None)
    return shown, "computed a result"
'''

SHAPES_MAIN = '''
def at_sizes(model, ep, example, entry):
    """(shown, told): whether each program the finding names does at its sizes what the
    item saw, and what each did."""
    inputs, eager, eager_error, told = eager_at(model, entry)
    programs = [(label, make) for label, make in PROGRAMS if label in entry["programs"]]
    shows = []
    for label, make in programs or PROGRAMS:
        try:
            program = make(ep, example)
        except Exception as exc:  # run at no size by the item either
            told.append(f"  {label}: could not be made: {raised(exc)}")
            shows.append(False)
            continue
        got, error = run_once(lambda: program, inputs)
        shown, what = judged(entry["claim"], eager, eager_error, got, error)
        if error is None:
            nan = [name for name, b in program.named_buffers()
                   if b.is_floating_point() and not bool(torch.isfinite(b).all())]
            what += f", and left {', '.join(nan)} NaN" if nan else ""
        told.append(f"  {label}: {what}")
        shows.append(shown)
    shown = all(shows) if programs else any(shows)
    return shown, "\\n".join(told)


def bound(value):
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return str(value).replace("oo", "inf")


def recorded(ep, example, entry):
    """(shown, told): the placeholder's size at the finding's dim, and its range."""
    from torch.export.graph_signature import InputKind

    leaves = pytree.tree_flatten_with_path(example)[0]
    names = [s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT]
    nodes = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    by_path = {input_path(p): nodes.get(name) for (p, _), name in zip(leaves, names)}
    where = f"{entry['path']} dim {entry['index']}"
    node = by_path.get(entry["path"])
    value = None if node is None else node.meta.get("val")
    if not isinstance(value, torch.Tensor) or entry["index"] >= value.dim():
        return False, f"  the program has no placeholder with {where}"
    size = value.shape[entry["index"]]
    expr = size.node.expr if isinstance(size, torch.SymInt) else None
    if expr is None or expr.is_number:
        return entry["claim"] == "static", f"  {where} is {int(size)} in placeholder {node.name}"
    if not expr.is_symbol:
        return entry["claim"] == "expr", f"  {where} is {expr} in placeholder {node.name}"
    bounds = ep.range_constraints.get(expr)
    if bounds is None:
        return False, f"  {where} is {expr}, with no range in ep.range_constraints"
    low, high = bound(bounds.lower), bound(bounds.upper)
    low = low if isinstance(low, int) else 0
    told = f"  {where} is {expr} in placeholder {node.name}; ep.range_constraints: [{low}, {high}]"
    if entry["claim"] != "narrowed":
        return False, told
    want_low, want_high = entry["declared"]
    if entry["exact"]:
        return (low, high) != (want_low, want_high), told
    cut_high = want_high is not None and isinstance(high, int) and high < want_high
    return low > want_low or cut_high, told


def main():
    model, inputs = built()
    ep = capture(model, inputs)
    found, gone = [], []
    for entry in RECORDED:
        shown, told = recorded(ep, inputs, entry)
        (found if shown else gone).append(f"{entry['finding']}\\n{told}")
    for entry in SIZED:
        shown, told = at_sizes(model, ep, inputs, entry)
        (found if shown else gone).append(f"{entry['finding']}\\n{told}")
    for entry in UNMADE:  # a program the item could not make: made here the same way
        make = dict(PROGRAMS)[entry["program"]]
        try:
            make(ep, inputs)
        except Exception as exc:
            found.append(f"{entry['finding']}\\n  {entry['program']}: raised {raised(exc)}")
        else:
            gone.append(f"{entry['finding']}\\n  {entry['program']}: made here")
    for text in gone:
        print(f"not shown in plain torch: {text}\\n")
    if found:
        print("reproduced: " + "\\n\\n".join(found))
        return 1
    print(f"not reproduced: none of the {len(gone)} shapes finding(s) shows in plain torch")
    return 0
'''
