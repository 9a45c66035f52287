"""Build a case's eager model and example inputs, deterministically from its seed."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from pytest_exportcheck.containment.allocation import HugeTensorError, refusing_huge_tensors
from pytest_exportcheck.containment.failures import exception_text
from pytest_exportcheck.model.isolation import seed_everything, seeded
from pytest_exportcheck.model.targets import TargetError, resolve_callable
from pytest_exportcheck.spec import Case
from pytest_exportcheck.spec.semantics import MAX_TENSOR_ELEMENTS

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32, "float": torch.float32,
    "float64": torch.float64, "double": torch.float64,
    "float16": torch.float16, "half": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64, "long": torch.int64,
    "int32": torch.int32, "int": torch.int32,
    "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8,
    "bool": torch.bool,
    "complex64": torch.complex64, "complex128": torch.complex128,
}  # fmt: skip


__all__ = [
    "BuildError",
    "build_inputs",
    "build_model",
    "input_seed",
    "instantiate",
    "preload_targets",
    "redraw_parameters",
    "seed_everything",
]


class BuildError(Exception):
    """The case's model or inputs could not be built (a *case error*, not an export one)."""


def build_model(case: Case, max_elements: int | None = MAX_TENSOR_ELEMENTS) -> torch.nn.Module:
    """The case's model; a tensor over ``max_elements`` is refused before it is allocated."""
    spec = case.model
    factory = _resolve(spec.target, case)
    with refusing_huge_tensors(max_elements):
        args = [instantiate(a, case) for a in spec.args]
        kwargs = {k: instantiate(v, case) for k, v in spec.kwargs.items()}
        with _user_code(f"constructing {spec.target}"):
            model = factory(*args, **kwargs)
    if not isinstance(model, torch.nn.Module):
        raise BuildError(f"{spec.target} returned a {type(model).__name__}, not a torch.nn.Module")
    model.train(spec.mode == "train")
    if spec.init == "fan_in":
        redraw_parameters(model)
    return model


def redraw_parameters(model: torch.nn.Module) -> None:
    """``model.init: fan_in``: every floating parameter redrawn from the RNG (the case's seed).

    Random-initialization outputs of many real models carry no signal (torchvision's
    mobilenet_v2 outputs 1e-13 to 3e-7, a zero-initialized head exactly 0), so a wrong
    program passes parity. Redrawn, activations stay at scale: N(0, 2/fan_in) for
    tensors of 2 or more dimensions (He's rule for ReLU networks), N(1, 0.1) for 1-d
    weights (norm scales), N(0, 0.1) for other 1-d parameters (biases).
    """
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if not parameter.is_floating_point():
                continue
            if parameter.dim() >= 2:
                fan_in = parameter[0].numel()
                parameter.normal_(0.0, (2.0 / max(fan_in, 1)) ** 0.5)
            elif name.rsplit(".", 1)[-1] == "weight":
                parameter.normal_(1.0, 0.1)
            else:
                parameter.normal_(0.0, 0.1)


def preload_targets(case: Case) -> None:
    """Resolve (import) every target the case names: its model, nested ``_target_``
    values and its input factory, so that a later build imports nothing."""

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if "_target_" in value:
                _resolve(value["_target_"], case)
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    _resolve(case.model.target, case)
    walk(list(case.model.args))
    walk(dict(case.model.kwargs))
    if "factory" in case.inputs:
        _resolve(case.inputs["factory"], case)


def instantiate(value: Any, case: Case) -> Any:
    """Hydra-style construction: a mapping with ``_target_`` becomes ``target(*_args_, **rest)``."""
    if isinstance(value, dict):
        if "_target_" in value:
            factory = _resolve(value["_target_"], case)
            args = [instantiate(a, case) for a in value.get("_args_", [])]
            kwargs = {
                k: instantiate(v, case) for k, v in value.items() if k not in ("_target_", "_args_")
            }
            with _user_code(f"constructing {value['_target_']}"):
                return factory(*args, **kwargs)
        return {k: instantiate(v, case) for k, v in value.items()}
    if isinstance(value, list):
        return [instantiate(v, case) for v in value]
    return value


def build_inputs(
    case: Case, max_elements: int | None = MAX_TENSOR_ELEMENTS
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The case's inputs; a factory's tensor over ``max_elements`` is refused before allocation
    (the YAML's own tensors were checked against the limit when the case was loaded).

    Drawn from a stream of their own, :func:`input_seed` of the case's seed, whatever the
    caller's RNG state: a model whose constructor draws random numbers only the first
    time in a process (a module it imports seeds a table at import) would otherwise make
    two xdist workers, one of which built the model before, compare different inputs.
    The caller's RNG state (torch, ``random``, numpy) is given back afterwards.
    """
    with seeded(input_seed(case.seed)):
        return _build_inputs(case, max_elements)


def input_seed(seed: int) -> int:
    """The seed of a case's input stream: derived from the case's seed, but not that seed,
    so inputs are not the first draws of the stream the model's weights come from (numpy
    takes seeds below 2**32)."""
    return (seed * 0x9E3779B1 + 0x5EED) % 2**32


def _build_inputs(case: Case, max_elements: int | None) -> tuple[tuple[Any, ...], dict[str, Any]]:
    spec = case.inputs
    if "factory" in spec:
        factory = _resolve(spec["factory"], case)
        with _user_code(f"input factory {spec['factory']}"), refusing_huge_tensors(max_elements):
            produced = factory(**dict(spec.get("kwargs", {})))
        if (
            not isinstance(produced, (tuple, list))
            or len(produced) != 2
            or not isinstance(produced[0], (tuple, list))
            or not isinstance(produced[1], dict)
        ):
            raise BuildError(
                f"input factory {spec['factory']} must return (args, kwargs), "
                f"got {type(produced).__name__}"
            )
        return tuple(produced[0]), dict(produced[1])
    args = tuple(input_value(v, f"args[{i}]") for i, v in enumerate(spec.get("args", [])))
    kwargs = {k: input_value(v, f"kwargs[{k!r}]") for k, v in spec.get("kwargs", {}).items()}
    return args, kwargs


def factory_takes_dims(case: Case) -> bool:
    """Whether the case's input factory has a ``dims`` parameter: the ``shapes`` check
    then asks it for inputs at each checked size (``dims={"batch": 1, "seq": 2}``)."""
    factory = _resolve(case.inputs["factory"], case)
    try:
        return "dims" in inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a builtin or C callable: no signature to read
        return False


def input_value(value: Any, path: str = "input") -> Any:
    """One YAML input value → the Python/torch value handed to ``forward``."""
    if isinstance(value, list):
        return [input_value(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, dict):
        return value
    if "shape" in value or "data" in value:
        try:
            if "shape" in value:
                return make_tensor(value)
            dtype = DTYPES[value["dtype"]] if "dtype" in value else None
            return torch.tensor(value["data"], dtype=dtype)
        except BuildError:
            raise
        except Exception as exc:  # what the spec rules did not foresee, torch refuses here
            raise BuildError(f"input {path}: torch cannot build {dict(value)}: {exc}") from exc
    if "tuple" in value:
        return tuple(input_value(v, f"{path}[{i}]") for i, v in enumerate(value["tuple"]))
    if "dict" in value:
        return {k: input_value(v, f"{path}[{k!r}]") for k, v in value["dict"].items()}
    return {k: input_value(v, f"{path}[{k!r}]") for k, v in value.items()}


def make_tensor(spec: dict[str, Any]) -> torch.Tensor:
    shape = tuple(spec["shape"])
    dtype = DTYPES[spec.get("dtype", "float32")]
    floating = dtype.is_floating_point or dtype.is_complex
    init = spec.get("init", "randn" if floating else "randint")
    if init == "randn":
        tensor = torch.randn(shape, dtype=dtype)
    elif init == "rand":
        low, high = spec.get("low", 0.0), spec.get("high", 1.0)
        tensor = torch.rand(shape, dtype=dtype) * (high - low) + low
    elif init == "randint":
        high = spec.get("high", 2) if dtype == torch.bool else spec["high"]
        tensor = torch.randint(int(spec.get("low", 0)), int(high), shape, dtype=dtype)
    elif init == "zeros":
        tensor = torch.zeros(shape, dtype=dtype)
    elif init == "ones":
        tensor = torch.ones(shape, dtype=dtype)
    elif init == "arange":
        numel = 1
        for size in shape:
            numel *= size
        tensor = torch.arange(numel).to(dtype).reshape(shape)
    elif init == "full":
        tensor = torch.full(shape, spec["value"], dtype=dtype)
    else:  # pragma: no cover - the schema's enum makes this unreachable
        raise BuildError(f"unknown init {init!r}")
    return tensor.requires_grad_(bool(spec.get("requires_grad", False)))


@contextmanager
def _user_code(what: str) -> Iterator[None]:
    """A constructor or factory of the user's: what it raises becomes a :class:`BuildError`."""
    try:
        yield
    except HugeTensorError as exc:  # refused before allocating: the message says it all
        raise BuildError(f"{what}: {exc}") from None
    except Exception as exc:
        raise BuildError(f"{what} raised {type(exc).__name__}: {exception_text(exc)}") from exc


def _resolve(target: str, case: Case) -> Any:
    try:
        return resolve_callable(target, case.base_dir)
    except TargetError as exc:
        raise BuildError(str(exc)) from exc
