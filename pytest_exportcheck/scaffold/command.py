"""The ``new`` command: its arguments, and the run from target to written case.

See the package docstring for what the scaffold does and its exit statuses.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

import yaml

from pytest_exportcheck.scaffold.errors import ScaffoldError, condense
from pytest_exportcheck.scaffold.inputs import (
    DYNAMIC_HELP,
    INPUT_HELP,
    InputSpecError,
    dynamic_mapping,
    parse_dynamic_spec,
    parse_input_spec,
    parse_kwarg_spec,
    snake_case,
    split_target,
    target_reference,
)
from pytest_exportcheck.scaffold.render import (
    Amendments,
    CaptureObservation,
    Scaffold,
    header_lines,
    render,
)
from pytest_exportcheck.scaffold.requires import requirements
from pytest_exportcheck.spec.case import DEFAULT_CAPTURES, LOWERING_TARGETS, Case
from pytest_exportcheck.spec.load import case_schema, load_case_file


def capture_names() -> list[str]:
    return list(case_schema()["$defs"]["captureName"]["enum"])


def _json_arg(kind: type) -> Any:
    def parse(text: str) -> Any:
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None
        if not isinstance(value, kind):
            raise argparse.ArgumentTypeError(f"expected a JSON {kind.__name__}, got {text!r}")
        return value

    return parse


def _arg(parse: Any) -> Any:
    def wrapped(text: str) -> Any:
        try:
            return parse(text)
        except InputSpecError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return wrapped


def _seconds(text: str) -> float:
    """--timeout as the plugin's own option takes it: finite, 0 (none) to a day."""
    from pytest_exportcheck.containment.stages import MAX_TIMEOUT_SECONDS

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not 0 <= value <= MAX_TIMEOUT_SECONDS:
        raise argparse.ArgumentTypeError(
            f"{text!r}: a number of seconds from 0 (no limit) to {MAX_TIMEOUT_SECONDS}"
        )
    return value


def _seed(text: str) -> int:
    """--seed as a case's ``seed:`` takes it: 0 to 2**32 - 1."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number from 0 to {2**32 - 1}")
    return value


# fmt: off
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", help="the model: pkg.mod:Attr or path/to/file.py:Attr")
    add = parser.add_argument
    add("--input", action="append", default=[], type=_arg(parse_input_spec),
        metavar="SPEC", help=f"a positional forward argument, in order; {INPUT_HELP}")
    add("--kwarg", action="append", default=[], type=_arg(parse_kwarg_spec),
        metavar="NAME=SPEC", help="a keyword forward argument (SPEC as for --input)")
    add("--dynamic", action="append", default=[], type=_arg(parse_dynamic_spec),
        metavar="PLACEMENT", help=f"a dynamic dim, repeatable: {DYNAMIC_HELP}")
    add("--name", help="case name (default: snake_case of the target's attribute)")
    add("--description", help="the case's one-line description")
    add("--capture", action="append", choices=capture_names(), metavar="PATH",
        help=f"capture path, repeatable: {', '.join(capture_names())} (default: export)")
    add("--lower", action="append", choices=LOWERING_TARGETS, metavar="TARGET",
        help=f"lowering target, repeatable: {', '.join(LOWERING_TARGETS)} (compiles C++: "
        "seconds to minutes; written as the case's lower:)")
    add("--mode", choices=("eval", "train"), default="eval")
    add("--seed", type=_seed, default=0)
    add("--model-args", type=_json_arg(list), default=[], metavar="JSON",
        help="positional constructor arguments, a JSON list")
    add("--model-kwargs", type=_json_arg(dict), default={}, metavar="JSON",
        help='constructor keyword arguments, a JSON object ({"_target_": ...} builds objects; '
        "file targets relative to the current directory, like TARGET)")
    add("--torch", metavar="SPEC",
        help='run the case only on a torch satisfying SPEC (">=2.10"): the pins written are '
        "this torch's observations, and older minors may name or order placeholders otherwise")
    add("--loss-output", type=int, metavar="N",
        help="aot-joint: index of the scalar loss among the flattened outputs")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("-o", "--output", type=Path, metavar="FILE",
                       help="write the case here (atomically) instead of to stdout")
    where.add_argument("--out-dir", type=Path, metavar="DIR",
                       help="with stdout: the directory the YAML will be saved in "
                       "(file targets are made relative to it; default: the current one)")
    add("--timeout", type=_seconds, default=600.0, metavar="SECONDS",
        help="time limit for building and eager, and for each capture (0: none; default 600)")
    add("--force", action="store_true", help="with -o: overwrite an existing file")
    add("--traceback", action="store_true",
        help="print the whole failure message and its traceback")
    add("--no-run", dest="run", action="store_false",
        help="do not run the written case through the checks (nor amend it: no accepts, "
        "tolerance or xfails are added)")
# fmt: on


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """The ``new`` command: status 0 written, 1 written but nothing captured, 2 not written."""
    if args.output is not None and args.output.is_dir():
        print(f"exportcheck new: {args.output} is a directory; -o names a file", file=sys.stderr)
        return 2
    if args.output is not None and args.output.exists() and not args.force:
        print(
            f"exportcheck new: {args.output} exists; pass --force to overwrite it",
            file=sys.stderr,
        )
        return 2
    try:
        text, warnings, notes, status = scaffold(args, argv)
    except ScaffoldError as exc:
        print(exc.render(full=args.traceback), file=sys.stderr)
        if args.traceback and exc.__cause__ is not None:
            traceback.print_exception(exc.__cause__, file=sys.stderr)
        elif exc.__cause__ is not None:
            print("(run with --traceback for the whole message and traceback)", file=sys.stderr)
        return 2
    for message, advice in warnings:
        shown = message if args.traceback else condense(message)
        print(f"exportcheck new: warning: {shown}\n  {advice}", file=sys.stderr)
    for note in notes:
        print(f"exportcheck new: {note}", file=sys.stderr)
    if args.output is not None:
        from pytest_exportcheck.recordings.atomic import write_atomically

        write_atomically(args.output, text)
        print(
            f"exportcheck new: wrote {args.output}; next: review it, then "
            f"pytest --exportcheck {args.output}",
            file=sys.stderr,
        )
    else:
        sys.stdout.write(text)
    return status


def scaffold(
    args: argparse.Namespace, argv: list[str]
) -> tuple[str, list[tuple[str, str]], list[str], int]:
    """Build, run and capture the model, then run the case written; its text, warnings
    (with advice), notes and the exit status."""
    cwd = Path.cwd()
    try:
        _, attr = split_target(args.target)
    except InputSpecError as exc:
        raise ScaffoldError("case", str(exc)) from None
    name = args.name or snake_case(attr.rpartition(".")[2])
    yaml_path = args.output or (args.out_dir or cwd) / f"{name}.yaml"
    reference = target_reference(args.target, yaml_path.parent, cwd)
    mapping = case_mapping(args, reference, attr, yaml_path.parent)
    case = load_case(name, mapping, yaml_path.absolute())

    from pytest_exportcheck.scaffold.observe import observe  # torch: only once a run starts

    observations, eager = observe(case, args.traceback, args.timeout)
    warnings = [why for o in observations for why in _warning(o)]
    header = header_lines(args.target, argv, case.seed, yaml_path.parent)
    note = None
    if args.output is None and args.out_dir is None and split_target(reference)[0].endswith(".py"):
        note = "relative to the current directory: save this file there (or use -o/--out-dir)"
    requires = requirements(mapping["model"])

    def render_with(amendments: Amendments) -> str:
        return render(
            Scaffold(
                name, mapping, observations, *eager, header=header, target_note=note,
                requires=requires, amendments=amendments,
            )
        )  # fmt: skip

    text = render_with(Amendments())
    _verify(text, name, yaml_path)
    status = 0 if any(o.observed for o in observations) else 1
    notes: list[str] = []
    if args.run and status == 0:
        from pytest_exportcheck.scaffold.verify import verify  # the checks: torch

        text, amendments = verify(
            render_with, lambda written: _verify(written, name, yaml_path), args.timeout,
            quiet=not args.traceback,
        )  # fmt: skip
        notes.append(amendments.tally)
        if amendments.still_failing:
            warnings.append(
                (
                    f"the written case still fails {', '.join(amendments.still_failing)}",
                    "Run pytest --exportcheck on it to see why; the scaffold could not amend it.",
                )
            )
    return text, warnings, notes, status


def case_mapping(
    args: argparse.Namespace, reference: str, attr: str, yaml_dir: Path
) -> dict[str, Any]:
    """The case as the YAML will say it, before any expectation."""
    model: dict[str, Any] = {"target": reference, "mode": args.mode}
    if args.model_args:
        model["args"] = _relocate(args.model_args, yaml_dir)
    if args.model_kwargs:
        model["kwargs"] = _relocate(args.model_kwargs, yaml_dir)
    inputs: dict[str, Any] = {"args": list(args.input)}
    if args.kwarg:
        inputs["kwargs"] = dict(args.kwarg)
    mapping: dict[str, Any] = {
        "description": args.description or f"{attr} (scaffolded; say what this case exercises)",
        "model": model,
        "inputs": inputs,
        "seed": args.seed,
        "captures": list(dict.fromkeys(args.capture or DEFAULT_CAPTURES)),
    }
    if args.lower:
        mapping["lower"] = list(dict.fromkeys(args.lower))
    if args.loss_output is not None:
        mapping["loss_output"] = args.loss_output
    if args.torch:
        mapping["torch"] = args.torch
    if args.dynamic:
        try:
            mapping["dynamic"] = dynamic_mapping(args.dynamic)
        except InputSpecError as exc:
            raise ScaffoldError("case", str(exc)) from None
    return mapping


def _relocate(value: Any, yaml_dir: Path) -> Any:
    """Nested ``_target_`` file paths, like TARGET, are given relative to the current directory."""
    if isinstance(value, list):
        return [_relocate(v, yaml_dir) for v in value]
    if not isinstance(value, dict):
        return value
    moved = {k: _relocate(v, yaml_dir) for k, v in value.items()}
    target = value.get("_target_")
    if isinstance(target, str) and ":" in target:
        moved["_target_"] = target_reference(target, yaml_dir, Path.cwd())
    return moved


def load_case(name: str, mapping: dict[str, Any], yaml_path: Path) -> Case:
    """Validate ``mapping`` with the loader that collects cases, as if saved at ``yaml_path``.

    The loader reads files, so the mapping goes through a temporary one; the
    case is then placed where it will live, which is what relative file
    targets resolve against.
    """
    text = yaml.safe_dump({"cases": {name: mapping}}, sort_keys=False)
    (loaded,) = _load_text(text)
    if loaded.error is not None:
        raise ScaffoldError("case", f"the case would be invalid: {loaded.error.message}")
    assert loaded.case is not None
    return dataclasses.replace(loaded.case, path=yaml_path)


def _load_text(text: str) -> list[Any]:
    with tempfile.TemporaryDirectory(prefix="exportcheck-new-") as tmp:
        path = Path(tmp) / "case.yaml"
        path.write_text(text, encoding="utf-8")
        return load_case_file(path)


def _verify(text: str, name: str, yaml_path: Path) -> Case:
    """The emitted file must load as it is: a scaffold that writes an invalid case is a bug.

    The case it loads is placed at ``yaml_path``, where relative targets resolve.
    """
    try:
        loaded = _load_text(text)
    except Exception as exc:
        raise ScaffoldError("internal", f"the generated YAML does not load: {exc}") from exc
    problems = [c.error.message for c in loaded if c.error is not None]
    if problems or [c.name for c in loaded] != [name]:
        raise ScaffoldError(
            "internal", f"the generated case for {yaml_path} is invalid: {'; '.join(problems)}"
        )
    assert loaded[0].case is not None
    return dataclasses.replace(loaded[0].case, path=yaml_path.absolute())


def _warning(observation: CaptureObservation) -> list[tuple[str, str]]:
    """(what happened, what the file does about it) for a capture that was not observed."""
    if observation.failure is not None:
        advice = (
            f"The case lists {observation.capture} with an xfail (reason 'scaffold: ...') and "
            "no expectations for it: fix the model, or keep the xfail as a record of the failure."
        )
        if observation.printed_lines:  # torch's log and prints: kept from the terminal
            advice += (
                f"\n  (torch printed or logged {observation.printed_lines} lines while capturing "
                f"{observation.capture}; --traceback shows them)"
            )
        return [(observation.failure, advice)]
    if observation.unavailable is not None:
        advice = "Its items will skip here; its expectations are left out."
        return [(f"{observation.capture} not observed: {observation.unavailable}", advice)]
    return []
