"""Building a case's eager model and inputs from its YAML, deterministically from its seed."""

import textwrap

import pytest
import torch

from pytest_exportcheck.model.build import (
    BuildError,
    build_inputs,
    build_model,
    input_value,
    seed_everything,
)
from pytest_exportcheck.spec import load_case_file

MODELS = """
import torch
from torch import nn


class Echo(nn.Module):
    def forward(self, *args, **kwargs):
        return args, kwargs


class Stack(nn.Module):
    def __init__(self, dim, *blocks, act=None, config=None):
        super().__init__()
        self.dim = dim
        self.blocks = nn.ModuleList(blocks)
        self.act = act
        self.config = config

    def forward(self, x):
        return x


class Block(nn.Module):
    def __init__(self, width, inner=None):
        super().__init__()
        self.width = width
        self.inner = inner


class Config:
    def __init__(self, *values, **options):
        self.values = values
        self.options = options


class NeedsWeights(nn.Module):
    def __init__(self):
        super().__init__()
        raise FileNotFoundError("weights.pt")


def not_a_module():
    return 42


def make_inputs(n=2, flag=True):
    return (torch.ones(n),), {"flag": flag}


def make_inputs_raising():
    raise RuntimeError("dataset missing")


def make_inputs_list():
    return [torch.ones(1)]


def make_inputs_kwargs_list():
    return (torch.ones(1),), [1]
"""


@pytest.fixture
def case_dir(tmp_path):
    (tmp_path / "models.py").write_text(MODELS.lstrip("\n"), encoding="utf-8")
    return tmp_path


def load_case(case_dir, body, name="cases.yaml"):
    """A case `c` whose body is ``body`` (YAML under the case, description added)."""
    text = (
        "cases:\n  c:\n    description: built by a unit test\n"
        + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")
        + "\n"
    )
    path = case_dir / name
    path.write_text(text, encoding="utf-8")
    (entry,) = load_case_file(path)
    assert entry.error is None, str(entry.error)
    return entry.case


def inputs_of(case_dir, inputs_yaml, seed=0):
    """Build the inputs of an Echo case whose ``inputs:`` mapping is ``inputs_yaml``."""
    body = "model: {target: 'models.py:Echo'}\ninputs:\n" + textwrap.indent(
        textwrap.dedent(inputs_yaml).strip("\n"), "  "
    )
    case = load_case(case_dir, body + f"\nseed: {seed}")
    seed_everything(case.seed)
    return build_inputs(case)


def one_arg(case_dir, spec):
    """The single positional input built from ``spec`` (one line of YAML)."""
    (value,), kwargs = inputs_of(case_dir, f"args:\n  - {spec}")
    assert kwargs == {}
    return value


def model_of(case_dir, model_yaml):
    return build_model(
        load_case(case_dir, f"model:\n{textwrap.indent(model_yaml, '  ')}\ninputs: {{}}")
    )


# --- tensor specs ----------------------------------------------------------------------------------


def test_float_tensor_defaults_to_randn_float32(case_dir):
    tensor = one_arg(case_dir, "{shape: [64, 64]}")

    assert tensor.shape == (64, 64)
    assert tensor.dtype == torch.float32
    assert tensor.min() < 0 < tensor.max()
    assert not tensor.requires_grad


def test_rand_without_bounds_is_in_zero_one(case_dir):
    tensor = one_arg(case_dir, "{shape: [1000], init: rand}")

    assert tensor.min() >= 0.0 and tensor.max() < 1.0


def test_rand_with_low_and_high_spans_that_range(case_dir):
    tensor = one_arg(case_dir, "{shape: [1000], init: rand, low: -3, high: -2}")

    assert tensor.min() >= -3.0 and tensor.max() < -2.0
    assert tensor.max() - tensor.min() > 0.9


def test_integer_tensor_defaults_to_randint_within_low_and_high(case_dir):
    tensor = one_arg(case_dir, "{shape: [1000], dtype: int64, low: 5, high: 8}")

    assert tensor.dtype == torch.int64
    assert set(tensor.tolist()) == {5, 6, 7}


def test_randint_low_defaults_to_zero(case_dir):
    tensor = one_arg(case_dir, "{shape: [1000], dtype: int32, high: 3}")

    assert set(tensor.tolist()) == {0, 1, 2}


def test_bool_tensor_is_random_true_and_false(case_dir):
    tensor = one_arg(case_dir, "{shape: [1000], dtype: bool}")

    assert tensor.dtype == torch.bool
    assert set(tensor.tolist()) == {False, True}


def test_zeros_and_ones(case_dir):
    args, _ = inputs_of(
        case_dir,
        """
        args:
          - {shape: [2, 3], init: zeros}
          - {shape: [4], dtype: int8, init: ones}
        """,
    )

    assert torch.equal(args[0], torch.zeros(2, 3))
    assert torch.equal(args[1], torch.ones(4, dtype=torch.int8))


def test_arange_counts_through_the_whole_shape(case_dir):
    tensor = one_arg(case_dir, "{shape: [2, 3], dtype: float64, init: arange}")

    assert torch.equal(tensor, torch.arange(6, dtype=torch.float64).reshape(2, 3))


def test_full_fills_with_value(case_dir):
    args, _ = inputs_of(
        case_dir,
        """
        args:
          - {shape: [2], init: full, value: 1.5}
          - {shape: [3], dtype: bool, init: full, value: true}
        """,
    )

    assert torch.equal(args[0], torch.tensor([1.5, 1.5]))
    assert torch.equal(args[1], torch.tensor([True, True, True]))


def test_scalar_tensor_from_an_empty_shape(case_dir):
    tensor = one_arg(case_dir, "{shape: [], init: full, value: 7}")

    assert tensor.shape == ()
    assert tensor.item() == 7.0


@pytest.mark.parametrize(
    ("alias", "dtype"),
    [
        ("float", torch.float32),
        ("double", torch.float64),
        ("half", torch.float16),
        ("long", torch.int64),
        ("int", torch.int32),
        ("bfloat16", torch.bfloat16),
        ("uint8", torch.uint8),
        ("complex64", torch.complex64),
    ],
)
def test_dtype_names_and_aliases(case_dir, alias, dtype):
    tensor = one_arg(case_dir, f"{{shape: [2], dtype: {alias}, init: zeros}}")

    assert tensor.dtype == dtype


def test_requires_grad_makes_a_leaf_that_requires_grad(case_dir):
    tensor = one_arg(case_dir, "{shape: [2], requires_grad: true}")

    assert tensor.requires_grad
    assert tensor.is_leaf


# --- literals, escapes and containers ------------------------------------------------------------


def test_literal_data_infers_its_dtype(case_dir):
    tensor = one_arg(case_dir, "{data: [[1, 2], [3, 4]]}")

    assert torch.equal(tensor, torch.tensor([[1, 2], [3, 4]]))
    assert tensor.dtype == torch.int64


def test_literal_data_with_a_dtype(case_dir):
    tensor = one_arg(case_dir, "{data: [1, 0, 1], dtype: bool}")

    assert torch.equal(tensor, torch.tensor([True, False, True]))


def test_tuple_escape_builds_a_tuple(case_dir):
    value = one_arg(case_dir, "{tuple: [{shape: [1]}, 3]}")

    assert isinstance(value, tuple)
    assert isinstance(value[0], torch.Tensor)
    assert value[1] == 3


def test_dict_escape_allows_keys_that_would_mean_a_tensor_spec(case_dir):
    value = one_arg(case_dir, "{dict: {shape: {shape: [2], init: ones}, data: 1}}")

    assert set(value) == {"shape", "data"}
    assert torch.equal(value["shape"], torch.ones(2))
    assert value["data"] == 1


def test_nested_lists_and_mappings_keep_their_structure(case_dir):
    args, kwargs = inputs_of(
        case_dir,
        """
        args:
          - [{shape: [1]}, [{shape: [2]}, 5]]
        kwargs:
          state: {h: {shape: [3]}, extra: {c: [{shape: [4]}]}}
        """,
    )

    (nested,) = args
    assert isinstance(nested, list)
    assert nested[0].shape == (1,)
    assert nested[1][0].shape == (2,)
    assert nested[1][1] == 5
    assert kwargs["state"]["h"].shape == (3,)
    assert kwargs["state"]["extra"]["c"][0].shape == (4,)


def test_none_and_scalars_pass_through(case_dir):
    args, kwargs = inputs_of(
        case_dir,
        """
        args: [null, 3, 2.5, true, mean]
        kwargs: {mask: null}
        """,
    )

    assert args == (None, 3, 2.5, True, "mean")
    assert kwargs == {"mask": None}


def test_input_value_of_a_plain_value_is_the_value():
    assert input_value(None) is None
    assert input_value("x") == "x"


# --- determinism -----------------------------------------------------------------------------------


def test_same_seed_gives_the_same_inputs(case_dir):
    spec = "args:\n  - {shape: [8]}\n  - {shape: [8], dtype: int64, high: 100}"

    first_args, _ = inputs_of(case_dir, spec, seed=3)
    torch.randn(100)  # global RNG state in between must not matter
    second_args, _ = inputs_of(case_dir, spec, seed=3)

    assert all(torch.equal(a, b) for a, b in zip(first_args, second_args, strict=True))


def test_different_seeds_give_different_inputs(case_dir):
    spec = "args:\n  - {shape: [8]}"

    (first,), _ = inputs_of(case_dir, spec, seed=1)
    (second,), _ = inputs_of(case_dir, spec, seed=2)

    assert not torch.equal(first, second)


# --- models and _target_ instantiation -------------------------------------------------------------


def test_model_is_built_in_eval_mode_by_default(case_dir):
    model = model_of(case_dir, "target: models.py:Echo")

    assert type(model).__name__ == "Echo"
    assert not model.training


def test_model_mode_train(case_dir):
    model = model_of(case_dir, "target: models.py:Echo\nmode: train")

    assert model.training


def test_model_from_an_importable_target_with_args_and_kwargs(case_dir):
    model = model_of(case_dir, "target: torch.nn:Linear\nargs: [3, 2]\nkwargs: {bias: false}")

    assert isinstance(model, torch.nn.Linear)
    assert model.weight.shape == (2, 3)
    assert model.bias is None


def test_target_mappings_are_instantiated_recursively_with_args(case_dir):
    model = model_of(
        case_dir,
        textwrap.dedent(
            """
            target: models.py:Stack
            args:
              - 8
              - {_target_: 'models.py:Block', width: 4}
              - _target_: models.py:Block
                _args_: [5]
                inner: {_target_: 'torch.nn:ReLU'}
            kwargs:
              act: {_target_: 'torch.nn:Tanh'}
              config:
                _target_: models.py:Config
                _args_: [1, {_target_: 'torch.nn:Identity'}]
                plain: {nested: [1, 2]}
            """
        ).strip(),
    )

    assert model.dim == 8
    assert [block.width for block in model.blocks] == [4, 5]
    assert model.blocks[0].inner is None
    assert isinstance(model.blocks[1].inner, torch.nn.ReLU)
    assert isinstance(model.act, torch.nn.Tanh)
    assert model.config.values[0] == 1
    assert isinstance(model.config.values[1], torch.nn.Identity)
    assert model.config.options == {"plain": {"nested": [1, 2]}}


def test_constructor_that_raises_is_a_build_error_naming_the_target(case_dir):
    with pytest.raises(BuildError) as info:
        model_of(case_dir, "target: models.py:NeedsWeights")

    assert str(info.value) == (
        "constructing models.py:NeedsWeights raised FileNotFoundError: weights.pt"
    )


def test_nested_constructor_that_raises_names_the_nested_target(case_dir):
    with pytest.raises(BuildError) as info:
        model_of(
            case_dir,
            "target: models.py:Stack\nargs: [1, {_target_: 'models.py:Block', nope: 1}]",
        )

    message = str(info.value)
    assert message.startswith("constructing models.py:Block raised TypeError:")
    assert "nope" in message


def test_target_that_is_not_a_module_is_a_build_error(case_dir):
    with pytest.raises(BuildError) as info:
        model_of(case_dir, "target: models.py:not_a_module")

    assert str(info.value) == "models.py:not_a_module returned a int, not a torch.nn.Module"


def test_unresolvable_target_is_a_build_error(case_dir):
    with pytest.raises(BuildError, match=r"^target 'models.py:Nope': .* has no attribute 'Nope'$"):
        model_of(case_dir, "target: models.py:Nope")


def test_missing_model_file_is_a_build_error(case_dir):
    with pytest.raises(BuildError, match="does not exist"):
        model_of(case_dir, "target: other.py:Model")


# --- the inputs factory escape hatch ---------------------------------------------------------------


def factory_inputs(case_dir, factory, kwargs=""):
    body = f"model: {{target: 'models.py:Echo'}}\ninputs:\n  factory: '{factory}'\n{kwargs}"
    return build_inputs(load_case(case_dir, body))


def test_inputs_factory_returns_args_and_kwargs(case_dir):
    args, kwargs = factory_inputs(
        case_dir, "models.py:make_inputs", "  kwargs: {n: 3, flag: false}"
    )

    assert isinstance(args, tuple)
    assert torch.equal(args[0], torch.ones(3))
    assert kwargs == {"flag": False}


def test_inputs_factory_that_raises_is_a_build_error(case_dir):
    with pytest.raises(BuildError) as info:
        factory_inputs(case_dir, "models.py:make_inputs_raising")

    assert str(info.value) == (
        "input factory models.py:make_inputs_raising raised RuntimeError: dataset missing"
    )


@pytest.mark.parametrize(
    ("factory", "got"),
    [("models.py:make_inputs_list", "list"), ("models.py:make_inputs_kwargs_list", "tuple")],
)
def test_inputs_factory_with_the_wrong_return_shape_is_a_build_error(case_dir, factory, got):
    with pytest.raises(BuildError) as info:
        factory_inputs(case_dir, factory)

    assert str(info.value) == f"input factory {factory} must return (args, kwargs), got {got}"


def test_inputs_factory_that_is_missing_is_a_build_error(case_dir):
    with pytest.raises(BuildError, match="has no attribute"):
        factory_inputs(case_dir, "models.py:make_nothing")


# --- tensor specs that pass collection but torch refuses ---------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        "{shape: [2], dtype: int64, high: 3, requires_grad: true}",
        "{shape: [2.0]}",
        "{shape: [2], dtype: int64, low: 0.2, high: 0.9}",
        "{shape: [2], dtype: int64, low: .nan, high: 3}",
        "{shape: [2], dtype: int8, high: 1000}",
        "{shape: [2], dtype: uint8, low: -5, high: 3}",
        "{shape: [2], dtype: uint8, init: full, value: 300}",
        "{shape: [2], dtype: bool, low: 5, high: 2}",
        "{data: [[1, 2], [3]]}",
        "{data: abc}",
    ],
)
def test_a_tensor_spec_torch_refuses_is_a_spec_or_build_error(case_dir, spec):
    path = case_dir / "cases.yaml"
    path.write_text(
        "cases:\n  c:\n    description: d\n    model: {target: 'models.py:Echo'}\n"
        f"    inputs:\n      args:\n        - {spec}\n",
        encoding="utf-8",
    )
    (entry,) = load_case_file(path)
    if entry.error is not None:
        return  # refused at collection, with its line: the best outcome

    with pytest.raises(BuildError):
        build_inputs(entry.case)
