"""Problems in a case file, as messages its author can act on at the right line.

A jsonschema error becomes "unknown key 'x' in cases.m.inputs (did you mean ...?)";
a key YAML 1.1 read as a boolean (``on:``) is named before it reaches forward; user
text in either is capped (``shown.py``).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from pytest_exportcheck.spec.errors import SpecError
from pytest_exportcheck.spec.shown import shorten
from pytest_exportcheck.spec.yaml_lines import line_of


def to_spec_error(error: Any, document: Any, path: Path) -> SpecError:
    """Turn a jsonschema error into a message a case author can act on."""
    where = list(error.absolute_path)
    dotted = render_path(where)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = sorted(error.schema.get("properties", {}))
        unknown = [k for k in error.instance if k not in known]
        if unknown:
            key = unknown[0]
            hint = difflib.get_close_matches(str(key), known, n=1)
            did_you_mean = f" (did you mean {hint[0]!r}?)" if hint else ""
            message = (
                f"unknown key {shorten(repr(key))} in {shorten(dotted)}{did_you_mean}; "
                f"allowed: {', '.join(known)}"
            )
            return SpecError(message, path, line_of(document, [*where, key]))
    if error.validator == "enum":
        allowed = ", ".join(str(v) for v in error.validator_value)
        message = f"{shorten(dotted)}: {shorten(repr(error.instance))} is not one of: {allowed}"
        return SpecError(message, path, line_of(document, where))
    message = f"{shorten(dotted)}: {shorten(error.message, 300)}"
    if error.validator == "type" and _reads_as_float(error.instance):
        message += (
            f" (YAML 1.1 reads {error.instance} as a string: a float needs a dot and a signed "
            "exponent, e.g. 1.0e-5)"
        )
    return SpecError(message, path, line_of(document, where))


def _reads_as_float(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        float(value)
    except ValueError:
        return False
    return True


def render_path(where: list[Any]) -> str:
    """``['cases', 'lm', 'inputs', 'args', 0]`` → ``cases.lm.inputs.args[0]``."""
    rendered = ""
    for step in where:
        rendered += f"[{step}]" if isinstance(step, int) else f".{step}"
    return rendered.lstrip(".") or "<top level>"


def boolean_keys(value: Any, where: list[Any]) -> list[tuple[str, list[Any]]]:
    """Keys YAML 1.1 read as booleans: ``kwargs: {on: 1}`` reached forward as
    ``**{True: 1}``, and its TypeError was blamed on the model."""
    found: list[tuple[str, list[Any]]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, bool):
                found.append(
                    (
                        f"{render_path(where) if where else 'the case'}: a key here reads as "
                        f"{key}: YAML 1.1 reads unquoted on/off/yes/no/true/false as "
                        "booleans; quote it ('on': ...)",
                        [*where, key],
                    )
                )
            found += boolean_keys(item, [*where, key])
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += boolean_keys(item, [*where, index])
    return found
