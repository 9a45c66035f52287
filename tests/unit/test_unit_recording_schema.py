"""recording_schema: the fast check and recording.schema.json say the same of every
document, so the schema (the format's documentation) is what is enforced."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_exportcheck.recordings.recording_schema import _schema, plainly_valid, shape_problem

CASES = Path(__file__).parents[2] / "cases"
VALIDATOR = jsonschema.Draft202012Validator(_schema())

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
names = st.lists(st.text(max_size=4), max_size=3)
# Each part is valid or anything at all: most documents are near misses.
placeholders = st.lists(
    st.lists(st.none() | st.text(max_size=4), min_size=3, max_size=3), max_size=3
)
mutations = (
    st.none()
    | st.text(max_size=4)
    | st.fixed_dictionaries(
        {}, optional={"buffers": names, "parameters": names, "user_inputs": names}
    )
)
observations = st.one_of(
    st.fixed_dictionaries({"capture": st.text(max_size=4) | json_values}),
    st.fixed_dictionaries(
        {"placeholders": placeholders | json_values},
        optional={
            "modules": st.none() | names | json_values,
            "mutations": mutations | json_values,
            "dims": st.dictionaries(st.text(max_size=4), st.text(max_size=4)) | json_values,
            "other": json_values,
        },
    ),
    json_values,
)
documents = st.fixed_dictionaries(
    {
        "format": st.just(1) | json_values,
        "case_file": st.text(max_size=4) | json_values,
        "torch": st.dictionaries(
            st.text(max_size=4),
            st.dictionaries(
                st.text(max_size=4), st.dictionaries(st.text(max_size=4), observations)
            ),
            max_size=2,
        ),
    },
    optional={"extra": json_values},
)


def schema_valid(document: Any) -> bool:
    return not any(VALIDATOR.iter_errors(document))


@settings(max_examples=200, deadline=None)
@given(documents)
def test_the_fast_check_agrees_with_the_schema(document: Any) -> None:
    assert plainly_valid(document) == schema_valid(document)


def test_every_bundled_recording_is_valid() -> None:
    recordings = sorted(CASES.rglob("*.recorded.json"))
    assert recordings
    for path in recordings:
        document = json.loads(path.read_text())
        assert plainly_valid(document) and schema_valid(document), path


def test_a_problem_is_named_at_its_json_path() -> None:
    document = {"format": 1, "case_file": "m.yaml", "torch": {"2.13": {"mlp": {"export": 3}}}}

    assert (
        shape_problem(document) == "['torch']['2.13']['mlp']['export']: 3 is not of type 'object'"
    )
