"""The line-tracking safe YAML loader: every key and item knows its 1-based line."""

import textwrap
from pathlib import Path

import pytest
import yaml

from pytest_exportcheck.spec import yaml_lines
from pytest_exportcheck.spec.yaml_lines import (
    DuplicateKeyError,
    LineDict,
    LineList,
    LineLoader,
    line_of,
    load_yaml,
)


def load(text):
    return load_yaml(textwrap.dedent(text).lstrip("\n"))


DOCUMENT = """
cases:
  first:
    description: one
    inputs:
      args:
        - 1
        - {shape: [2, 3]}
  second:
    description: two
"""


def test_mappings_are_line_dicts_and_sequences_are_line_lists():
    document = load(DOCUMENT)

    assert isinstance(document, LineDict)
    assert isinstance(document["cases"]["first"], LineDict)
    assert isinstance(document["cases"]["first"]["inputs"]["args"], LineList)


def test_loaded_values_equal_plain_safe_load():
    text = textwrap.dedent(DOCUMENT).lstrip("\n")

    assert load_yaml(text) == yaml.safe_load(text)


def test_each_key_knows_its_line():
    document = load(DOCUMENT)

    assert document.key_lines == {"cases": 1}
    assert document["cases"].key_lines == {"first": 2, "second": 8}
    assert document["cases"]["first"].key_lines == {"description": 3, "inputs": 4}


def test_a_mapping_knows_the_line_it_starts_on():
    document = load(DOCUMENT)

    assert document.line == 1
    assert document["cases"]["first"].line == 3


def test_each_sequence_item_knows_its_line():
    args = load(DOCUMENT)["cases"]["first"]["inputs"]["args"]

    assert args.line == 6
    assert args.item_lines == [6, 7]


def test_flow_style_collections_record_their_line():
    document = load("a:\n  b: {x: [1, 2]}\n")

    assert document["a"]["b"].line == 2
    assert document["a"]["b"]["x"].item_lines == [2, 2]


def test_line_of_follows_keys_and_indexes_to_the_deepest_node():
    document = load(DOCUMENT)

    assert line_of(document, []) == 1
    assert line_of(document, ["cases"]) == 1
    assert line_of(document, ["cases", "second"]) == 8
    assert line_of(document, ["cases", "first", "inputs", "args", 1]) == 7
    assert line_of(document, ["cases", "first", "inputs", "args", 1, "shape"]) == 7


def test_line_of_stops_at_the_last_existing_node_of_a_missing_path():
    document = load(DOCUMENT)

    assert line_of(document, ["cases", "second", "model", "target"]) == 8
    assert line_of(document, ["cases", "first", "inputs", "args", 5]) == 5
    assert line_of(document, ["nope"]) == 1


def test_line_of_a_plain_value_is_none():
    assert line_of({"a": 1}, ["a"]) is None


def test_duplicate_key_raises_naming_both_lines():
    text = "cases:\n  a: 1\n  b: 2\n  a: 3\n"

    with pytest.raises(DuplicateKeyError) as info:
        load_yaml(text)

    assert "duplicate key 'a'" in str(info.value)
    assert "first defined on line 2" in str(info.value)
    assert info.value.problem_mark.line + 1 == 4


def test_duplicate_key_is_a_yaml_error():
    assert issubclass(DuplicateKeyError, yaml.YAMLError)


def test_duplicate_keys_in_different_mappings_are_fine():
    document = load("a: {x: 1}\nb: {x: 2}\n")

    assert document == {"a": {"x": 1}, "b": {"x": 2}}


@pytest.mark.parametrize(
    "text",
    [
        "a: !!python/object:os.system {}\n",
        "a: !!python/object/apply:os.system ['echo hi']\n",
        "a: !!python/name:os.system\n",
        "a: !!python/module:os\n",
    ],
)
def test_python_tags_are_refused(text):
    with pytest.raises(
        yaml.constructor.ConstructorError, match="could not determine a constructor"
    ):
        load_yaml(text)


def test_unhashable_key_is_a_yaml_error():
    with pytest.raises(yaml.constructor.ConstructorError, match="unhashable key"):
        load_yaml("? [1, 2]\n: value\n")


def test_anchors_and_aliases_are_resolved():
    document = load("base: &b {x: 1}\nother: *b\n")

    assert document["other"] == {"x": 1}


def test_merge_keys_are_supported():
    document = load("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  z: 3\n")

    assert document["other"] == {"x": 1, "y": 2, "z": 3}


def test_explicit_key_overrides_a_merged_key():
    document = load("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  x: 10\n")

    assert document["other"] == {"x": 10, "y": 2}


# libyaml (where PyYAML has it) parses the case files; PyYAML's parser says what is wrong.
needs_libyaml = pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML without libyaml")
BUNDLED = sorted(Path(__file__).resolve().parents[2].glob("cases/**/*.yaml"))


def _with_lines(value):
    if isinstance(value, LineDict):
        return value.line, value.key_lines, {k: _with_lines(v) for k, v in value.items()}
    if isinstance(value, LineList):
        return value.line, value.item_lines, [_with_lines(v) for v in value]
    return value


@needs_libyaml
def test_libyaml_reads_every_bundled_case_file_as_the_python_parser_does():
    assert len(BUNDLED) > 10
    for path in BUNDLED:
        text = path.read_text("utf-8")
        fast = yaml.load(text, Loader=yaml_lines._FastLineLoader)
        assert _with_lines(fast) == _with_lines(yaml.load(text, Loader=LineLoader)), path


@needs_libyaml
def test_a_document_libyaml_refuses_is_said_with_the_offending_line_shown():
    with pytest.raises(yaml.YAMLError) as info:
        load_yaml("cases:\n  a: {shape: [2, 3}\n")
    assert "line 2" in str(info.value)
    assert "a: {shape: [2, 3}" in str(info.value)  # the source, as libyaml does not show it


@needs_libyaml
def test_the_bounds_hold_on_libyaml_too():
    bomb = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcde", "bcdef", strict=True)
    )
    with pytest.raises(yaml_lines.TooLargeError, match="alias bomb"):
        yaml.load(bomb, Loader=yaml_lines._FastLineLoader)
    with pytest.raises(yaml.YAMLError, match="deeper than 64 levels"):
        load_yaml("a: " + "[" * 100 + "]" * 100 + "\n")
