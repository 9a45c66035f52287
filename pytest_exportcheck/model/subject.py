"""The eager side of a case: a pristine model and inputs, and what eager really does.

A :class:`Subject` is built once per case and process. Nothing ever runs the
pristine model or inputs: runs use copies (see ``isolation.py``), so every
capture and check starts from the same state.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import torch

from pytest_exportcheck.containment.failures import (
    CaseError,
    EagerError,
    describe_exception,
    with_user_frame,
)
from pytest_exportcheck.model.build import BuildError, build_inputs, build_model, preload_targets
from pytest_exportcheck.model.call_counts import CallCounts, count_calls
from pytest_exportcheck.model.frozen_values import FrozenValues, bit_identical
from pytest_exportcheck.model.independence import check_copyable, deepcopy_author, not_independent
from pytest_exportcheck.model.isolation import (
    clone_tree,
    detached,
    flat_inputs,
    module_state,
    private_copy,
    seeded,
    to_device,
)
from pytest_exportcheck.model.nesting import deep_nesting, input_depth, nesting_depth, too_deep
from pytest_exportcheck.model.portability import first_device_mix, move_strays, stray_tensors
from pytest_exportcheck.model.preserved import check_preserved
from pytest_exportcheck.model.runs import Step, run_steps
from pytest_exportcheck.model.soundness import unsound_eager
from pytest_exportcheck.spec import Case
from pytest_exportcheck.spec.semantics import MAX_TENSOR_ELEMENTS

Inputs = tuple[tuple[Any, ...], dict[str, Any]]


@dataclass(frozen=True)
class EagerObservation:
    """What one plain eager call on a private copy showed: output and what it mutated."""

    output: Any
    mutated_state: frozenset[str]
    mutated_inputs: frozenset[str]


class Subject:
    """The eager model and inputs of one case on one device.

    The model and its inputs are built under the device (``with
    torch.device(device)``), so tensors ``__init__`` or an input factory
    creates are on it, then moved with ``.to(device)``; on ``meta`` nothing is
    materialized, for models too large to hold. Weights drawn on an
    accelerator come from its own generator: they differ from the CPU build's,
    which no comparison needs (each compares runs on one device; ``moved``
    uses :meth:`moved_to`). What ``.to()`` cannot move fails the eager stage
    naming the tensor (``portability.py``).
    """

    def __init__(
        self, case: Case, device: str = "cpu", max_elements: int | None = MAX_TENSOR_ELEMENTS
    ) -> None:
        self.case = case
        self.device = device
        self.max_elements = max_elements  # the allocation bound user code runs under
        self._eager_steps: list[Step] = []
        self._fp64_steps: list[Step] | None = []
        try:
            with seeded(case.seed):
                self._model, self._inputs = _build(case, device, max_elements)
        except BuildError as exc:
            raise CaseError(with_user_frame(f"{case.location}: {exc}", exc)) from exc
        except Exception as exc:  # a model file that raises on import, a bad _target_ ...
            raise CaseError(describe_exception(exc, context=f"{case.location}: building")) from exc
        check_preserved(case, self._model)
        check_copyable(case, self._model)

    def moved_to(self, device: str) -> Subject:
        """This (CPU) subject's model and inputs moved to ``device``: what a program
        exported on CPU and moved with ``move_to_device_pass`` must behave like.

        Plain tensor attributes are moved too, as the pass moves constants.
        """
        moved = Subject.__new__(Subject)
        moved.case = self.case
        moved.device = device
        moved.max_elements = self.max_elements
        moved._eager_steps = []
        moved._fp64_steps = []
        model = moved_model(self.model_copy(), device)
        move_strays(model, device)
        moved._model, moved._inputs = model, to_device(self.inputs_copy(), device)
        return moved

    @property
    def pristine_model(self) -> torch.nn.Module:
        """Read only: the model as built. Never call it; use :meth:`model_copy`."""
        return self._model

    @property
    def pristine_inputs(self) -> Inputs:
        """Read only: the inputs as built. Never pass them; use :meth:`inputs_copy`."""
        return self._inputs

    def model_copy(self) -> torch.nn.Module:
        copied = private_copy(self._model)
        if copied is self._model:  # checked at build; a __deepcopy__ may change its mind
            shared = f"copy.deepcopy(model) returned the model itself{deepcopy_author(copied)}"
            raise CaseError(f"{self.case.location}: {not_independent(shared)}")
        return copied

    def inputs_copy(self) -> Inputs:
        return clone_tree(self._inputs)

    @cached_property
    def frozen_values(self) -> FrozenValues:
        """The model's parameters and buffers as built, for stepped runs to share (read only)."""
        return FrozenValues(module_state(self._model))

    @cached_property
    def flat_inputs(self) -> list[tuple[str, Any]]:
        return flat_inputs(*self._inputs)

    @cached_property
    def eager(self) -> EagerObservation:
        """Run eager once, as export traces it (autograd on), diffing state and inputs.

        A tensor counts as mutated when its values, its version counter or its
        identity changed: ``zero_()`` on a zero buffer writes nothing new, but it
        is a mutation, and export records it as one. A raise is a case error.
        """
        model = self.model_copy()
        args, kwargs = self.inputs_copy()
        # The copy's values are the pristine model's: compared against those, not cloned.
        as_built = module_state(self._model)
        before_state = {
            name: _Snapshot(t, as_built.get(name)) for name, t in module_state(model).items()
        }
        before_inputs = {path: _Snapshot(v) for path, v in flat_inputs(args, kwargs)}
        try:
            with seeded(self.case.seed), torch.enable_grad():
                output = model(*args, **kwargs)
        except Exception as exc:
            raise self._not_portable(exc) or EagerError(
                describe_exception(exc, context=f"{self.case.location}: the eager forward raised")
            ) from exc
        # Outside the block that blames the forward: it returned, whatever walking its
        # output meets is not the model's failure (nesting.py).
        output = _detached_if_walkable(output)
        if self.device == "meta":  # meta takes some CPU operands silently; a GPU would not
            not_portable = self._not_portable(None)
            if not_portable is not None:
                raise not_portable
        mutated_state = frozenset(
            name
            for name, tensor in module_state(model).items()
            if name not in before_state or before_state[name].changed(tensor)
        )
        mutated_inputs = frozenset(
            path
            for path, value in flat_inputs(args, kwargs)
            if path in before_inputs and before_inputs[path].changed(value)
        )
        return EagerObservation(output, mutated_state, mutated_inputs)

    def deep_nesting(self) -> str | None:
        """``the output nests 2000 deep`` (eager's output, once eager ran, or the inputs)
        where that is deep enough to name as a RecursionError's cause (``nesting.py``)."""
        observed = self.__dict__.get("eager")  # never runs the forward for this
        output = nesting_depth(observed.output) if observed is not None else 0
        return deep_nesting(output, input_depth(*self._inputs))

    def _not_portable(self, raised: Exception | None) -> EagerError | None:
        """Eager on a device other than the CPU met a tensor ``.to()`` left behind:
        which one, where it lives, what to do (see ``portability.py``)."""
        if self.device == "cpu":
            return None
        model = self.model_copy()
        args, kwargs = self.inputs_copy()

        def call() -> None:
            with seeded(self.case.seed), torch.enable_grad():
                model(*args, **kwargs)

        mix = first_device_mix(call, self.device, stray_tensors(model, self.device))
        if mix is None:
            return None
        if raised is None:
            how = "would raise on a real device"
        else:
            first_line = (str(raised).splitlines() or [""])[0]
            how = f"raised {type(raised).__name__}: {first_line}"
        return EagerError(
            f"{self.case.location}: the model is not portable to {self.device}: "
            f"{mix.describe()}. The eager forward on {self.device} {how}"
        )

    @cached_property
    def unsound(self) -> EagerError | None:
        """Why eager cannot be the value checks' reference: NaN, RNG, non-determinism.

        Two more eager calls, so only value checks ask (see ``soundness.py``).
        """
        try:
            return unsound_eager(self.case, self.device, self.eager.output, self._seeded_eager_call)
        except RecursionError as exc:
            # Torch ran it (the capture took it); the comparisons every value check
            # makes walk it recursively too, and cannot.
            what = too_deep("comparing eager's output (torch's pytree)", self.deep_nesting())
            error = EagerError(
                f"{self.case.location}: {what}, so no value check can compare a program with it"
            )
            error.__cause__ = exc
            return error

    def _seeded_eager_call(self, seed: int) -> Any:
        """One eager call on fresh copies under ``seed``, as ``eager`` makes it."""
        model = self.model_copy()
        args, kwargs = self.inputs_copy()
        with seeded(seed), torch.enable_grad():
            output = model(*args, **kwargs)
        return _detached_if_walkable(output)

    def run(
        self,
        call: Any,
        inputs: tuple[tuple[Any, ...], dict[str, Any]],
        *,
        steps: int,
        state_of: torch.nn.Module | None = None,
        eager: bool = False,
    ) -> list[Step]:
        """``runs.run_steps`` under this case's seed, sharing the model's values as built
        (``frozen_values``): how every check runs eager or a capture on this subject."""
        return run_steps(
            call, inputs, steps=steps, seed=self.case.seed, eager=eager, state_of=state_of,
            frozen=self.frozen_values,
        )  # fmt: skip

    def eager_steps(self, steps: int) -> list[Step]:
        """Eager over ``steps`` seeded calls from a fresh copy, shared by every check and capture.

        Eager does not depend on the capture, so mutation, parity and moved of
        ``export`` and ``export-strict`` all compare against one run. Calls are
        seeded one by one, so a shorter run is a prefix of a longer one.
        """
        if len(self._eager_steps) < steps:
            self._eager_steps = self.run(
                self.model_copy(), self.inputs_copy(), steps=steps, eager=True
            )
        return self._eager_steps[:steps]

    def fp64_step(self, index: int, steps: int) -> Step | None:
        """Step ``index`` (from 0) of :meth:`fp64_steps`, or ``None`` with no float64 run."""
        run = self.fp64_steps(steps)
        return None if run is None else run[index]

    def fp64_steps(self, steps: int) -> list[Step] | None:
        """Eager in float64 — model and floating inputs cast up — for the ``fp64`` and
        ``auto`` policies, made the first time a comparison fails allclose.

        ``None`` where the model cannot run in float64 (the policy then says so
        and allclose decides).
        """
        if self._fp64_steps is not None and len(self._fp64_steps) < steps:
            try:
                model = self.model_copy().double()
                inputs = _to_float64(self.inputs_copy())
                self._fp64_steps = run_steps(
                    model, inputs, steps=steps, seed=self.case.seed, eager=True
                )
            except Exception:
                self._fp64_steps = None
        return None if self._fp64_steps is None else self._fp64_steps[:steps]

    @cached_property
    def call_counts(self) -> CallCounts:
        """Count forward calls per module with hooks, on a copy of its own.

        A separate run from :attr:`eager`: hooks are side effects that some
        constructs (``torch.cond`` runs its branches through Dynamo) refuse.
        """
        args, kwargs = self.inputs_copy()
        return count_calls(self.model_copy(), args, kwargs, self.case.seed)

    @cached_property
    def module_groups(self) -> dict[str, tuple[str, ...]]:
        """For each FQN, all FQNs naming the same module object (shared submodules)."""
        return _groups(self._model.named_modules(remove_duplicate=False))

    @cached_property
    def tensor_groups(self) -> dict[str, tuple[str, ...]]:
        """For each parameter/buffer FQN, all FQNs naming the same tensor (tied weights)."""
        return _groups(module_state(self._model).items())


def _groups(named: Any) -> dict[str, tuple[str, ...]]:
    by_object: dict[int, list[str]] = {}
    for name, obj in named:
        by_object.setdefault(id(obj), []).append(name)
    return {name: tuple(names) for names in by_object.values() for name in names}


class _Snapshot:
    """A tensor's identity, version counter and values before a call.

    ``values`` is a tensor holding those values already (the pristine model's, of
    which the run's model is a copy); without it, a clone is taken.
    """

    def __init__(self, value: Any, values: torch.Tensor | None = None) -> None:
        self.value = value
        self.is_tensor = isinstance(value, torch.Tensor)
        if self.is_tensor:
            self.version = value._version
            same = values is not None and bit_identical(values, value)
            self.copy = values.detach() if same else value.detach().clone()  # type: ignore[union-attr]

    def changed(self, after: Any) -> bool:
        if not self.is_tensor:
            return False
        if after is not self.value or after._version != self.version:
            return True
        if after.device.type == "meta":  # no values; mutation is not checked on meta
            return False
        before = self.copy
        if before.shape != after.shape or before.dtype != after.dtype:
            return True
        if torch.equal(before, after.detach()):  # allocates nothing, unlike allclose
            return False
        if before.is_floating_point() or before.is_complex():  # NaN in place of NaN
            return not torch.allclose(before, after.detach(), rtol=0, atol=0, equal_nan=True)
        return True


def _detached_if_walkable(output: Any) -> Any:
    """``detached(output)``; an output nested too deep for pytree's recursive walk is
    kept as it is (with its autograd graph): torch.export walks it the same way, so
    the capture stage is where its depth is named."""
    try:
        return detached(output)
    except RecursionError:
        return output


def _to_float64(tree: Inputs) -> Inputs:
    from torch.utils import _pytree as pytree

    def up(leaf: Any) -> Any:
        if isinstance(leaf, torch.Tensor) and leaf.is_floating_point():
            return leaf.double()
        return leaf

    return pytree.tree_map(up, tree)


def _build(case: Case, device: str, max_elements: int | None) -> tuple[torch.nn.Module, Inputs]:
    if device == "cpu":
        return build_model(case, max_elements), build_inputs(case, max_elements)
    # Import every target first: a module imported under the device context would
    # create its module-level tensors there, and later CPU items would find them on it.
    preload_targets(case)
    if device == "meta":  # nothing is allocated: the meta device is for models too large to hold
        max_elements = None
    with torch.device(device):
        model, inputs = build_model(case, max_elements), build_inputs(case, max_elements)
    return moved_model(model, device), to_device(inputs, device)


def moved_model(model: torch.nn.Module, device: str) -> torch.nn.Module:
    """``model.to(device)``, which must return the model itself, as ``nn.Module.to`` does.

    A model whose ``.to()`` returns another module would have that one checked in
    its place, and one returning None would break every later step.
    """
    moved = model.to(device)
    if moved is not model:
        raise BuildError(
            f"{type(model).__name__}.to({device!r}) returned "
            f"{'None' if moved is None else type(moved).__name__ + ' (another object)'}, "
            "not the model itself as nn.Module.to does: the checks would not run on the "
            "model the case builds"
        )
    return moved
