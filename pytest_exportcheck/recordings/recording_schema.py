"""What a recording file must look like: ``recording.schema.json``, and a fast check of it.

Checked on every read, so a hand-edited entry of the wrong type is named at its
JSON path (``['2.13']['mlp']['export']: 'oops' is not of type 'object'``) instead
of surfacing later as an internal error.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

FORMAT = 1
SCHEMA = Path(__file__).with_name("recording.schema.json")


def shape_problem(data: Any) -> str | None:
    """The first way ``data`` is not a recording, at its JSON path (checked against
    ``recording.schema.json``).

    jsonschema takes about 0.3 s for a recording of thousands of placeholders, in every
    process that reads it; :func:`plainly_valid` says the same for a valid recording in
    milliseconds (a test holds the two to agree), so the schema runs only to say what
    is wrong.
    """
    if plainly_valid(data):
        return None
    import jsonschema  # deferred: only runs with recordings need it

    validator = jsonschema.Draft202012Validator(_schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is None:
        return None
    where = "".join(f"[{p!r}]" for p in error.absolute_path) or "the document"
    return f"{where}: {error.message[:200]}"


def plainly_valid(data: Any) -> bool:
    """``recording.schema.json``, written out in Python."""
    if not (
        isinstance(data, dict)
        and set(data) <= {"format", "case_file", "torch"}
        and data.get("format") == FORMAT
        and not isinstance(data.get("format"), bool)
        and isinstance(data.get("case_file"), str)
        and isinstance(data.get("torch"), dict)
    ):
        return False
    return all(
        isinstance(section, dict)
        and all(
            isinstance(captures, dict) and all(map(_plain_observation, captures.values()))
            for captures in section.values()
        )
        for section in data["torch"].values()
    )


def _plain_observation(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    if "capture" in value:
        return set(value) == {"capture"} and isinstance(value["capture"], str)
    if "placeholders" not in value or not set(value) <= _OBSERVED:
        return False
    placeholders, modules = value["placeholders"], value.get("modules")
    mutations, dims = value.get("mutations"), value.get("dims", {})
    return (
        isinstance(placeholders, list)
        and all(
            isinstance(p, list) and len(p) == 3 and all(x is None or isinstance(x, str) for x in p)
            for p in placeholders
        )
        and (modules is None or _strings(modules))
        and (
            mutations is None
            or isinstance(mutations, str)
            or (
                isinstance(mutations, dict)
                and set(mutations) <= {"buffers", "parameters", "user_inputs"}
                and all(map(_strings, mutations.values()))
            )
        )
        and isinstance(dims, dict)
        and all(isinstance(v, str) for v in dims.values())
    )


_OBSERVED = {"placeholders", "modules", "mutations", "dims"}


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


@cache
def _schema() -> dict[str, Any]:
    return dict(json.loads(SCHEMA.read_text(encoding="utf-8")))
