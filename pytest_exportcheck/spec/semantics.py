"""Rules of the case format that JSON Schema cannot say (cross-field constraints).

Each rule returns ``(message, path inside the case)`` so the error lands on the
right line. Tensor specs are checked here, at collection, rather than when the
tensor is built: an author learns about ``high`` missing before torch is loaded.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

from pytest_exportcheck.spec.case import ALL_CHECKS, DEFAULT_CAPTURES, lowered_check
from pytest_exportcheck.spec.dynamic import dynamic_problems

Problem = tuple[str, list[Any]]

FLOAT_DTYPES = {"float32", "float64", "float16", "bfloat16", "float", "double", "half"}
COMPLEX_DTYPES = {"complex64", "complex128"}
# Largest tensor a case may ask for by default (the exportcheck_max_elements ini option);
# beyond it a typo (an extra 0) would swap the machine.
MAX_TENSOR_ELEMENTS = 1 << 28


def semantic_errors(case: dict[str, Any], max_elements: int = MAX_TENSOR_ELEMENTS) -> list[Problem]:
    problems = list(_non_finite(case))
    problems += list(_xfail_scope(case))
    problems += list(_capture_options(case))
    problems += list(_program_chains(case))
    problems += list(dynamic_problems(case))
    if "shapes" in case.get("checks", ()) and "dynamic" not in case:
        problems.append(
            ("check 'shapes' needs `dynamic:` dims to hold the programs to", ["checks"])
        )
    inputs = case.get("inputs", {})
    if "factory" not in inputs:
        for index, value in enumerate(inputs.get("args", [])):
            problems.extend(_tensor_specs(value, ["inputs", "args", index], max_elements))
        for key, value in inputs.get("kwargs", {}).items():
            problems.extend(_tensor_specs(value, ["inputs", "kwargs", key], max_elements))
    return problems


def _non_finite(value: Any, path: list[Any] | None = None) -> Iterator[Problem]:
    """A setting of ``.nan`` or ``.inf`` (a time limit, a tolerance): JSON Schema's bounds
    cannot catch NaN (it compares false with every bound), and either would quietly mean
    "no limit" or "anything matches". Inputs and model arguments may hold them."""
    path = path or []
    if isinstance(value, float) and not math.isfinite(value):
        yield (f"{'.'.join(map(str, path))} is {value}: a setting must be a finite number", path)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not path and key in ("inputs", "model"):
                continue
            yield from _non_finite(item, [*path, key])
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _non_finite(item, [*path, index])


def _program_chains(case: dict[str, Any]) -> Iterator[Problem]:
    """``module`` and ``unflatten`` end a chain (they give a module, not a program)."""
    for index, chain in enumerate(case.get("programs", [])):
        steps = chain.split(">")
        ends = [step for step in steps[:-1] if step in ("module", "unflatten")]
        if ends:
            yield (
                f"program {chain!r}: {ends[0]!r} gives a module, so it can only end a chain "
                "(decompose, save, retrace and move take a program)",
                ["programs", index],
            )


def _xfail_scope(case: dict[str, Any]) -> Iterator[Problem]:
    xfails = case.get("xfail", [])
    xfails = xfails if isinstance(xfails, list) else [xfails]
    captures = case.get("captures", list(DEFAULT_CAPTURES))
    checks = case.get("checks", list(ALL_CHECKS))
    checks = [*checks, *map(lowered_check, case.get("lower", ()))]
    for index, xfail in enumerate(xfails):
        where: list[Any] = ["xfail", index] if isinstance(case.get("xfail"), list) else ["xfail"]
        for capture in xfail.get("captures", []):
            if capture not in captures:
                yield (
                    f"xfail names capture {capture!r}, which this case does not run "
                    f"(captures: {', '.join(captures)})",
                    [*where, "captures"],
                )
        for check in xfail.get("checks", []):
            # `loaded` items come from the run's --exportcheck-load-programs, not the case.
            if check not in checks and check != "loaded":
                yield (
                    f"xfail names check {check!r}, which this case does not run "
                    f"(checks: {', '.join(checks)})",
                    [*where, "checks"],
                )
        yield from _xfail_match(xfail, where)
    for index, entry in enumerate(case.get("when", [])):
        nested = entry.get("xfail", []) if isinstance(entry, dict) else []
        many = isinstance(nested, list)
        for position, xfail in enumerate(nested if many else [nested]):
            where = ["when", index, "xfail", position] if many else ["when", index, "xfail"]
            yield from _xfail_match(xfail, where)


def _xfail_match(xfail: Any, where: list[Any]) -> Iterator[Problem]:
    if not isinstance(xfail, dict) or not isinstance(xfail.get("match"), str):
        return
    try:
        re.compile(xfail["match"])
    except re.error as exc:
        yield (
            f"xfail match {xfail['match']!r} is not a regular expression: {exc}",
            [*where, "match"],
        )


def _capture_options(case: dict[str, Any]) -> Iterator[Problem]:
    """What a capture needs from the case, and per-capture keys that name a capture not run."""
    captures = case.get("captures", list(DEFAULT_CAPTURES))
    if "aot-joint" in captures and "loss_output" not in case:
        yield (
            "capture 'aot-joint' needs `loss_output`: the index of the scalar loss among the "
            "flattened model outputs (aot_export_module traces the backward of one loss)",
            ["captures"],
        )
    if "preserve_signatures" in case and not {"export", "export-strict"} & set(captures):
        yield (
            "preserve_signatures applies to the export captures (export, export-strict: "
            "torch.export.export's preserve_module_call_signature), and this case runs neither "
            f"(captures: {', '.join(captures)})",
            ["preserve_signatures"],
        )
    placeholders = case.get("expect", {}).get("placeholders")
    if isinstance(placeholders, dict):
        for capture in placeholders:
            if capture not in captures:
                yield (
                    f"expect.placeholders names capture {capture!r}, which this case does not "
                    f"run (captures: {', '.join(captures)})",
                    ["expect", "placeholders", capture],
                )


def _tensor_specs(value: Any, where: list[Any], max_elements: int) -> Iterator[Problem]:
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield from _tensor_specs(item, [*where, index], max_elements)
    elif isinstance(value, dict):
        if "shape" in value:
            yield from _tensor_spec(value, where, max_elements)
        elif "tuple" in value:
            yield from _tensor_specs(value["tuple"], [*where, "tuple"], max_elements)
        elif "dict" in value:
            for key, item in value["dict"].items():
                yield from _tensor_specs(item, [*where, "dict", key], max_elements)
        elif "data" not in value:
            for key, item in value.items():
                yield from _tensor_specs(item, [*where, key], max_elements)


# Inclusive value ranges of the integer dtypes, for randint bounds and `full` values.
INTEGER_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "uint8": (0, 2**8 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "long": (-(2**63), 2**63 - 1),
}


def _tensor_spec(spec: dict[str, Any], where: list[Any], max_elements: int) -> Iterator[Problem]:
    dtype = spec.get("dtype", "float32")
    is_float = dtype in FLOAT_DTYPES or dtype in COMPLEX_DTYPES
    init = spec.get("init", "randn" if is_float else "randint")
    numel = 1
    for size in spec["shape"]:
        numel *= size
    if numel > max_elements:
        yield (
            f"tensor of shape {spec['shape']} has {numel} elements, over the limit of "
            f"{max_elements} (the exportcheck_max_elements ini option)",
            [*where, "shape"],
        )
    if spec.get("requires_grad") and not is_float:
        yield (f"requires_grad needs a floating dtype, not {dtype!r}", [*where, "requires_grad"])
    for bound in ("low", "high"):
        value = spec.get(bound)
        if isinstance(value, float) and not math.isfinite(value):
            yield (f"`{bound}` must be finite, not {value}", [*where, bound])
            return
    if init in ("randn", "rand") and not is_float:
        yield (f"init {init!r} needs a floating dtype, not {dtype!r}", [*where, "init"])
    if init == "randint":
        yield from _randint_bounds(spec, dtype, where)
    elif "low" in spec or "high" in spec:
        if init != "rand":
            yield (f"`low`/`high` apply to init 'randint' or 'rand', not {init!r}", where)
        elif spec.get("low", 0) >= spec.get("high", 1):
            yield ("low must be below high", where)
    if init == "full" and "value" not in spec:
        yield ("init 'full' needs `value`", where)
    if init != "full" and "value" in spec:
        yield (f"`value` applies to init 'full', not {init!r}", [*where, "value"])
    if init == "full" and dtype in INTEGER_RANGES and "value" in spec:
        lowest, highest = INTEGER_RANGES[dtype]
        value = spec["value"]
        if isinstance(value, float) or not lowest <= value <= highest:
            yield (f"value {value!r} is not a {dtype} (range {lowest}..{highest})", where)


def _randint_bounds(spec: dict[str, Any], dtype: str, where: list[Any]) -> Iterator[Problem]:
    if dtype == "bool":
        if "low" in spec or "high" in spec:
            yield ("a random bool tensor takes no `low`/`high` (it draws 0 or 1)", where)
        return
    if "high" not in spec:
        yield ("init 'randint' needs `high` (exclusive upper bound)", where)
        return
    low, high = spec.get("low", 0), spec["high"]
    if isinstance(low, float) or isinstance(high, float):
        yield (f"randint bounds must be integers, not low={low!r} high={high!r}", where)
    elif low >= high:
        yield (f"low ({low}) must be below high ({high})", where)
    elif dtype in INTEGER_RANGES:
        lowest, highest = INTEGER_RANGES[dtype]
        if low < lowest or high - 1 > highest:
            yield (
                f"randint range [{low}, {high}) does not fit {dtype} ({lowest}..{highest})",
                where,
            )
