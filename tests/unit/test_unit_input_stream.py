"""A case's inputs come from a stream of their own, seeded from the case's seed alone.

Issue 28, item 8: on CPU the model and its inputs were drawn from one stream, so a
model whose first construction in a process draws random numbers (a module it
imports fills a table at import) made inputs that depended on whether the model had
been built before in that process. Two xdist workers then built different inputs
for one case, and ``consistency`` failed (ExportDB ``dynamic_shape_view``, 2 of 2
runs).
"""

import random
import textwrap

import pytest
import torch

from pytest_exportcheck.model.build import build_inputs, input_seed
from pytest_exportcheck.model.subject import Subject
from pytest_exportcheck.spec import load_case_file

# The constructor draws random numbers the first time only, as a model does whose
# first construction imports a module that draws at import.
MODELS = """
import random

import torch
from torch import nn

_TABLE = None


def _table():
    global _TABLE
    if _TABLE is None:
        _TABLE = torch.randn(1000)
        random.random()
    return _TABLE


class FirstTimeDraws(nn.Module):
    def __init__(self):
        super().__init__()
        _table()

    def forward(self, x, y=None):
        return x * 2


def make_inputs():
    return (torch.randn(4), ), {"y": torch.tensor(random.random())}
"""

SPEC_INPUTS = "args:\n  - {shape: [4, 3]}\n  - {shape: [5], dtype: int64, high: 100}"
FACTORY_INPUTS = "factory: 'models.py:make_inputs'"


def load_case(tmp_path, inputs_yaml, seed=0):
    (tmp_path / "models.py").write_text(MODELS.lstrip("\n"), encoding="utf-8")
    text = (
        "cases:\n  c:\n    description: draws at first construction\n"
        "    model: {target: 'models.py:FirstTimeDraws'}\n"
        f"    seed: {seed}\n    inputs:\n"
        + textwrap.indent(textwrap.dedent(inputs_yaml).strip("\n"), "      ")
        + "\n"
    )
    path = tmp_path / "cases.yaml"
    path.write_text(text, encoding="utf-8")
    (entry,) = load_case_file(path)
    assert entry.error is None, str(entry.error)
    return entry.case


def leaves(inputs):
    args, kwargs = inputs
    return [*args, *kwargs.values()]


@pytest.mark.parametrize("inputs_yaml", [SPEC_INPUTS, FACTORY_INPUTS], ids=["specs", "factory"])
def test_inputs_are_the_same_whether_or_not_the_model_was_built_before(tmp_path, inputs_yaml):
    case = load_case(tmp_path, inputs_yaml)

    first = Subject(case).inputs_copy()  # the first construction in this process draws
    second = Subject(case).inputs_copy()  # this one draws nothing

    assert len(leaves(first)) == len(leaves(second)) == 2
    for a, b in zip(leaves(first), leaves(second), strict=True):
        assert torch.equal(a, b)


def test_inputs_do_not_depend_on_the_callers_rng_state(tmp_path):
    case = load_case(tmp_path, FACTORY_INPUTS)

    torch.manual_seed(1)
    random.seed(1)
    first = build_inputs(case)
    torch.manual_seed(2)
    random.seed(2)
    second = build_inputs(case)

    for a, b in zip(leaves(first), leaves(second), strict=True):
        assert torch.equal(a, b)


def test_building_inputs_gives_the_callers_rng_state_back(tmp_path):
    case = load_case(tmp_path, SPEC_INPUTS)
    torch.manual_seed(5)
    expected = torch.randn(3)

    torch.manual_seed(5)
    build_inputs(case)

    assert torch.equal(torch.randn(3), expected)


def test_the_input_stream_is_not_the_model_stream():
    # Inputs drawn from the case's seed itself would be the first draws of the stream
    # the model's weights come from: correlated with them.
    assert all(input_seed(seed) != seed for seed in range(100))
    assert len({input_seed(seed) for seed in range(1000)}) == 1000
    assert 0 <= input_seed(2**32 - 1) < 2**32  # numpy takes seeds below 2**32


def test_other_seeds_still_give_other_inputs(tmp_path):
    first = build_inputs(load_case(tmp_path, SPEC_INPUTS, seed=1))
    second = build_inputs(load_case(tmp_path, SPEC_INPUTS, seed=2))

    assert not torch.equal(leaves(first)[0], leaves(second)[0])
