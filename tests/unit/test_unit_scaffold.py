"""The scaffold's parts that run no model: --input specs, names, targets, what to write.

Nothing here runs a model: the specs are checked against the case loader (the
schema and the semantic rules) so a spec the parser accepts is one the plugin
accepts, and the expectation choices are fed plain observations.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from pathlib import Path

import pytest
import yaml

from pytest_exportcheck.__main__ import main
from pytest_exportcheck.api.results import ItemResult
from pytest_exportcheck.comparison.compare_values import Tolerance
from pytest_exportcheck.scaffold.command import add_arguments, case_mapping, load_case
from pytest_exportcheck.scaffold.errors import ScaffoldError, condense
from pytest_exportcheck.scaffold.inputs import (
    DEFAULT_INTEGER_HIGH,
    InputSpecError,
    dynamic_mapping,
    parse_dynamic_spec,
    parse_input_spec,
    parse_kwarg_spec,
    snake_case,
    target_reference,
)
from pytest_exportcheck.scaffold.render import (
    Amendment,
    Amendments,
    CaptureObservation,
    Scaffold,
    _flow,
    header_lines,
    match_pattern,
    modules_expectation,
    mutated_buffers_expectation,
    placeholders_expectation,
    render,
)
from pytest_exportcheck.scaffold.requires import requirements
from pytest_exportcheck.scaffold.verify import _amend, _notch_above
from pytest_exportcheck.spec import load_case_file

# --- --input specs -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2x8:float32", {"shape": [2, 8], "dtype": "float32"}),
        ("2x3x32x32", {"shape": [2, 3, 32, 32], "dtype": "float32"}),
        ("4:int64", {"shape": [4], "dtype": "int64", "high": DEFAULT_INTEGER_HIGH}),
        ("2x5:int64:16", {"shape": [2, 5], "dtype": "int64", "high": 16}),
        ("2x5:int32:-4..4", {"shape": [2, 5], "dtype": "int32", "low": -4, "high": 4}),
        ("2:float64:-1..1", {"shape": [2], "dtype": "float64", "init": "rand", "low": -1.0,
                             "high": 1.0}),
        ("2x5:bool", {"shape": [2, 5], "dtype": "bool"}),
        ("scalar:float32", {"shape": [], "dtype": "float32"}),
        (":int64", {"shape": [], "dtype": "int64", "high": DEFAULT_INTEGER_HIGH}),
        ("0x4", {"shape": [0, 4], "dtype": "float32"}),
        ("2X8", {"shape": [2, 8], "dtype": "float32"}),
    ],
)  # fmt: skip
def test_tensor_specs(text: str, expected: dict) -> None:
    assert parse_input_spec(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("=3", 3), ("=-2", -2), ("=0.5", 0.5), ("=1e-3", 0.001), ("=true", True),
     ("=False", False), ("=none", None), ("=null", None), ("=mean", "mean"), ("=", "")],
)  # fmt: skip
def test_scalar_specs(text: str, expected: object) -> None:
    value = parse_input_spec(text)
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2xa", "'2xa': dimension 'a' is not a non-negative integer (a shape is dims joined by x"),
        ("2,8", "'2,8': dimension '2,8' is not a non-negative integer"),
        ("2x-1", "dimension '-1' is not a non-negative integer"),
        (
            "2x8:flaot32",
            "'2x8:flaot32': unknown dtype 'flaot32' (did you mean 'float32'?); known: float32, float64",
        ),
        ("2x8:tensor", "unknown dtype 'tensor'; known: "),
        ("2:int64:5..1", "'2:int64:5..1': range '5..1' is empty (LOW must be below HIGH)"),
        ("2:int64:1.5", "range '1.5' must be HIGH or LOW..HIGH with integers"),
        ("2:float32:a..b", "range 'a..b' must be HIGH or LOW..HIGH with numbers"),
        ("2:bool:4", "a bool tensor takes no range (it draws 0 or 1)"),
        ("2:int64:4:x", "too many ':' (expected SHAPE[:DTYPE[:RANGE]], e.g. 2x8:int64:0..16)"),
    ],
)
def test_bad_specs_say_how_to_fix_them(text: str, message: str) -> None:
    with pytest.raises(InputSpecError) as info:
        parse_input_spec(text)
    assert message in str(info.value)


def test_kwarg_specs() -> None:
    assert parse_kwarg_spec("mask=2x5:bool") == ("mask", {"shape": [2, 5], "dtype": "bool"})
    assert parse_kwarg_spec("scale==0.5") == ("scale", 0.5)
    for bad in ("2x5", "=2x5", "not-a-name=2"):
        with pytest.raises(InputSpecError, match="expected NAME=SPEC"):
            parse_kwarg_spec(bad)


SPECS = ["2x8:float32", "4:int64", "2x3x32x32", "2:uint8:0..255", "2:int8:-128..128",
         "2:bool", "2:float16:0..1", "scalar:int32", "=3", "=none", "2:complex64"]  # fmt: skip


def test_every_accepted_spec_is_a_valid_case_input(tmp_path: Path) -> None:
    # The loader that collects cases (schema + semantic rules) accepts what the parser gives.
    mapping = {
        "description": "d",
        "model": {"target": "m.py:M", "mode": "eval"},
        "inputs": {"args": [parse_input_spec(s) for s in SPECS]},
    }
    case = load_case(name="specs", mapping=mapping, yaml_path=tmp_path / "c.yaml")
    assert case.inputs["args"][1] == {"shape": [4], "dtype": "int64", "high": 2}
    assert case.path == tmp_path / "c.yaml" and case.base_dir == tmp_path


def test_a_spec_the_loader_refuses_is_a_case_error(tmp_path: Path) -> None:
    mapping = {
        "description": "d",
        "model": {"target": "m.py:M", "mode": "eval"},
        "inputs": {"args": [parse_input_spec("2:uint8:0..300")]},
    }
    with pytest.raises(ScaffoldError) as info:
        load_case("bad", mapping, tmp_path / "c.yaml")
    assert info.value.stage == "case"
    assert "randint range [0, 300) does not fit uint8" in info.value.message


# --- names and targets ---------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [("MyModel", "my_model"), ("TinyLM", "tiny_lm"), ("LSTMTagger", "lstm_tagger"),
     ("HTTPServer2", "http_server2"), ("make_model", "make_model"), ("Mlp", "mlp"),
     ("Net3D", "net3d"), ("ResNet50V2", "res_net50v2"), ("3D", "case_3d")],
)  # fmt: skip
def test_default_case_names(name: str, expected: str) -> None:
    assert snake_case(name) == expected


def test_file_targets_become_relative_to_the_yaml(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    cases = tmp_path / "cases"
    assert target_reference("models/net.py:Net", cases, tmp_path) == "../models/net.py:Net"
    assert target_reference("models/net.py:Net", tmp_path, tmp_path) == "models/net.py:Net"
    assert target_reference("./models/net.py:A.B", tmp_path / "models", tmp_path) == "net.py:A.B"
    # Module targets resolve by import, wherever the YAML lives.
    assert target_reference("pkg.mod:Net", cases, tmp_path) == "pkg.mod:Net"
    with pytest.raises(InputSpecError) as info:
        target_reference("pkg.mod.Net", cases, tmp_path)
    assert "must look like 'pkg.mod:Attr' or 'path/to/file.py:Attr'" in str(info.value)


# --- which expectations are written ---------------------------------------------

P_EXPORT = [
    {"name": "p_w", "kind": "parameter", "target": "w"},
    {"name": "x", "kind": "user_input"},
]
P_DYNAMO = [{"name": "L_self_parameters_w_", "kind": "parameter", "target": "w"}]


def obs(capture: str, **fields: object) -> CaptureObservation:
    return CaptureObservation(capture, **fields)  # type: ignore[arg-type]


def test_placeholders_one_list_only_when_every_capture_agrees() -> None:
    same = [obs("export", placeholders=P_EXPORT), obs("export-strict", placeholders=P_EXPORT)]
    assert placeholders_expectation(same) == P_EXPORT
    differ = [obs("export", placeholders=P_EXPORT), obs("dynamo", placeholders=P_DYNAMO)]
    assert placeholders_expectation(differ) == {"export": P_EXPORT, "dynamo": P_DYNAMO}
    # A capture that failed gets no list: a plain list would claim it for that capture too.
    failed = [obs("export", placeholders=P_EXPORT), obs("export-strict", failure="boom")]
    assert placeholders_expectation(failed) == {"export": P_EXPORT}
    assert placeholders_expectation([obs("export", unavailable="no")]) is None


def test_modules_pin_unflatten_and_flag_a_difference_from_eager() -> None:
    agree = [obs("export", modules=["a", "b"]), obs("export-strict", modules=["a", "b"])]
    assert modules_expectation(agree, ["a", "b"]) == (["a", "b"], [])
    modules, comments = modules_expectation([obs("export", modules=["a"])], ["a", "b"])
    assert modules == ["a"]
    assert comments[0].startswith("REVIEW: differs from eager's module tree")
    assert comments[1] == "default: [a, b]"
    disagree = [obs("export", modules=["a"]), obs("export-strict", modules=["b"])]
    modules, comments = modules_expectation(disagree, ["a"])
    assert modules is None and comments[1:] == ["  export: [a]", "  export-strict: [b]"]
    # Dynamo graphs are flat: hierarchy is not applicable, nothing to pin.
    assert modules_expectation([obs("dynamo", placeholders=P_DYNAMO)], ["a"]) == (None, [])


def test_mutated_buffers_in_the_spelling_the_records_use() -> None:
    aliases = {"left.calls": ("left.calls", "right.calls"),
               "right.calls": ("left.calls", "right.calls")}  # fmt: skip
    eager = ["left.calls", "right.calls"]
    recorded = [obs("export-strict", mutated_buffers=["right.calls"])]
    # One tensor under two names, recorded once: the same mutation, no review needed.
    assert mutated_buffers_expectation(recorded, eager, aliases) == (["right.calls"], [])
    missing = [obs("export", mutated_buffers=[])]
    buffers, comments = mutated_buffers_expectation(missing, ["count"], {})
    assert buffers == [] and comments == ["REVIEW: eager mutated [count]; the captures record this"]
    split = [obs("export", mutated_buffers=["count"]), obs("aot-joint", mutated_buffers=[])]
    buffers, comments = mutated_buffers_expectation(split, ["count"], {})
    assert buffers == ["count"] and comments[0].startswith("REVIEW: the captures record different")
    # Paths without records (Dynamo): eager's own set.
    assert mutated_buffers_expectation([obs("dynamo")], ["count"], {}) == (["count"], [])


def scaffold_of(observations: list[CaptureObservation]) -> Scaffold:
    captures = [o.capture for o in observations]
    return Scaffold(
        name="net",
        case={"description": "Net: a test", "model": {"target": "m.py:Net", "mode": "train",
              "kwargs": {"dim": 4, "cfg": {"_target_": "m.py:Cfg"}}},
              "inputs": {"args": [{"shape": [2, 4], "dtype": "float32"}, None],
                         "kwargs": {"mask": {"shape": [2], "dtype": "bool"}}},
              "seed": 3, "captures": captures},
        observations=observations, eager_modules=["lin"], eager_mutated_buffers=["count"],
        header=["Generated by a test", "", "second paragraph"], target_note="a note",
    )  # fmt: skip


def test_rendered_case_loads_as_written(tmp_path: Path) -> None:
    observations = [
        obs("export", placeholders=P_EXPORT, modules=["lin"], mutated_buffers=["count"]),
        obs("export-strict", placeholders=P_EXPORT, modules=["lin"], mutated_buffers=["count"]),
        obs("dynamo", failure="[capture: other] dynamo raised: it's: 'quoted'\nmore lines"),
    ]
    text = render(scaffold_of(observations))
    assert text.startswith("# Generated by a test\n#\n# second paragraph\ncases:\n  net:\n")
    assert "      target: m.py:Net  # a note\n" in text
    # export and export-strict agree, dynamo failed: one list each, the second an alias.
    assert "        export: &net_export\n" in text
    assert "        export-strict: *net_export\n" in text
    path = tmp_path / "c.yaml"
    path.write_text(text)
    (loaded,) = load_case_file(path)
    assert loaded.error is None, loaded.error
    case = loaded.case
    assert case.model.kwargs == {"dim": 4, "cfg": {"_target_": "m.py:Cfg"}}
    assert case.model.mode == "train" and case.seed == 3
    assert case.expect.placeholders_for("export-strict")[0].render() == "p_w: parameter -> w"
    assert case.expect.placeholders_for("dynamo") is None
    assert case.expect.modules == ["lin"] and case.expect.mutated_buffers == ["count"]
    (xfail,) = case.xfails
    assert xfail.reason == "scaffold: [capture: other] dynamo raised: it's: 'quoted'"
    assert xfail.captures == ("dynamo",) and xfail.checks is None and xfail.strict


def test_render_without_inputs_or_records(tmp_path: Path) -> None:
    scaffold = scaffold_of([obs("dynamo", placeholders=P_DYNAMO)])
    scaffold.case["inputs"] = {"args": []}
    text = render(scaffold)
    assert "    inputs: {args: []}\n" in text and "modules" not in text
    assert "      mutated_buffers: [count]\n" in text
    document = yaml.safe_load(text)
    assert document["cases"]["net"]["expect"]["placeholders"] == P_DYNAMO


def test_condense_keeps_the_headline_and_the_user_frame() -> None:
    message = "the eager forward raised: ValueError: no\nline 2\nraised from user code:\n  File x"
    assert (
        condense(message)
        == "the eager forward raised: ValueError: no\nraised from user code:\n  File x"
    )
    assert condense("one\ntwo\nthree") == "one\n  ... (2 more lines with --traceback)"
    # Why torch refused each dynamic dim: the "- " lines right under the headline stay.
    refused = (
        "Constraints violated (a, b)!\n- a: why; torch suggests a = 7\n- b: why\nin the case: x"
    )
    assert condense(refused) == (
        "Constraints violated (a, b)!\n  - a: why; torch suggests a = 7\n  - b: why\n"
        "  ... (1 more lines with --traceback)"
    )


# --- the command line, before anything is built ----------------------------------


def test_bad_arguments_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, message in [
        (["new", "m.py:M", "--input", "2xq"], "argument --input: '2xq': dimension 'q'"),
        (["new", "m.py:M", "--capture", "jit"], "argument --capture: invalid choice: 'jit'"),
        (["new", "m.py:M", "--model-kwargs", "[1]"], "expected a JSON dict, got '[1]'"),
        (["new", "m.py:M", "--model-kwargs", "{dim: 1}"], "argument --model-kwargs: not JSON"),
        (["new", "m.py:M", "-o", "a.yaml", "--out-dir", "d"], "not allowed with argument -o"),
    ]:
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2
        assert message in capsys.readouterr().err


def test_case_errors_stop_before_torch_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["new", "m.py:M", "--capture", "aot-joint", "--input", "2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("exportcheck new: [case] the case would be invalid: capture 'aot-joint'")
    assert "needs `loss_output`" in err
    assert main(["new", "no_colon"]) == 2
    assert "target 'no_colon' must look like" in capsys.readouterr().err


def test_existing_output_is_kept_without_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "case.yaml").write_text("mine\n")
    assert main(["new", "m.py:M", "-o", "case.yaml"]) == 2
    assert "case.yaml exists; pass --force to overwrite it" in capsys.readouterr().err
    assert (tmp_path / "case.yaml").read_text() == "mine\n"


def test_help_lists_the_spec_grammar(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["new", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "SHAPE[:DTYPE[:RANGE]] or =SCALAR" in out and "--model-kwargs JSON" in out


def test_nested_file_targets_move_with_the_yaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Like TARGET, a `_target_` file on the command line is relative to the current directory.
    monkeypatch.chdir(tmp_path)
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    kwargs = '{"cfg": {"_target_": "models/cfg.py:Config", "dim": 8}, "act": {"_target_": "torch.nn:ReLU"}}'
    args = parser.parse_args(["models/net.py:Net", "--model-kwargs", kwargs, "--input", "2x8"])
    mapping = case_mapping(args, "../models/net.py:Net", "Net", tmp_path / "cases")
    assert mapping["model"]["kwargs"] == {
        "cfg": {"_target_": "../models/cfg.py:Config", "dim": 8},
        "act": {"_target_": "torch.nn:ReLU"},
    }
    assert mapping["captures"] == ["export"] and mapping["seed"] == 0


def test_output_must_be_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["new", "m.py:M", "-o", "."]) == 2
    assert ". is a directory; -o names a file" in capsys.readouterr().err


@pytest.mark.parametrize(
    "value",
    ["kwargs['mask']", "m.py:Net", "a:b", "a,b", "args[0]", "", "x: y", "true", "1.0", "#c", "*x", "&y", "- x",
     "line\nbreak", "it's", "ünï", 1.0e-5, -3, None, False, [], {},
     {"_target_": "m.py:C", "_args_": [1, "b c"], "nested": {"k": [True, None]}}],
)  # fmt: skip
def test_flow_values_read_back_as_written(value: object) -> None:
    # Every value the scaffold writes is one line that PyYAML reads back unchanged.
    text = _flow(value)
    assert "\n" not in text
    assert yaml.safe_load(f"key: {text}")["key"] == value
    nested = _flow([value, 2])
    assert yaml.safe_load(f"key: {nested}")["key"] == [value, 2]


def test_quoted_input_paths_read_as_the_bundled_cases_write_them() -> None:
    entry = {"name": "mask", "kind": "user_input", "target": "kwargs['mask']"}
    assert _flow(entry) == "{name: mask, kind: user_input, target: \"kwargs['mask']\"}"


def test_rendered_amendments_load_back_with_their_review_comments(tmp_path: Path) -> None:
    amendments = Amendments(
        accepts=[Amendment({"row": "lifted: *.num_batches_tracked", "reason": "unread"}, "seen")],
        atol=Amendment({"atol": 0.0001}, "observed max |error| 3.1e-05"),
        xfails=[Amendment({"reason": "scaffold: x", "checks": ["parity"], "stage": "parity"}, "r")],
    )
    scaffold = dataclasses.replace(
        scaffold_of([obs("export", placeholders=P_EXPORT)]),
        requires=[("torchvision", "m.py:Net comes from torchvision, 0.1 here")],
        amendments=amendments,
    )
    text = render(scaffold)
    assert (
        "    # REVIEW: m.py:Net comes from torchvision, 0.1 here\n    requires: [torchvision]\n"
        in (text)
    )
    assert (
        "      parity:\n        # REVIEW: observed max |error| 3.1e-05\n        atol: 0.0001\n"
        in (text)
    )
    assert "          # REVIEW: seen\n          - {row: 'lifted: *.num_batches_tracked'" in text
    assert (
        "      # REVIEW: r\n      - {reason: 'scaffold: x', checks: [parity], stage: parity}"
        in (text)
    )
    path = tmp_path / "c.yaml"
    path.write_text(text)
    (loaded,) = load_case_file(path)
    assert loaded.error is None, loaded.error
    case = loaded.case
    assert case.requires == ("torchvision",)
    assert [a.row for a in case.expect.accepted_differences] == ["lifted: *.num_batches_tracked"]
    assert Tolerance.of_case(case).atol == 0.0001
    assert [x.stages for x in case.xfails] == [("parity",)]


@pytest.mark.parametrize(
    ("headline", "pattern"),
    [
        ("[mutation] after step 2/3: output: 8 / 8 elements outside tolerance (atol=1e-05",
         "elements outside tolerance"),
        ("[capture: other] aot_export_module(trace_joint=True) raised: RuntimeError: We require "
         "the output marked as the loss (at index 0)", "We require the output marked as the loss"),
        ("[hierarchy] unflatten(ep) has 2 modules eager lacks: true_graph_0", "modules eager lacks"),
        ("[parity] a.b 1 2", None),  # nothing stable to match: no match written
    ],
)  # fmt: skip
def test_xfail_match_keeps_the_wording_not_the_numbers(headline: str, pattern: str | None) -> None:
    assert match_pattern(headline) == pattern
    if pattern is not None:
        assert re.search(pattern, headline)


def test_tolerance_is_written_only_for_float_rounding() -> None:
    def failed(check: str, err: float | None) -> ItemResult:
        headline = f"[{check}] output: 1 / 8 elements outside tolerance"
        return ItemResult(
            f"{check}[export-cpu]", check, "export", "cpu", "failed", headline, headline,
            max_abs_err=err, stage=check,
        )  # fmt: skip

    amendments = Amendments()
    assert _amend(amendments, [failed("parity", 3.1e-5)], None, None)  # type: ignore[arg-type]
    assert amendments.atol is not None and amendments.atol.entry == {"atol": 1e-4}
    assert "observed max |error| 3.1e-05 in parity[export-cpu]" in amendments.atol.review
    # A larger error is a wrong program: an xfail records it, the tolerance stays.
    assert _amend(amendments, [failed("mutation", 0.5)], None, None)  # type: ignore[arg-type]
    assert amendments.atol.entry == {"atol": 1e-4}
    (xfail,) = amendments.xfails
    assert xfail.entry["checks"] == ["mutation"] and xfail.items == ("mutation[export-cpu]",)
    # Already expected: nothing more to do, so the rounds stop.
    assert not _amend(amendments, [failed("mutation", 0.5)], None, None)  # type: ignore[arg-type]
    assert [_notch_above(e) for e in (4e-6, 3.1e-5, 4.9e-4)] == [1e-5, 1e-4, 1e-3]


def test_requires_names_the_distribution_of_an_installed_target() -> None:
    (requirement,) = requirements({"target": "yaml:SafeLoader", "mode": "eval"})
    assert requirement[0] == "PyYAML"
    assert requirement[1].startswith("yaml:SafeLoader comes from PyYAML, ")
    # File targets, the standard library and torch need no entry; nested targets count.
    assert requirements({"target": "m.py:Net", "kwargs": {"x": {"_target_": "json:loads"}}}) == []
    assert requirements({"target": "torch.nn:Linear"}) == []
    nested = requirements({"target": "m.py:Net", "args": [{"_target_": "yaml:SafeLoader"}]})
    assert [r for r, _ in nested] == ["PyYAML"]


def test_header_points_editors_at_the_schema_inside_this_checkout() -> None:
    import pytest_exportcheck

    if "site-packages" in Path(pytest_exportcheck.__file__).parts:  # tox installs a copy
        pytest.skip("the plugin imported is an installed copy, not this checkout's")
    cases = Path(__file__).parents[2] / "cases"
    lines = header_lines("m.py:Net", ["new", "m.py:Net"], 0, cases)
    assert lines[-1] == "yaml-language-server: $schema=../pytest_exportcheck/case.schema.json"
    assert (cases / "../pytest_exportcheck/case.schema.json").is_file()


def test_torch_condition_is_written_and_validated(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["m.py:Net", "--input", "2x4", "--torch", ">=2.10"])
    mapping = case_mapping(args, "m.py:Net", "Net", tmp_path)
    assert mapping["torch"] == ">=2.10"
    text = render(dataclasses.replace(scaffold_of([obs("export")]), case={**mapping}))
    assert "    torch: '>=2.10'\n" in text
    assert load_case("net", mapping, tmp_path / "net.yaml").requires_torch == ">=2.10"
    bad = parser.parse_args(["m.py:Net", "--input", "2x4", "--torch", "2.10"])
    with pytest.raises(ScaffoldError, match="torch"):
        load_case("net", case_mapping(bad, "m.py:Net", "Net", tmp_path), tmp_path / "net.yaml")


def test_dynamic_placements_become_the_cases_dynamic_mapping() -> None:
    specs = [
        parse_dynamic_spec("args[0]:0=batch[1..64]"),
        parse_dynamic_spec("args[0]:1=seq[2..512]"),
        parse_dynamic_spec("kwargs['mask']:0=batch"),
        parse_dynamic_spec("args[1]:1=seq2=2*seq"),
        parse_dynamic_spec("args[2]:0=auto"),
    ]
    assert dynamic_mapping(specs) == {
        "dims": {"batch": {"min": 1, "max": 64}, "seq": {"min": 2, "max": 512},
                 "seq2": {"expr": "2*seq"}},
        "shapes": {"args[0]": {0: "batch", 1: "seq"}, "kwargs['mask']": {0: "batch"},
                   "args[1]": {1: "seq2"}, "args[2]": {0: "auto"}},
    }  # fmt: skip
    with pytest.raises(InputSpecError, match="'batch' needs its range where first placed"):
        dynamic_mapping([parse_dynamic_spec("args[0]:0=batch")])
    with pytest.raises(InputSpecError, match="min 9 is above max 2"):
        parse_dynamic_spec("args[0]:0=batch[9..2]")
    with pytest.raises(InputSpecError, match="expected PATH:DIM=NAME"):
        parse_dynamic_spec("args[0]=batch")


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--timeout", "nan", "a number of seconds from 0 (no limit) to 86400"),
        ("--timeout", "inf", "a number of seconds from 0 (no limit) to 86400"),
        ("--timeout", "-1", "a number of seconds from 0 (no limit) to 86400"),
        ("--seed", "4294967296", "a whole number from 0 to 4294967295"),
    ],
)
def test_out_of_range_options_are_usage_errors(
    option: str, value: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser(prog="new")
    add_arguments(parser)
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(["m.py:M", option, value])
    assert exited.value.code == 2
    assert f"argument {option}: {value!r}: {said}" in capsys.readouterr().err
