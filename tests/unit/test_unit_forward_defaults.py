"""A tensor forward takes by default is lifted as a constant: each path names it its own
way (``lifted_tensor_0``, strict's Dynamo source, ``L_offset_``), and normalized, every
path maps it by identity to ``default:<parameter>``, which the signature check verifies."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from casekit import load_case

from pytest_exportcheck.capture import capture
from pytest_exportcheck.capture.record import CaptureRecord, tensor_at
from pytest_exportcheck.checks.signature import check_signature
from pytest_exportcheck.model.forward_defaults import forward_defaults
from pytest_exportcheck.model.subject import Subject
from pytest_exportcheck.spec.compat import dynamo_graph_capture, satisfies

CASE = """
cases:
  defaults:
    description: forward(x, offset=<a tensor>) called without offset
    model: {target: models.py:DefaultTensor}
    inputs: {args: [{shape: [2, 4]}]}
"""

PATHS = [
    "export",
    # measured: strict export before 2.13 refuses a defaulted tensor parameter
    *(["export-strict"] if satisfies(">=2.13") else []),
    *(["dynamo"] if dynamo_graph_capture() is not None else []),
]


@pytest.fixture(scope="module")
def subject(tmp_path_factory: pytest.TempPathFactory) -> Subject:
    return Subject(load_case(tmp_path_factory.mktemp("defaults"), CASE), "cpu")


def the_default(record: CaptureRecord) -> list[tuple[str, str | None]]:
    """The lifted tensors that are not the model's parameters."""
    return [(p.kind, p.target) for p in record.placeholders if p.kind == "constant"]


@pytest.mark.parametrize("path", PATHS)
def test_every_path_maps_the_default_to_its_parameter(subject: Subject, path: str) -> None:
    record = capture(path, subject)
    assert the_default(record) == [("constant", "default:offset")]
    assert check_signature(subject.case, record) == []


@pytest.mark.parametrize("path", PATHS)
def test_the_default_is_the_very_tensor_forward_takes(subject: Subject, path: str) -> None:
    record = capture(path, subject)
    (constant,) = [p for p in record.placeholders if p.kind == "constant"]
    assert record.fed_tensor(constant) is forward_defaults(subject.pristine_model)["default:offset"]


def test_a_default_is_read_from_forward_s_signature() -> None:
    class Model(torch.nn.Module):
        # The defaults are the subject here: made once, at definition.
        def forward(self, x, scale=2.0, offset=torch.ones(3), *, mask=torch.zeros(3)):  # noqa: B008
            return x

    model = Model()
    defaults = forward_defaults(model)
    assert sorted(defaults) == ["default:mask", "default:offset"]  # tensors only
    assert tensor_at(model, "default:offset") is defaults["default:offset"]
    assert tensor_at(model, "default:scale") is None


@pytest.mark.parametrize("path", PATHS)
def test_a_default_mapped_to_another_tensor_is_caught(subject: Subject, path: str) -> None:
    record = capture(path, subject)
    record.placeholders = [
        dataclasses.replace(p, target="lin.bias") if p.target == "default:offset" else p
        for p in record.placeholders
    ]
    findings = "\n".join(check_signature(subject.case, record))
    assert "-> lin.bias: in eager, 'lin.bias' is a parameter" in findings
