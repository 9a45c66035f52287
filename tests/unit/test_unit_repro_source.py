"""A reproduction builds what the plugin builds, bit for bit, and user text stays data."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from pytest_exportcheck.model.build import input_seed, make_tensor
from pytest_exportcheck.model.isolation import seed_everything
from pytest_exportcheck.repro.script import Finding, file_name, script_text
from pytest_exportcheck.repro.source import input_source, literal, tensor_source
from pytest_exportcheck.spec import load_case_file

SPECS = [
    {"shape": [2, 3]},
    {"shape": [4], "dtype": "float64", "init": "rand", "low": -2.0, "high": 3.5},
    {"shape": [3, 2], "dtype": "int64", "high": 7, "low": 1},
    {"shape": [5], "dtype": "bool"},
    {"shape": [2, 2], "init": "arange", "dtype": "half"},
    {"shape": [2], "init": "full", "value": 0.25, "requires_grad": True},
    {"shape": [1, 3], "init": "ones", "dtype": "int8"},
]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.get("init", s.get("dtype", "randn")))
def test_a_yaml_tensor_is_drawn_as_the_plugin_draws_it(spec: dict) -> None:
    seed_everything(3)
    want = make_tensor(spec)
    seed_everything(3)
    got = eval(tensor_source(spec), {"torch": torch})
    assert got.dtype == want.dtype and got.requires_grad == want.requires_grad
    assert torch.equal(got, want)


def test_nested_inputs_keep_their_structure() -> None:
    value = {
        "tuple": [{"shape": [2]}, {"dict": {"a": [1, 2.5]}}, {"data": [1, 2], "dtype": "int32"}]
    }
    got = eval(input_source(value), {"torch": torch})
    assert isinstance(got, tuple) and got[1] == {"a": [1, 2.5]}
    assert got[2].dtype == torch.int32


def test_non_finite_numbers_are_written_as_python_reads_them() -> None:
    assert eval(literal([math.inf, -math.inf, 1.5])) == [math.inf, -math.inf, 1.5]
    assert math.isnan(eval(literal(math.nan)))


def test_the_inputs_stream_is_the_plugins() -> None:
    text = script_text(_finding(_case(Path("cases/basics.yaml"))))
    line = next(line for line in text.splitlines() if line.startswith("INPUT_SEED ="))
    namespace: dict = {"SEED": 12345}
    exec(line, namespace)
    assert namespace["INPUT_SEED"] == input_seed(12345)


def test_a_script_begins_as_the_html_page_knows_a_reproduction_by() -> None:
    from pytest_exportcheck.reports.html.files import REPRO_SIGNATURE

    text = script_text(_finding(_case(Path("cases/basics.yaml"))))
    assert text.startswith(f"#!/usr/bin/env python\n{REPRO_SIGNATURE}")


HOSTILE = 'bad"""\n::error file=x::owned\r\x00'


def test_user_text_goes_in_as_comments_only(tmp_path: Path) -> None:
    case = _case(Path("cases/basics.yaml"))
    finding = _finding(case, message=f"parity check failed:\n- {HOSTILE}", nodeid=HOSTILE)
    text = script_text(finding)
    compile(text, "repro.py", "exec")  # still a valid script
    for line in text.splitlines():
        assert not line.startswith("::"), line
        if "owned" in line:
            assert line.startswith("#"), line


@pytest.mark.parametrize("name", ["../../etc/passwd", "a/b::c[d]", "x" * 400, "..", "ünïcode"])
def test_a_file_name_stays_inside_the_directory(name: str) -> None:
    case = _case(Path("cases/basics.yaml"))
    object.__setattr__(case, "name", name)
    written = file_name(_finding(case))
    assert "/" not in written and not written.startswith(".") and len(written) < 200
    assert written.endswith(".py")


def _case(path: Path):
    return next(loaded.case for loaded in load_case_file(path) if loaded.case is not None)


def _finding(case, message: str = "parity check failed", nodeid: str = "n") -> Finding:
    return Finding(
        nodeid=nodeid, case=case, capture="export", check="parity", device="cpu",
        kind="parity", message=message,
    )  # fmt: skip


def test_dynamic_shapes_are_the_ones_the_capture_gives_torch() -> None:
    from pytest_exportcheck.capture.dynamic_shapes import dynamic_shapes
    from pytest_exportcheck.model.subject import Subject
    from pytest_exportcheck.repro.dynamic import SHAPES, dims_source
    from pytest_exportcheck.repro.source import HELPERS

    cases = [c.case for c in load_case_file(Path("cases/dynamic.yaml")) if c.case is not None]
    compared = 0
    for case in cases:
        if case.dynamic is None:
            continue
        subject = Subject(case)
        model, (args, kwargs) = subject.model_copy(), subject.inputs_copy()
        try:
            want = dynamic_shapes(case.dynamic, model, args, kwargs)
        except Exception:  # a spec this torch refuses: the capture says so, not the script
            continue
        namespace: dict = {}
        exec("import inspect, torch\nfrom torch.utils import _pytree as pytree\n", namespace)
        exec(HELPERS + dims_source(case.dynamic) + "\n" + SHAPES, namespace)
        got = namespace["dynamic_shapes"](model, args, kwargs)
        assert repr(got) == repr(want), case.name
        compared += 1
    assert compared >= 5


@pytest.mark.parametrize(
    ("kind", "check", "capture"),
    [
        ("capture", "parity", "dynamo"),
        ("capture", "parity", "dynamo-legacy"),
        ("parity", "parity", "export-strict"),
        ("mutation", "mutation", "export"),
        ("hierarchy", "hierarchy", "export"),
        ("lower", "lowered-aoti", "export"),
        ("lower", "lowered-onnx", "export"),
        ("lower", "lowered-executorch", "export"),
    ],
)
def test_every_kind_writes_a_script_python_reads(kind: str, check: str, capture: str) -> None:
    cases = [c.case for c in load_case_file(Path("cases/dynamic.yaml")) if c.case is not None]
    for case in (cases[0], _case(Path("cases/basics.yaml"))):
        finding = Finding(
            nodeid="n", case=case, capture=capture, check=check, device="cpu", kind=kind,
            message="m", error="RuntimeError",
        )  # fmt: skip
        compile(script_text(finding), "repro.py", "exec")


def test_keywords_that_are_no_identifiers_are_passed_by_mapping() -> None:
    from pytest_exportcheck.repro.source import keyword

    def call(**kwargs: object) -> dict:
        return kwargs

    text = f"call({keyword('dim', '4')}, {keyword('a-b', '1')}, {keyword('class', '2')})"
    assert eval(text, {"call": call}) == {"dim": 4, "a-b": 1, "class": 2}


@pytest.mark.parametrize("target", ["pkg.mod:Foo; import os", "pkg-x:Foo", "m.py:A.class"])
def test_a_target_no_script_can_name_is_refused(target: str) -> None:
    from pytest_exportcheck.repro.source import Imports, UnwritableTarget

    with pytest.raises(UnwritableTarget, match="not a dotted Python name"):
        Imports().target(target, Path("."))
    assert Imports().target("../odd-dir/my-models.py:Net", Path("/x")).endswith("_file.Net")
