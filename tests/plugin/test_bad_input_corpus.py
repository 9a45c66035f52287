"""The bad-input corpus: every way a case can be wrong, in one run under ``-n 2``.

Each variant is a case file of its own beside a good one. One run collects
them all (a crash and two hangs among them), and each variant then asserts,
from the run's JSON report, that *every* item of its file failed at the
stage the problem belongs to, with a message naming ``file:line``; the good
case passing and the exit status show the rest of the run was unaffected.

The run is a subprocess, once for the module: the point is a real
``pytest --exportcheck -n 2`` in which a worker dies and others hang.
"""

from __future__ import annotations

import fnmatch
import json
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import childkit
import pytest
from casekit import MODELS


@dataclass(frozen=True)
class Variant:
    id: str
    text: str  # the case file (see `case()`)
    stage: str
    message: str  # fnmatch pattern for every failing item's headline
    raw: bytes | None = None  # a file that is not even text


def case(body: str, *, name: str = "SUBJECT") -> str:
    """A case file with one case: ``body`` holds its keys besides the description.

    ``SUBJECT`` becomes the variant's id, in the file and in its expected message:
    case names are unique across files.
    """
    return f"cases:\n  {name}:\n    description: a bad case\n" + textwrap.indent(
        textwrap.dedent(body).strip() + "\n", "    "
    )


MLP = "model: {target: models.py:Mlp}\ninputs: {args: [{shape: [2, 4]}]}\n"


def with_model(target: str, extra: str = "") -> str:
    return case(f"model: {{target: {target}}}\ninputs: {{args: [{{shape: [2, 4]}}]}}\n{extra}")


EXTRA_MODELS = """

import threading


class RaisesInInit(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        raise RuntimeError("constructor refuses on purpose")


class HoldsALock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.lock = threading.Lock()

    def forward(self, x):
        return self.lin(x)


class Huge(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(100_000, 100_000)  # 10^10 weights: 40 GB in float32

    def forward(self, x):
        return self.lin(x)


class Unsupported(nn.Module):
    def forward(self, x):
        return torch.from_numpy(x.numpy() * 2)  # a round trip through numpy: export cannot


A_NUMBER = 3


def raising_inputs():
    raise ValueError("factory refuses on purpose")


def huge_inputs():
    return (torch.randn(100_000, 100_000),), {}


def bare_tensor_inputs():
    return torch.randn(2, 4)
"""

BROKEN_IMPORT = "import torch\nraise ImportError('this model file is broken on purpose')\n"

VARIANTS = [
    # --- the file as a whole -------------------------------------------------------------
    Variant("yaml_syntax", "cases:\n  SUBJECT: {description: [unclosed\n", "case",
            "[[]case[]] cases/yaml_syntax.yaml:3: invalid YAML: *"),
    Variant("tab_indent", "cases:\n\tSUBJECT:\n", "case",
            "[[]case[]] cases/tab_indent.yaml:2: invalid YAML: *found character '\\t' that cannot "
            "start any token"),
    Variant("duplicate_key", case(MLP + "seed: 1\nseed: 2"), "case",
            "[[]case[]] cases/duplicate_key.yaml:*: invalid YAML: *duplicate key 'seed'*"),
    Variant("top_level_list", "- cases\n", "case",
            "[[]case[]] cases/top_level_list.yaml:1: a case file is a mapping with a "
            "top-level `cases:` key*"),
    Variant("no_cases_key", "casse:\n  SUBJECT: {}\n", "case",
            "[[]case[]] cases/no_cases_key.yaml:1: unknown key 'casse' in <top level> "
            "(did you mean 'cases'?)*"),
    Variant("empty_file", "", "case", "[[]case[]] cases/empty_file.yaml:1: a case file is a mapping with a "
            "top-level `cases:` key"),
    Variant("not_utf8", "", "case", "[[]case[]] cases/not_utf8.yaml: cannot read case file: *",
            raw=b"cases:\n  SUBJECT: \xff\xfe\n"),
    Variant("unsafe_tag", case(MLP + "seed: !!python/object/apply:os.system ['true']"), "case",
            "[[]case[]] cases/unsafe_tag.yaml:*: invalid YAML: *python/object/apply*"),
    Variant("duplicate_name_across_files", case(MLP, name="good"), "case",
            "[[]case[]] cases/duplicate_name_across_files.yaml:2: case name 'good' is already "
            "used at cases/0_good.yaml:2; case names are unique across files*"),
    # --- one case's keys and values ------------------------------------------------------
    Variant("unknown_key", case(MLP + "captrues: [export]"), "case",
            "[[]case[]] cases/unknown_key.yaml:6: unknown key 'captrues' in cases.SUBJECT "
            "(did you mean 'captures'?)*"),
    Variant("unknown_expect_key", case(MLP + "expect: {mutated_buffer: []}"), "case",
            "[[]case[]] cases/unknown_expect_key.yaml:6: unknown key 'mutated_buffer' *"
            "(did you mean 'mutated_buffers'?)*"),
    Variant("missing_description", "cases:\n  SUBJECT:\n" + textwrap.indent(MLP, "    "),
            "case", "[[]case[]] cases/missing_description.yaml:2: cases.SUBJECT: 'description' is a "
            "required property"),
    Variant("missing_target", case("model: {kwargs: {dim: 4}}\ninputs: {args: []}"), "case",
            "[[]case[]] cases/missing_target.yaml:4: cases.SUBJECT.model: 'target' is a "
            "required property"),
    Variant("seed_wrong_type", case(MLP + "seed: zero"), "case",
            "[[]case[]] cases/seed_wrong_type.yaml:6: cases.SUBJECT.seed: 'zero' is not of "
            "type 'integer'"),
    Variant("seed_negative", case(MLP + "seed: -1"), "case",
            "[[]case[]] cases/seed_negative.yaml:6: cases.SUBJECT.seed: -1 *minimum*"),
    Variant("steps_out_of_range", case(MLP + "expect: {parity: {steps: 1000}}"), "case",
            "[[]case[]] cases/steps_out_of_range.yaml:6: *1000*maximum*"),
    Variant("bad_dtype", case("model: {target: models.py:Mlp}\n"
                              "inputs: {args: [{shape: [2, 4], dtype: float33}]}"), "case",
            "[[]case[]] cases/bad_dtype.yaml:5: cases.SUBJECT.inputs.args[[]0[]].dtype: 'float33' "
            "is not one of: float32, *"),
    Variant("shape_not_ints", case("model: {target: models.py:Mlp}\n"
                                   "inputs: {args: [{shape: [2, four]}]}"), "case",
            "[[]case[]] cases/shape_not_ints.yaml:5: *'four' is not of type 'integer'"),
    Variant("negative_dim", case("model: {target: models.py:Mlp}\n"
                                 "inputs: {args: [{shape: [2, -4]}]}"), "case",
            "[[]case[]] cases/negative_dim.yaml:5: cases.SUBJECT.inputs.args[[]0[]].shape[[]1[]]: "
            "-4 is less than the minimum of 0"),
    Variant("bad_case_name", case(MLP, name="1st"), "case",
            "[[]case[]] cases/bad_case_name.yaml:2: invalid case name '1st'*"),
    Variant("unknown_capture", case(MLP + "captures: [export-strictt]"), "case",
            "[[]case[]] cases/unknown_capture.yaml:6: cases.SUBJECT.captures[[]0[]]: "
            "'export-strictt' is not one of: export, export-strict, *"),
    Variant("unknown_check", case(MLP + "checks: [parrity]"), "case",
            "[[]case[]] cases/unknown_check.yaml:6: *'parrity'*"),
    Variant("bad_torch_specifier", case(MLP + "torch: '~=banana'"), "case",
            "[[]case[]] cases/bad_torch_specifier.yaml:6: torch: *banana*"),
    Variant("bad_requirement", case(MLP + "requires: ['transformers >>= 4']"), "case",
            "[[]case[]] cases/bad_requirement.yaml:6: requires: 'transformers >>= 4' is not a "
            "requirement*"),
    Variant("zero_timeout", case(MLP + "timeout: 0"), "case",
            "[[]case[]] cases/zero_timeout.yaml:6: cases.SUBJECT.timeout: 0 *"),
    Variant("unknown_device", case(MLP + "devices: [tpu]"), "case",
            "[[]case[]] cases/unknown_device.yaml:6: cases.SUBJECT.devices[[]0[]]: 'tpu' does not "
            "match *"),
    Variant("xfail_without_reason", case(MLP + "xfail: {checks: [parity]}"), "case",
            "[[]case[]] cases/xfail_without_reason.yaml:6: cases.SUBJECT.xfail: 'reason' is a "
            "required property"),
    Variant("xfail_other_capture", case(MLP + "xfail: {reason: r, captures: [dynamo]}"), "case",
            "[[]case[]] cases/xfail_other_capture.yaml:6: xfail names capture 'dynamo', which "
            "this case does not run*"),
    Variant("joint_without_loss", case(MLP + "captures: [aot-joint]"), "case",
            "[[]case[]] cases/joint_without_loss.yaml:6: capture 'aot-joint' needs `loss_output`*"),
    Variant("huge_input", case("model: {target: models.py:Mlp}\n"
                               "inputs: {args: [{shape: [100000, 100000]}]}"), "case",
            "[[]case[]] cases/huge_input.yaml:5: tensor of shape [[]100000, 100000[]] has "
            "10000000000 elements, over the limit of 268435456*"),
    # --- building the model and its inputs -----------------------------------------------
    Variant("unimportable_module", with_model("no_such_pkg.models:Net"), "case",
            "[[]case[]] cases/unimportable_module.yaml:2: cannot import 'no_such_pkg.models': "
            "ModuleNotFoundError*"),
    Variant("missing_file", with_model("no_such_file.py:Net"), "case",
            "[[]case[]] cases/missing_file.yaml:2: model file */cases/no_such_file.py does not exist"),
    Variant("model_file_raises", with_model("broken_models.py:Net"), "case",
            "[[]case[]] cases/model_file_raises.yaml:2: *this model file is broken on purpose*"),
    Variant("missing_attribute", with_model("models.py:NoSuchModel"), "case",
            "[[]case[]] cases/missing_attribute.yaml:2: target 'models.py:NoSuchModel': "
            "*has no attribute 'NoSuchModel'"),
    Variant("not_callable", with_model("models.py:A_NUMBER"), "case",
            "[[]case[]] cases/not_callable.yaml:2: target 'models.py:A_NUMBER' is a int, "
            "not callable"),
    Variant("constructor_raises", with_model("models.py:RaisesInInit"), "case",
            "[[]case[]] cases/constructor_raises.yaml:2: constructing models.py:RaisesInInit "
            "raised RuntimeError: constructor refuses on purpose*"),
    Variant("not_a_module", with_model("models.py:not_a_module"), "case",
            "[[]case[]] cases/not_a_module.yaml:2: models.py:not_a_module returned a int, "
            "not a torch.nn.Module"),
    Variant("not_copyable", with_model("models.py:HoldsALock"), "case",
            "[[]case[]] cases/not_copyable.yaml:2: the model cannot be deep-copied*"),
    Variant("huge_model", with_model("models.py:Huge"), "case",
            "[[]case[]] cases/huge_model.yaml:2: constructing models.py:Huge: a tensor of shape "
            "[[]100000, 100000[]] (10000000000 elements, aten.empty.memory_format) is over the "
            "limit of 268435456 (the exportcheck_max_elements ini option); refused before "
            "torch allocated it"),
    Variant("huge_factory_input", case("model: {target: models.py:Mlp}\n"
                                       "inputs: {factory: models.py:huge_inputs}"), "case",
            "[[]case[]] cases/huge_factory_input.yaml:2: input factory models.py:huge_inputs: "
            "a tensor of shape [[]100000, 100000[]] (10000000000 elements, aten.randn.default) "
            "is over the limit of 268435456*"),
    Variant("factory_raises", case("model: {target: models.py:Mlp}\n"
                                   "inputs: {factory: models.py:raising_inputs}"), "case",
            "[[]case[]] cases/factory_raises.yaml:2: input factory models.py:raising_inputs "
            "raised ValueError: factory refuses on purpose*"),
    Variant("factory_wrong_shape", case("model: {target: models.py:Mlp}\n"
                                        "inputs: {factory: models.py:bare_tensor_inputs}"),
            "case", "[[]case[]] cases/factory_wrong_shape.yaml:2: input factory "
            "models.py:bare_tensor_inputs must return (args, kwargs), got Tensor"),
    Variant("ragged_data", case("model: {target: models.py:Mlp}\n"
                                "inputs: {args: [{data: [[1.0, 2.0], [3.0]]}]}"), "case",
            "[[]case[]] cases/ragged_data.yaml:2: input args[[]0[]]: torch cannot build *"),
    # --- the eager forward ----------------------------------------------------------------
    Variant("shape_mismatch", case("model: {target: models.py:Mlp}\n"
                                   "inputs: {args: [{shape: [2, 5]}]}"), "eager",
            "[[]eager[]] cases/shape_mismatch.yaml:2: the eager forward raised: RuntimeError: "
            "mat1 and mat2 shapes cannot be multiplied*"),
    Variant("dtype_mismatch", case("model: {target: models.py:Mlp}\n"
                                   "inputs: {args: [{shape: [2, 4], dtype: int64, high: 5}]}"),
            "eager", "[[]eager[]] cases/dtype_mismatch.yaml:2: the eager forward raised: "
            "RuntimeError: mat1 and mat2 must have the same dtype*"),
    Variant("forward_raises", with_model("models.py:Raising"), "eager",
            "[[]eager[]] cases/forward_raises.yaml:2: the eager forward raised: ValueError: "
            "forward is broken on purpose*"),
    Variant("nan_output", with_model("models.py:LogOfInput", "checks: [parity, mutation]"),
            "eager", "[[]eager[]] cases/nan_output.yaml:2: eager output holds non-finite "
            "values: output: * NaN of 8 elements*"),
    Variant("dropout_in_train", case("model: {target: models.py:DropoutMlp, mode: train}\n"
                                     "inputs: {args: [{shape: [2, 4]}]}\n"
                                     "checks: [parity, mutation]"), "eager",
            "[[]eager[]] cases/dropout_in_train.yaml:2: eager output depends on the RNG: *"
            "(the case builds it in train mode)*"),
    Variant("not_deterministic", with_model("models.py:CountsItsCalls", "checks: [parity]"),
            "eager", "[[]eager[]] cases/not_deterministic.yaml:2: eager is not deterministic: *"),
    Variant("hang_in_forward", with_model("models.py:HangsInForward", "timeout: 1"), "timeout",
            "[[]timeout[]] cases/hang_in_forward.yaml:2: still in the eager stage after 1 s "
            "(the case's timeout); stopped, the rest of the run goes on*"),
    Variant("worker_crash", with_model("models.py:AbortsInForward"), "crashed",
            "[[]crashed[]] *worker gw? *eager stage*"),
    # --- the capture ----------------------------------------------------------------------
    Variant("data_dependent_export", with_model("models.py:DataDependent"), "capture",
            "[[]capture: data-dependent guard[]] cases/data_dependent_export.yaml:2: "
            "torch.export.export (non-strict) raised*"),
    Variant("unsupported_export", with_model("models.py:Unsupported",
                                             "checks: [signature]"), "capture",
            "[[]capture: other[]] cases/unsupported_export.yaml:2: torch.export.export "
            "(non-strict) raised: RuntimeError: .numpy() is not supported for tensor subclasses."),
    Variant("hang_in_export", with_model("models.py:HangsWhileExported", "timeout: 1"),
            "timeout", "[[]timeout[]] cases/hang_in_export.yaml:2: still in the capture stage "
            "after 1 s*"),
]  # fmt: skip


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, list[Any]], str]:
    """Run every variant beside a good case once; results grouped by case file."""
    root = tmp_path_factory.mktemp("corpus")
    (root / "pytest.ini").write_text("[pytest]\n")
    cases = root / "cases"
    cases.mkdir()
    (cases / "models.py").write_text(MODELS + EXTRA_MODELS)
    (cases / "broken_models.py").write_text(BROKEN_IMPORT)
    (cases / "0_good.yaml").write_text(case(MLP, name="good"))
    for variant in VARIANTS:
        path = cases / f"{variant.id}.yaml"
        if variant.raw is not None:
            path.write_bytes(variant.raw)
        else:
            path.write_text(variant.text.replace("SUBJECT", variant.id))
    command = [sys.executable, "-m", "pytest", "--exportcheck", "-n", "2", "-p",
               "no:cacheprovider", "--exportcheck-report=report.json"]  # fmt: skip
    done = childkit.run(command, cwd=root, capture_output=True, text=True, timeout=600, warm=True)
    report = json.loads((root / "report.json").read_text())
    by_file: dict[str, list[Any]] = {}
    for item in report["items"]:
        by_file.setdefault(Path(item["file"]).stem, []).append(item)
    return done.returncode, by_file, done.stdout


def test_the_corpus_is_large_and_its_ids_unique() -> None:
    assert len(VARIANTS) >= 40
    assert len({v.id for v in VARIANTS}) == len(VARIANTS)


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.id)
def test_each_variant_fails_at_its_stage_with_its_message(
    corpus_run: tuple[int, dict[str, list[Any]], str], variant: Variant
) -> None:
    _, by_file, stdout = corpus_run
    items = by_file.get(variant.id)
    assert items, f"no item reported for cases/{variant.id}.yaml\n{stdout[-3000:]}"
    for item in items:
        assert item["outcome"] == "failed", item
        assert item["stage"] == variant.stage, item
        expected = variant.message.replace("SUBJECT", variant.id)
        assert fnmatch.fnmatch(item["message"], expected), (
            f"{item['nodeid']}:\n  got:  {item['message']}\n  want: {expected}"
        )


def test_the_rest_of_the_run_is_unaffected_and_the_exit_status_says_failed(
    corpus_run: tuple[int, dict[str, list[Any]], str],
) -> None:
    returncode, by_file, stdout = corpus_run
    assert [item["outcome"] for item in by_file["0_good"]] == ["passed"] * 5
    assert returncode == pytest.ExitCode.TESTS_FAILED
    assert "maximum crashed workers reached" not in stdout
    assert "INTERNALERROR" not in stdout
