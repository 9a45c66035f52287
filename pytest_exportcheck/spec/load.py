"""Case file → validated :class:`Case` objects, or :class:`SpecError` at ``file:line``.

Errors are kept per case: one broken case must not hide the others of its file.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from pytest_exportcheck.spec.case import (
    ALL_CHECKS,
    DEFAULT_CAPTURES,
    DEFAULT_MUTATION_STEPS,
    DEFAULT_PARITY_STEPS,
    DEFAULT_PROGRAMS,
    LOWERED_CHECKS,
    AcceptedDifference,
    Case,
    Elsewhere,
    ExpectedPlaceholder,
    ExpectSpec,
    ModelSpec,
    ParityTolerance,
    ToleranceOverride,
    XfailSpec,
    lowered_check,
)
from pytest_exportcheck.spec.dynamic import DynamicSpec, parse_dynamic, tensor_paths
from pytest_exportcheck.spec.errors import SpecError
from pytest_exportcheck.spec.messages import boolean_keys, to_spec_error
from pytest_exportcheck.spec.requirements import requirement_problems
from pytest_exportcheck.spec.semantics import MAX_TENSOR_ELEMENTS, semantic_errors
from pytest_exportcheck.spec.shown import shorten
from pytest_exportcheck.spec.versions import (
    Unmet,
    applies,
    resolve_when,
    specifier_problems,
    unmet_conditions,
    xfail_conditions,
)
from pytest_exportcheck.spec.yaml_lines import MAX_DEPTH, LineDict, line_of, load_yaml

CASE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_CASE_NAME = 100


@dataclass(frozen=True)
class LoadedCase:
    """A case name with either its validated case or the error that stops it."""

    name: str
    line: int
    case: Case | None = None
    error: SpecError | None = None


@cache
def case_schema() -> dict[str, Any]:
    """The packaged JSON Schema of the case format (also what editors use)."""
    text = resources.files("pytest_exportcheck").joinpath("case.schema.json").read_text("utf-8")
    return json.loads(text)


@cache
def _validator() -> Any:
    import jsonschema  # deferred: only case collection needs it

    base = jsonschema.Draft202012Validator
    # JSON Schema counts 2.0 as an integer; `steps: 2.0` or `shape: [2.0]` would
    # then only fail deep inside torch. YAML distinguishes them, so do we.
    strict_integers = base.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)
    )
    return jsonschema.validators.extend(base, type_checker=strict_integers)(case_schema())


# The largest case file read at all (the exportcheck_max_case_bytes ini option).
MAX_CASE_FILE_BYTES = 4 << 20


def load_case_file(
    path: Path, max_elements: int = MAX_TENSOR_ELEMENTS, max_bytes: int = MAX_CASE_FILE_BYTES
) -> list[LoadedCase]:
    """Load and validate every case of ``path``.

    Raises :class:`SpecError` when the file as a whole is unusable (too big to read,
    YAML syntax, no ``cases`` mapping); a problem inside one case is returned with
    that case.
    """
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise SpecError(f"cannot read case file: {exc}", path) from None
    if max_bytes and size > max_bytes:
        raise SpecError(
            f"{size} bytes, over the {max_bytes} a case file may have "
            "(exportcheck_max_case_bytes): not read; a case file is a few kilobytes, "
            "so this is most likely not one (or a generated one to split)",
            path,
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot read case file: {exc}", path) from None
    try:
        document = load_yaml(text)
    except RecursionError:  # PyYAML composes nested values recursively
        raise SpecError(f"invalid YAML: values nest deeper than {MAX_DEPTH} levels", path) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        context = getattr(exc, "context", None)
        detail = f"{context}: {problem}" if context else problem
        raise SpecError(f"invalid YAML: {detail}", path, line) from None

    if not isinstance(document, LineDict):
        raise SpecError("a case file is a mapping with a top-level `cases:` key", path, 1)

    errors = list(_validator().iter_errors(document))
    file_errors = [
        e
        for e in errors
        if (len(e.absolute_path) < 2 or e.absolute_path[0] != "cases")
        # a bad case name is that case's problem, reported below at its line
        # (jsonschema reports propertyNames failures as the inner pattern/type error)
        and not _is_case_name_error(e)
    ]
    if file_errors:
        raise to_spec_error(_best(file_errors), document, path)

    cases = document["cases"]
    loaded: list[LoadedCase] = []
    for name, raw in cases.items():
        line = cases.key_lines[name]
        if not isinstance(name, str) or not CASE_NAME.fullmatch(name):
            message = (
                f"invalid case name {shorten(repr(name))}: use letters, digits and _, "
                "starting with a letter or _"
            )
            loaded.append(
                LoadedCase(str(name)[:MAX_CASE_NAME], line, error=SpecError(message, path, line))
            )
            continue
        if len(name) > MAX_CASE_NAME:
            # Its node ids, matrix rows and report lines would carry it whole.
            message = (
                f"case name {shorten(name, 40)} is {len(name)} characters long; "
                f"at most {MAX_CASE_NAME}"
            )
            # Its item is named by the name's start: the node id stays a line long.
            loaded.append(
                LoadedCase(name[:MAX_CASE_NAME], line, error=SpecError(message, path, line))
            )
            continue
        case_errors = [e for e in errors if list(e.absolute_path)[:2] == ["cases", name]]
        if case_errors:
            error = to_spec_error(_best(case_errors), document, path)
            loaded.append(LoadedCase(name, line, error=error))
            continue
        problems, resolved = _problems(raw, max_elements)
        if problems:
            message, where = problems[0]
            error = SpecError(message, path, line_of(document, ["cases", name, *where]))
            loaded.append(LoadedCase(name, line, error=error))
            continue
        case = _build_case(name, line, resolved, path, raw)
        loaded.append(LoadedCase(name, line, case=case))
    return loaded


def case_from_mapping(
    name: str, raw: dict[str, Any], path: Path, line: int, max_elements: int = MAX_TENSOR_ELEMENTS
) -> Case:
    """One case given as a mapping rather than read from a file (the Python API).

    The same steps as a file's case: the JSON Schema, ``torch:`` and
    ``requires:``, ``when:``, the cross-field rules. The first problem is
    raised as a :class:`SpecError` at ``path:line`` (where the mapping was
    written), with the message a YAML case would get.
    """
    errors = list(_case_validator().iter_errors(raw))
    if errors:
        raise SpecError(to_spec_error(_best(errors), raw, path).message, path, line)
    problems, resolved = _problems(raw, max_elements)
    if problems:
        raise SpecError(problems[0][0], path, line)
    return _build_case(name, line, resolved, path, raw)


def _problems(raw: dict[str, Any], max_elements: int) -> tuple[list[Any], dict[str, Any]]:
    """What the schema cannot say about a case, and the case as the installed torch sees it."""
    problems = [*boolean_keys(raw, []), *specifier_problems(raw), *requirement_problems(raw)]
    resolved = raw if problems else resolve_when(raw)
    return problems or semantic_errors(resolved, max_elements), resolved


@cache
def _case_validator() -> Any:
    """The validator rooted at one case (strict integers and all)."""
    validator = _validator()
    return validator.evolve(schema={"$ref": "#/$defs/case", "$defs": validator.schema["$defs"]})


def _is_case_name_error(error: Any) -> bool:
    return list(error.absolute_path) == ["cases"] and "propertyNames" in error.schema_path


def _best(errors: list[Any]) -> Any:
    import jsonschema

    return jsonschema.exceptions.best_match(errors)


def _build_case(
    name: str, line: int, raw: dict[str, Any], path: Path, written: dict[str, Any]
) -> Case:
    """The Case of ``raw`` (as this torch sees it, ``when:`` resolved); ``written`` (the
    case as written) adds what its ``torch:`` conditions give other versions."""
    conditions = xfail_conditions(written)
    model = raw["model"]
    expect = raw.get("expect", {})
    parity = expect.get("parity", {})
    xfail_raw = raw.get("xfail", [])
    xfail_list = xfail_raw if isinstance(xfail_raw, list) else [xfail_raw]
    placeholders = expect.get("placeholders")
    consistency = expect.get("consistency", {})
    return Case(
        name=name,
        path=path,
        line=line,
        description=raw["description"],
        model=ModelSpec(
            target=model["target"],
            args=list(model.get("args", [])),
            kwargs=dict(model.get("kwargs", {})),
            mode=model.get("mode", "eval"),
            init=model.get("init"),
        ),
        inputs=raw["inputs"],
        seed=raw.get("seed", 0),
        captures=tuple(raw.get("captures", DEFAULT_CAPTURES)),
        # shapes has nothing to hold a case without dynamic dims to: no item at all.
        checks=tuple(
            c
            for c in ALL_CHECKS + LOWERED_CHECKS
            if (c in raw.get("checks", ALL_CHECKS) or c in _lowered(raw))
            and (c != "shapes" or "dynamic" in raw)
        ),
        devices=tuple(raw["devices"]) if "devices" in raw else None,
        loss_output=raw.get("loss_output"),
        requires_torch=raw.get("torch"),
        requires=tuple(raw.get("requires", ())),
        load_imports=tuple(raw.get("load_imports", ())),
        programs=tuple(raw.get("programs", DEFAULT_PROGRAMS)),
        timeout=raw.get("timeout"),
        expect=ExpectSpec(
            placeholders=_placeholders(placeholders),
            placeholders_line=_key_line(expect, "placeholders"),
            modules=None if "modules" not in expect else list(expect["modules"]),
            modules_line=_key_line(expect, "modules"),
            mutated_buffers=None
            if "mutated_buffers" not in expect
            else list(expect["mutated_buffers"]),
            mutated_buffers_line=_key_line(expect, "mutated_buffers"),
            parity=ParityTolerance(
                atol=parity.get("atol"),
                rtol=parity.get("rtol"),
                steps=parity.get("steps", DEFAULT_PARITY_STEPS),
                policy=parity.get("policy", "auto"),
                max_mismatch=float(parity.get("max_mismatch", 0.0)),
                fp64_multiplier=float(parity.get("fp64_multiplier", 2.0)),
                cosine=float(parity.get("cosine", 0.99)),
                overrides=tuple(_override(o) for o in parity.get("overrides", [])),
                allow_nonfinite=bool(parity.get("allow_nonfinite", False)),
                random=bool(parity.get("random", False)),
            ),
            mutation_steps=expect.get("mutation", {}).get("steps", DEFAULT_MUTATION_STEPS),
            accepted_differences=tuple(
                AcceptedDifference(a["row"], a["reason"])
                for a in consistency.get("accept", [])
                if applies(a)
            ),
            consistency_line=_key_line(expect, "consistency"),
            mode_switches=bool(expect.get("mode", {}).get("switches", False)),
            mode_line=_key_line(expect, "mode"),
        ),
        xfails=tuple(_xfail(x, conditions.get(id(x))) for x in xfail_list if applies(x)),
        elsewhere=tuple(_elsewhere(u) for u in unmet_conditions(written)),
        dynamic=_dynamic(raw),
        preserve_signatures=tuple(raw.get("preserve_signatures", ())),
        preserve_signatures_line=_key_line(raw, "preserve_signatures"),
    )


def _lowered(raw: dict[str, Any]) -> list[str]:
    """The checks a case's ``lower:`` targets are (``lowered-aoti``, ...)."""
    return [lowered_check(target) for target in raw.get("lower", ())]


def _dynamic(raw: dict[str, Any]) -> DynamicSpec | None:
    if "dynamic" not in raw:
        return None
    spec = parse_dynamic(raw["dynamic"], _key_line(raw, "dynamic"))
    shapes = dict(tensor_paths(raw["inputs"]))  # none for a factory's or a caller's inputs
    example = {
        p.dim: shapes[p.path][p.index]
        for p in spec.placements
        if p.dim in spec.named and p.path in shapes
    }
    return dataclasses.replace(spec, example=example)


def _xfail(x: Any, torch: str | None) -> XfailSpec:
    return XfailSpec(
        reason=x["reason"],
        captures=tuple(x["captures"]) if "captures" in x else None,
        checks=tuple(x["checks"]) if "checks" in x else None,
        devices=tuple(x["devices"]) if "devices" in x else None,
        strict=x.get("strict", True),
        torch=torch,
        line=getattr(x, "line", None),
        stages=_stages(x.get("stage")),
        match=x.get("match"),
    )


def _stages(value: str | list[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    return (value,) if isinstance(value, str) else tuple(value)


def _elsewhere(unmet: Unmet) -> Elsewhere:
    value = unmet.value
    if unmet.kind == "xfail":
        return Elsewhere(unmet.torch, unmet.line, xfail=_xfail(value, unmet.torch))
    if unmet.kind == "accept":
        accept = AcceptedDifference(value["row"], value["reason"])
        return Elsewhere(unmet.torch, unmet.line, accept=accept)
    placeholders = _placeholders(value)
    return Elsewhere(
        unmet.torch, unmet.line, placeholders=placeholders, replaced_by=unmet.replaced_by
    )


# YAML accepts torch's dtype aliases; overrides compare canonical names.
_CANONICAL_DTYPES = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "long": "int64",
    "int": "int32",
}


def _override(raw: dict[str, Any]) -> ToleranceOverride:
    dtype = raw.get("dtype")
    fields = {k: v for k, v in raw.items() if k not in ("dtype", "device")}
    return ToleranceOverride(_CANONICAL_DTYPES.get(dtype, dtype), raw.get("device"), fields)


def _placeholders(raw: Any) -> Any:
    if raw is None:
        return None
    if isinstance(raw, dict):
        return {capture: _placeholders(listed) for capture, listed in raw.items()}
    return [ExpectedPlaceholder(p["name"], p["kind"], p.get("target")) for p in raw]


def _key_line(mapping: Any, key: str) -> int | None:
    return getattr(mapping, "key_lines", {}).get(key)
