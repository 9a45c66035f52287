"""``dynamic:``: what a case may declare, and each rule's error at its file:line."""

from __future__ import annotations

import pytest
from speckit import case_error, line_with, load, one_case

from pytest_exportcheck.checks.shapes import checked_sizes
from pytest_exportcheck.spec.dynamic import (
    DerivedDim,
    Marker,
    NamedDim,
    Placement,
    parse_dynamic,
    resized_inputs,
)

INPUTS = "args:\n        - {shape: [2, 5, 8]}\n        - {shape: [2, 5]}"


def dynamic_case(body: str, inputs: str = INPUTS) -> str:
    return one_case("    dynamic:\n" + body, inputs=inputs)


VALID = """      dims:
        batch: {min: 1, max: 16}
        seq: {min: 2, max: 32}
        seq2: {expr: 2*seq}
      shapes:
        args[0]: {0: batch, 1: seq, 2: static}
        args[1]: {0: batch, 1: seq}
      sizes: [{batch: 3, seq: 7}]
"""


def test_a_valid_declaration_loads_with_its_example_sizes(tmp_path) -> None:
    (loaded,) = load(tmp_path, dynamic_case(VALID))
    assert loaded.error is None, loaded.error
    spec = loaded.case.dynamic
    assert spec.named == {"batch": NamedDim("batch", 1, 16), "seq": NamedDim("seq", 2, 32)}
    assert spec.derived == {"seq2": DerivedDim("seq2", "seq", 2, 0)}
    assert Placement("args[0]", 2, "static", Marker("static")) in spec.placements
    assert spec.example == {"batch": 2, "seq": 5}
    assert spec.sizes == ({"batch": 3, "seq": 7},)
    assert spec.line == line_with(dynamic_case(VALID), "dynamic:")
    assert "shapes" in loaded.case.checks


def test_derived_dims_parse_scale_and_offset() -> None:
    raw = {"dims": {"s": {"min": 1, "max": 4}, "d": {"expr": "3 * s - 1"}}, "shapes": {}}
    derived = parse_dynamic(raw).derived["d"]
    assert (derived.base, derived.scale, derived.offset, derived.value(4)) == ("s", 3, -1, 11)
    assert derived.describe() == "d = 3*s - 1"


@pytest.mark.parametrize(
    ("body", "needle", "message"),
    [
        ("      dims: {batch: {min: 8, max: 2}}\n      shapes:\n        args[0]: {0: batch}\n",
         "batch: {min: 8", "dim 'batch': min 8 is above max 2"),
        ("      dims: {batch: {min: 1, max: 4}}\n      shapes:\n        args[0]: {0: bach}\n",
         "0: bach", "args[0] dim 0: unknown dim 'bach' (did you mean 'batch'?) (dims: batch; "
         "or auto, static, dynamic)"),
        ("      dims: {batch: {min: 1, max: 4}}\n      shapes:\n        args[2]: {0: batch}\n",
         "args[2]", "'args[2]' is not a tensor input of this case (did you mean 'args[1]'?) "
         "(tensor inputs: args[0], args[1])"),
        ("      dims: {batch: {min: 1, max: 4}}\n      shapes:\n        args[1]: {2: batch}\n",
         "2: batch", "args[1] has 2 dimension(s) (shape [2, 5]): no dim 2"),
        ("      dims: {batch: {min: 4, max: 8}}\n      shapes:\n        args[0]: {0: batch}\n",
         "0: batch", "args[0] dim 0 is 2 in the example input, outside batch's declared range "
         "[4, 8]"),
        ("      dims: {d: {expr: 2*seq}}\n      shapes:\n        args[0]: {0: d}\n",
         "expr: 2*seq", "derived dim 'd' is of 'seq', which is not a named dim (named: none)"),
        ("      dims: {seq: {min: 1, max: 9}, d: {expr: 2*seq}}\n      shapes:\n"
         "        args[0]: {1: seq, 2: d}\n",
         "2: d", "args[0] dim 2 is 8 in the example input, but d = 2*seq is 10 there"),
        ("      dims: {batch: {min: 1, max: 9}}\n      shapes:\n"
         "        args[0]: {0: batch, 1: batch}\n",
         "1: batch", "batch is 5 at args[0] dim 1 but 2 at args[0] dim 0 in the example inputs"),
        ("      dims: {batch: {min: 1, max: 9}}\n      shapes:\n        args[0]: {0: batch}\n"
         "      sizes: [{batch: 12}]\n",
         "sizes:", "sizes[0]: batch = 12 is outside its declared range [1, 9]"),
        ("      dims: {batch: {min: 1, max: 9}}\n      shapes:\n        args[0]: {0: batch}\n"
         "      sizes: [{bacth: 3}]\n",
         "sizes:", "sizes[0] names 'bacth', not a named dim or marker (did you mean 'batch'?)"),
        ("      dims: {auto: {min: 1, max: 9}}\n      shapes:\n        args[0]: {0: auto}\n",
         "auto: {min", "dynamic.dims"),
        ("      dims: {batch: {min: 1, max: 9}}\n      shapes:\n        args[0]: {0: batch}\n"
         "      size: []\n",
         "size: []", "unknown key 'size' in cases.a.dynamic (did you mean 'sizes'?)"),
    ],
)  # fmt: skip
def test_each_rule_names_the_problem_at_its_line(
    tmp_path, body: str, needle: str, message: str
) -> None:
    text = dynamic_case(body)
    error = case_error(tmp_path, text)
    assert message in error.message
    assert error.line == line_with(text, needle)


def test_shapes_without_dynamic_is_an_error(tmp_path) -> None:
    error = case_error(tmp_path, one_case("    checks: [shapes]\n"))
    assert error.message == "check 'shapes' needs `dynamic:` dims to hold the programs to"


def test_factory_inputs_are_checked_when_built_not_at_collection(tmp_path) -> None:
    body = "      dims: {batch: {min: 1, max: 4}}\n      shapes:\n        args[5]: {0: batch}\n"
    (loaded,) = load(tmp_path, dynamic_case(body, inputs="factory: 'models.py:make'"))
    assert loaded.error is None and loaded.case.dynamic.example == {}


def test_resized_inputs_follow_named_and_derived_dims() -> None:
    raw = {
        "dims": {"b": {"min": 1, "max": 8}, "s": {"min": 1, "max": 8}, "d": {"expr": "2*s"}},
        "shapes": {"args[0]": {"0": "b", "1": "d"}, "kwargs['m']": {"0": "b"}},
    }
    inputs = {
        "args": [{"shape": [2, 6], "dtype": "float32"}],
        "kwargs": {"m": {"shape": [2, 4], "dtype": "bool"}},
    }
    resized = resized_inputs(inputs, parse_dynamic(raw), {"b": 5, "s": 4})
    assert resized["args"][0] == {"shape": [5, 8], "dtype": "float32"}
    assert resized["kwargs"]["m"]["shape"] == [5, 4]
    assert inputs["args"][0]["shape"] == [2, 6]  # the case's own spec is not touched


def test_the_checked_sizes_say_when_max_was_shrunk(tmp_path) -> None:
    body = "      dims:\n        seq: {min: 2, max: 4000000}\n      shapes:\n        args[0]: {1: seq}\n"
    (loaded,) = load(tmp_path, dynamic_case(body, inputs="args:\n        - {shape: [2, 5, 8]}"))
    labels = dict(checked_sizes(loaded.case, loaded.case.dynamic))
    (label,) = [name for name in labels if name.startswith("max")]
    assert label == "max, shrunk to 2^20 elements per input"
    assert 2 * labels[label]["seq"] * 8 <= 1 << 20
    assert labels["min"] == {"seq": 2} and labels["example"] == {"seq": 5}


MARKERS_ONLY = """      shapes:
        args[0]: {0: {dynamic: {min: 1, max: 64, name: rows}}, 1: auto}
        args[1]: {0: {auto: {max: 8}}}
      sizes: [{rows: 7}]
"""


def test_a_case_of_markers_only_loads_with_their_ranges_and_names(tmp_path) -> None:
    # No dims: every placement is a marker. A marker takes a range and a name sizes: uses.
    (loaded,) = load(tmp_path, dynamic_case(MARKERS_ONLY))
    assert loaded.error is None, loaded.error
    spec = loaded.case.dynamic
    assert spec.named == {} and spec.sizes == ({"rows": 7},)
    rows, auto, ranged = spec.placements
    assert rows == Placement("args[0]", 0, "dynamic", Marker("dynamic", 1, 64, "rows"))
    assert (rows.key(), rows.label()) == ("rows", "rows (dynamic)")
    assert auto.marker == Marker("auto") and auto.key() == "args[0] dim 1"
    assert ranged.marker.describe() == "Dim.AUTO(max=8)"
    resized = resized_inputs(loaded.case.inputs, spec, {"rows": 5})
    assert [a["shape"] for a in resized["args"]] == [[5, 5, 8], [2, 5]]


def test_a_ranged_marker_reaches_torch_as_a_ranged_hint() -> None:
    import torch

    from pytest_exportcheck.capture.dynamic_shapes import dynamic_shapes

    raw = {"shapes": {"args[0]": {"0": {"dynamic": {"min": 1, "max": 64}}, "1": "auto"}}}

    class M(torch.nn.Module):
        def forward(self, x):
            return x

    shapes = dynamic_shapes(parse_dynamic(raw), M(), (torch.ones(2, 3),), {})
    assert shapes["x"][0] == torch.export.Dim.DYNAMIC(min=1, max=64)
    assert shapes["x"][1] is torch.export.Dim.AUTO


@pytest.mark.parametrize(
    ("body", "needle", "message"),
    [
        ("      shapes:\n        args[0]: {0: {dynamic: {min: 9, max: 4}}}\n",
         "min: 9", "args[0] dim 0: dynamic min 9 is above max 4"),
        ("      shapes:\n        args[0]: {0: {dynamic: {min: 3, max: 4}}}\n",
         "min: 3", "args[0] dim 0 is 2 in the example input, outside Dim.DYNAMIC(min=3, max=4)'s "
         "range [3, 4]"),
        ("      dims: {rows: {min: 1, max: 4}}\n      shapes:\n"
         "        args[0]: {0: {auto: {name: rows}}}\n",
         "name: rows", "args[0] dim 0: marker name 'rows' is also a dim under dims:"),
        ("      shapes:\n        args[0]: {0: {auto: {max: 4, name: rows}}}\n"
         "      sizes: [{rows: 9}]\n",
         "sizes:", "sizes[0]: rows = 9 is outside its declared range [None, 4]"),
        ("      shapes:\n        args[0]: {0: {auto: {name: rows}}}\n      sizes: [{row: 3}]\n",
         "sizes:", "sizes[0] names 'row', not a named dim or marker (did you mean 'rows'?)"),
        ("      shapes:\n        args[0]: {0: {sometimes: {}}}\n",
         "sometimes", "dynamic.shapes"),
    ],
)  # fmt: skip
def test_each_marker_rule_names_the_problem_at_its_line(
    tmp_path, body: str, needle: str, message: str
) -> None:
    text = dynamic_case(body)
    error = case_error(tmp_path, text)
    assert message in error.message
    assert error.line == line_with(text, needle)


def test_a_scaffolded_case_of_markers_only_writes_no_empty_dims(tmp_path) -> None:
    # `--dynamic 'args[0]:0=auto'` alone: an empty `dims:` would be null, which the schema refuses.
    from pytest_exportcheck.scaffold.render import _dynamic_lines

    lines = _dynamic_lines({"dims": {}, "shapes": {"args[0]": {0: "auto"}}})
    assert lines == ["    dynamic:", "      shapes:", "        args[0]: {0: auto}"]
    text = one_case("\n".join(lines) + "\n", inputs=INPUTS)
    (loaded,) = load(tmp_path, text)
    assert loaded.error is None, loaded.error
