"""Observations of one scaffolding run → the text of a starter case file.

Pure (no torch): the decisions about *what* to write down — one placeholder
list or one per capture, which module list the hierarchy check should compare,
which spelling of a mutated buffer the mutation check will read — are made
here from plain data, so they can be unit-tested without exporting anything.

The file is written by hand rather than by ``yaml.safe_dump``: a case is
reviewed and edited by people, so it keeps the layout of the bundled cases
(flow-style placeholder entries, anchors for repeated lists, comments next to
the expectations that need a second look).
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True)
class CaptureObservation:
    """What one capture path showed, or why it showed nothing.

    ``modules`` is ``None`` for paths without an ``ExportedProgram`` (nothing
    to unflatten); ``mutated_buffers`` is ``None`` for paths that keep no
    mutation records (the Dynamo paths) or whose records could not be read.
    """

    capture: str
    placeholders: list[dict[str, str]] | None = None
    modules: list[str] | None = None
    mutated_buffers: list[str] | None = None
    notes: tuple[str, ...] = ()
    failure: str | None = None  # the capture raised: its headline
    unavailable: str | None = None  # the installed torch lacks the path
    refused: tuple[str, ...] = ()  # the dynamic dims it refused: per dim, torch's reason and fix
    printed_lines: int = 0  # what torch printed and logged while it failed (--traceback shows)

    @property
    def observed(self) -> bool:
        return self.failure is None and self.unavailable is None


@dataclass(frozen=True)
class Amendment:
    """One entry the scaffold adds to the file, and the REVIEW comment above it."""

    entry: dict[str, Any]
    review: str
    items: tuple[str, ...] = ()  # the items it was written for


@dataclass
class Amendments:
    """Everything the verification run adds: accepts, a tolerance, xfails; and its tally."""

    accepts: list[Amendment] = field(default_factory=list)
    init: Amendment | None = None  # {"init": "fan_in"}: parity was vacuous at the default init
    atol: Amendment | None = None
    xfails: list[Amendment] = field(default_factory=list)
    tally: str = ""
    still_failing: list[str] = field(default_factory=list)  # items no amendment fixed


@dataclass(frozen=True)
class Scaffold:
    """Everything the file says: the case mapping (sans expectations) and what was seen."""

    name: str
    case: dict[str, Any]  # description, model, inputs, seed, captures, loss_output
    observations: list[CaptureObservation]
    eager_modules: list[str]
    eager_mutated_buffers: list[str]
    # For each parameter/buffer FQN, every FQN naming the same tensor (tied / shared).
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    header: list[str] = field(default_factory=list)
    target_note: str | None = None
    # Distributions the target comes from: (requirement, what was observed).
    requires: list[tuple[str, str]] = field(default_factory=list)
    amendments: Amendments = field(default_factory=Amendments)


def placeholders_expectation(
    observations: list[CaptureObservation],
) -> list[dict[str, str]] | dict[str, list[dict[str, str]]] | None:
    """One list when every capture was observed and they agree, else one list per capture.

    A single list applies to every capture of the case, so it is only written
    when it is true of all of them: a capture that failed or that this torch
    lacks gets no list (its xfail or skip says why).
    """
    seen = [o for o in observations if o.observed and o.placeholders is not None]
    if not seen:
        return None
    first = seen[0].placeholders
    if len(seen) == len(observations) and all(o.placeholders == first for o in seen):
        return first
    return {o.capture: o.placeholders for o in seen if o.placeholders is not None}


def modules_expectation(
    observations: list[CaptureObservation], eager_modules: list[str]
) -> tuple[list[str] | None, list[str]]:
    """The list the hierarchy check compares with unflatten's FQNs, and review comments.

    ``expect.modules`` is one list for every capture; it is written only when
    the export paths agree (otherwise no list satisfies them all and the
    default, eager's tree, is the honest reference). A list that differs from
    eager's tree pins a difference the hierarchy check would otherwise report:
    said in a comment, since that is exactly what a reviewer must judge.
    """
    lists = {o.capture: o.modules for o in observations if o.observed and o.modules is not None}
    if not lists:
        return None, []
    distinct = {tuple(m) for m in lists.values()}
    if len(distinct) > 1:
        comments = ["the export paths unflatten to different module lists, so none is pinned:"]
        comments += [f"  {capture}: {_flow(modules)}" for capture, modules in lists.items()]
        return None, comments
    modules = next(iter(lists.values()))
    if modules != eager_modules:
        return modules, [
            "REVIEW: differs from eager's module tree, which the hierarchy check compares by",
            f"default: {_flow(eager_modules)}",
        ]
    return modules, []


def mutated_buffers_expectation(
    observations: list[CaptureObservation],
    eager_buffers: list[str],
    aliases: dict[str, tuple[str, ...]],
) -> tuple[list[str], list[str]]:
    """What the mutation check will compare ``expect.mutated_buffers`` with, and comments.

    The check compares the list with the buffers a capture's mutation records
    name (``buffers_to_mutate``), which spell a buffer shared under two names
    once. So the recorded spelling is written when every recording capture
    agrees; eager's own set where they disagree or none records (Dynamo paths).
    A recorded set that is not eager's, alias for alias, gets a REVIEW comment.
    """
    recorded = {
        o.capture: o.mutated_buffers
        for o in observations
        if o.observed and o.mutated_buffers is not None
    }
    distinct = {tuple(v) for v in recorded.values()}
    if len(distinct) > 1:
        comments = ["REVIEW: the captures record different buffer mutations (eager's set below):"]
        comments += [f"  {capture}: {_flow(buffers)}" for capture, buffers in recorded.items()]
        return eager_buffers, comments
    if not distinct:
        return eager_buffers, []
    (chosen,) = (list(v) for v in distinct)
    if _expand(chosen, aliases) != _expand(eager_buffers, aliases):
        return chosen, [f"REVIEW: eager mutated {_flow(eager_buffers)}; the captures record this"]
    return chosen, []


def _expand(names: list[str], aliases: dict[str, tuple[str, ...]]) -> set[str]:
    return {alias for name in names for alias in aliases.get(name, (name,))}


def header_lines(target: str, argv: list[str], seed: int, yaml_dir: Path) -> list[str]:
    """The file's opening comment: how it was made, and that its expectations need review."""
    from pytest_exportcheck.spec.compat import torch_version  # metadata only, no torch import

    command = shlex.join(["python", "-m", "pytest_exportcheck", *argv])
    lines = [
        f"Generated by running {target} once on torch {torch_version()} (seed {seed}):",
        f"  {command}",
        "The expect: entries are observations of that run, not truths. Review each one",
        "(is this the mapping, module tree and buffer mutation the model should have?)",
        "before committing: a wrong observation pinned here turns an export bug into a pass.",
    ]
    # For editors, as the bundled cases have it; only inside this project's own
    # checkout (a path into an installed package would be one machine's path).
    schema = (Path(__file__).parent.parent / "case.schema.json").resolve()
    yaml_dir = yaml_dir.resolve()
    if yaml_dir.is_relative_to(schema.parent.parent) and "site-packages" not in schema.parts:
        relative = os.path.relpath(schema, yaml_dir)
        lines += ["", f"yaml-language-server: $schema={Path(relative).as_posix()}"]
    return lines


def render(scaffold: Scaffold) -> str:
    """The case file's text: header comments, then one case."""
    case = scaffold.case
    out = [f"# {line}" if line else "#" for line in scaffold.header]
    out += ["cases:", f"  {scaffold.name}:", f"    description: {_flow(case['description'])}"]
    out += _model_lines(case["model"], scaffold.target_note, scaffold.amendments.init)
    out += _inputs_lines(case["inputs"])
    out.append(f"    seed: {case['seed']}")
    out.append(f"    captures: {_flow(case['captures'])}")
    if "lower" in case:
        out.append(f"    lower: {_flow(case['lower'])}")
    if "loss_output" in case:
        out.append(f"    loss_output: {case['loss_output']}")
    if "torch" in case:
        out.append(f"    torch: {_flow(case['torch'])}")
    if "dynamic" in case:
        out += _dynamic_lines(case["dynamic"])
    if scaffold.requires:
        out += [f"    # REVIEW: {seen}" for _, seen in scaffold.requires]
        out.append(f"    requires: {_flow([req for req, _ in scaffold.requires])}")
    out += _expect_lines(scaffold)
    out += _xfail_lines(scaffold.observations, scaffold.amendments.xfails)
    return "\n".join(out) + "\n"


def _model_lines(model: dict[str, Any], note: str | None, init: Amendment | None) -> list[str]:
    target = f"      target: {_flow(model['target'])}"
    lines = ["    model:", f"{target}  # {note}" if note else target]
    for key in ("args", "kwargs"):
        if model.get(key):
            lines.append(f"      {key}: {_flow(model[key])}")
    lines.append(f"      mode: {model['mode']}")
    if init is not None:
        lines += [f"      # REVIEW: {init.review}", f"      init: {init.entry['init']}"]
    return lines


def _inputs_lines(inputs: dict[str, Any]) -> list[str]:
    if not inputs.get("args") and not inputs.get("kwargs"):
        return ["    inputs: {args: []}"]
    lines = ["    inputs:"]
    if inputs.get("args"):
        lines.append("      args:")
        lines += [f"        - {_flow(value)}" for value in inputs["args"]]
    if inputs.get("kwargs"):
        lines.append("      kwargs:")
        lines += [f"        {_flow(k)}: {_flow(v)}" for k, v in inputs["kwargs"].items()]
    return lines


def _dynamic_lines(dynamic: dict[str, Any]) -> list[str]:
    lines = ["    dynamic:"]
    if dynamic["dims"]:  # left out where every placement is a marker (auto, static, dynamic)
        lines.append("      dims:")
        lines += [f"        {name}: {_flow(spec)}" for name, spec in dynamic["dims"].items()]
    lines.append("      shapes:")
    lines += [f"        {_flow(path)}: {_flow(dims)}" for path, dims in dynamic["shapes"].items()]
    return lines


def _expect_lines(scaffold: Scaffold) -> list[str]:
    observations = scaffold.observations
    lines = ["    expect:"]
    placeholders = placeholders_expectation(observations)
    if isinstance(placeholders, list):
        lines.append("      placeholders:")
        lines += [f"        - {_flow(p)}" for p in placeholders]
    elif isinstance(placeholders, dict):
        lines.append("      placeholders:")
        rendered = {capture: _flow(listed) for capture, listed in placeholders.items()}
        repeated = Counter(rendered.values())
        anchors: dict[str, str] = {}  # a list written once, then named by its anchor
        for capture, listed in placeholders.items():
            key = rendered[capture]
            if key in anchors:
                lines.append(f"        {capture}: *{anchors[key]}")
                continue
            anchor = ""
            if repeated[key] > 1:
                anchors[key] = re.sub(r"\W", "_", f"{scaffold.name}_{capture}")
                anchor = f" &{anchors[key]}"
            lines.append(f"        {capture}:{anchor}")
            lines += [f"          - {_flow(p)}" for p in listed]
    modules, comments = modules_expectation(observations, scaffold.eager_modules)
    lines += [f"      # {c}" for c in comments]
    if modules is not None:
        lines.append(f"      modules: {_flow(modules)}")
    buffers, comments = mutated_buffers_expectation(
        observations, scaffold.eager_mutated_buffers, scaffold.aliases
    )
    lines += [f"      # {c}" for c in comments]
    lines.append(f"      mutated_buffers: {_flow(buffers)}")
    notes = [n for o in observations for n in o.notes]
    lines += [f"      # note: {n}" for n in notes]
    amendments = scaffold.amendments
    if amendments.atol is not None:
        lines += ["      parity:", f"        # REVIEW: {amendments.atol.review}"]
        lines.append(f"        atol: {_flow(amendments.atol.entry['atol'])}")
    if amendments.accepts:
        lines += ["      consistency:", "        accept:"]
        for accept in amendments.accepts:
            lines += [f"          # REVIEW: {accept.review}", f"          - {_flow(accept.entry)}"]
    return lines


def _xfail_lines(observations: list[CaptureObservation], written: list[Amendment]) -> list[str]:
    failed = [o for o in observations if o.failure is not None]
    if not failed and not written:
        return []
    lines = ["    xfail:"]
    for o in failed:
        entry = {"reason": f"scaffold: {_failure_reason(o)}", "captures": [o.capture]}
        if o.failure.startswith("[capture"):  # not a [timeout]: no xfail stage says that
            entry["stage"] = "capture"
            match = match_pattern(o.failure.splitlines()[0])
            if match:
                entry["match"] = match
        lines.append(f"      - {_flow(entry)}")
    for xfail in written:
        lines += [f"      # REVIEW: {xfail.review}", f"      - {_flow(xfail.entry)}"]
    return lines


def match_pattern(headline: str) -> str | None:
    """A regex for the failure's stable words: the longest run of words in the headline
    (after its ``[stage]``) holding no digit, quote or bracket — sizes, counts, values
    and names vary with the model and the torch version; the wording does not.

    ``after step 2/3: output: 8 / 8 elements outside tolerance (atol=1e-05`` →
    ``elements outside tolerance``.
    """
    text = re.sub(r"^\[[^\]]*\]\s*", "", headline)
    runs: list[list[str]] = [[]]
    for word in text.split()[:40]:
        if re.search(r"[\d'\"`()\[\]{}=/]", word):
            runs.append([])
        else:
            runs[-1].append(word.strip(":;,."))
            if word[-1] in ":;,.":  # a clause ends: the regex should not span it
                runs.append([])
    best = " ".join(max(runs, key=lambda r: len(" ".join(r)))[:8])
    return re.escape(best).replace("\\ ", " ") if len(best) >= 8 else None


def _failure_reason(observation: CaptureObservation) -> str:
    """The capture's headline; for refused dynamic dims, torch's reason and fix per dim
    (``[capture: constraint violation] src_len: ...; torch suggests src_len = 7 | ...``),
    the words a reader of the case needs, on one line."""
    assert observation.failure is not None
    if not observation.refused:
        return _clip(observation.failure)
    stage = re.match(r"^\[[^\]]*\]", observation.failure)
    dims = [_clip(line, 200) for line in observation.refused[:3]]
    if len(observation.refused) > 3:
        dims.append(f"(+{len(observation.refused) - 3} more dims)")
    return " ".join([*([stage[0]] if stage else []), " | ".join(dims)])


def _clip(text: str, limit: int = 200) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "(no message)"
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _flow(value: Any, *, nested: bool = False) -> str:
    """``value`` as one line of flow-style YAML that PyYAML reads back as ``value``.

    Built item by item so a string with a quote reads as the bundled cases write
    it (``"kwargs['mask']"``, not PyYAML's ``'kwargs[''mask'']'``). Scalars are
    dumped in the context they land in: a flow collection needs more quoting
    (``'a:b'``) than a block value (``target: m.py:Net``).
    """
    if isinstance(value, dict):
        items = (f"{_flow(k, nested=True)}: {_flow(v, nested=True)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_flow(v, nested=True) for v in value) + "]"
    dump = {"width": 1 << 30, "allow_unicode": True}
    if nested:
        text = yaml.safe_dump([value], default_flow_style=True, **dump).strip()[1:-1]
    else:  # a lone scalar is dumped as a document of its own: "abc\n..." (end marker)
        text = yaml.safe_dump(value, **dump).strip().removesuffix("\n...").strip()
    if isinstance(value, str) and ("\n" in text or (text.startswith("'") and "''" in text)):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML one
    return text
