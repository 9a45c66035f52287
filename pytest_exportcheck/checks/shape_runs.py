"""Running the programs of a capture at a size: the shapes check's one way to run.

Each program is made fresh (``Runnable.make``), run on a clone of the inputs under
the case's seed, and reported as its output or the first line of its error. A program
that cannot be made (``torch.export.save`` raised, say) is run at no size: its error
is no refusal of one, and :func:`not_made` says it once, at its own step.

An input factory is asked for the named dims' sizes (``dims=``); an unnamed marker
has no name it could be asked by, so its tensor is cut from the factory's (its first
``n`` along the dim) or grown by repeating it along the dim: the factory's own values,
so what the model reads there (ids, masks) stays in the range it made.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from torch.utils import _pytree as pytree

from pytest_exportcheck.capture.record import CaptureRecord
from pytest_exportcheck.containment.failures import describe_exception, exception_text
from pytest_exportcheck.model.build import BuildError, build_inputs
from pytest_exportcheck.model.isolation import (
    clone_tree,
    flat_inputs,
    render_input_path,
    seeded,
    to_device,
)
from pytest_exportcheck.spec import Case
from pytest_exportcheck.spec.dynamic import DynamicSpec, resized_inputs

Sizes = dict[str, int]
# Stands for the program(s) in a finding, so programs that fail alike share one line.
PROGRAM = "\x00"


def programs_at(record: CaptureRecord, inputs: Any, seed: int) -> list[tuple[str, Any, Any]]:
    """``(label, output, error)`` of every way of running the capture, each made fresh."""
    return [
        (label, out, error) for label, out, error, _ in programs_with_state(record, inputs, seed)
    ]


def programs_with_state(
    record: CaptureRecord, inputs: Any, seed: int
) -> list[tuple[str, Any, Any, list[str]]]:
    """``(label, output, error, buffers left non-finite)``: a train-mode BatchNorm run
    at batch 1 computes, and leaves ``running_var`` NaN (an unbiased variance of one
    value), which every later call reads. Programs that cannot be made are left out."""
    results = []
    for runnable in record.runnables():
        made: list[Any] = []
        unmade: list[Exception] = []

        def make(r: Any = runnable, into: list[Any] = made, failed: list[Any] = unmade) -> Any:
            try:
                call, module = r.make()
            except Exception as exc:
                failed.append(exc)
                raise
            into.append(module)
            return call

        out, error = run_once(make, inputs, seed)
        if not unmade:
            results.append((runnable.label, out, error, nonfinite_buffers(made)))
    return results


def not_made(record: CaptureRecord) -> list[str]:
    """A finding per program the case names that cannot be made (saving, loading,
    decomposing or unflattening it raised), told as that step's failure: the sizes
    run leave it out, since no size could run it."""
    findings = []
    for runnable in record.runnables():
        try:
            runnable.make()
        except Exception as exc:
            context = f"{runnable.label} could not be made, so no size ran it"
            findings.append(describe_exception(exc, context=context))
    return findings


def nonfinite_buffers(made: list[Any]) -> list[str]:
    module = made[0] if made else None
    if not isinstance(module, torch.nn.Module):
        return []
    return [
        name
        for name, buffer in module.named_buffers()
        if buffer.is_floating_point() and not bool(torch.isfinite(buffer).all())
    ]


def built_sizes(spec: DynamicSpec, record: CaptureRecord) -> Sizes:
    """Each named dim's size in the inputs the capture was made from."""
    args, kwargs = record.subject.pristine_inputs
    shapes = dict(flat_inputs(args, kwargs))
    return {
        placement.dim: int(shapes[placement.path].shape[placement.index])
        for placement in spec.placements
        if placement.dim in spec.named and isinstance(shapes.get(placement.path), torch.Tensor)
    }


def inputs_at(case: Case, spec: DynamicSpec, sizes: Sizes, device: str) -> Any:
    """The inputs at ``sizes``, or the BuildError of an input factory that cannot make them."""
    resized = dataclasses.replace(case, inputs=resized_inputs(case.inputs, spec, sizes))
    try:
        with seeded(case.seed):
            args, kwargs = build_inputs(resized)
        if "factory" in case.inputs:
            args, kwargs = _unnamed_markers_at(spec, sizes, (args, kwargs))
    except BuildError as exc:
        return exc
    return to_device((args, kwargs), device)


def _unnamed_markers_at(spec: DynamicSpec, sizes: Sizes, inputs: Any) -> Any:
    """A factory's ``inputs`` with each unnamed marker in ``sizes`` cut or repeated to
    its size (a factory cannot be asked for it: it has no name)."""
    wanted: dict[str, dict[int, int]] = {}
    for placement in spec.placements:
        if placement.by_place() and placement.key() in sizes:
            wanted.setdefault(placement.path, {})[placement.index] = sizes[placement.key()]
    if not wanted:
        return inputs

    def resize(path: Any, value: Any) -> Any:
        at = render_input_path(path)
        if at not in wanted or not isinstance(value, torch.Tensor):
            return value
        for index, size in wanted[at].items():
            value = _along(value, index, size, at)
        return value

    try:
        return pytree.tree_map_with_path(resize, inputs)
    except ValueError as exc:  # a pytree node registered without key paths
        raise BuildError(f"the factory's inputs have no paths to size a marker by: {exc}") from exc


def _along(tensor: torch.Tensor, index: int, size: int, path: str) -> torch.Tensor:
    """``tensor`` with ``size`` entries along dim ``index``: its first ones, repeated."""
    if index >= tensor.dim():
        raise BuildError(f"{path} has {tensor.dim()} dimension(s) in the factory's inputs")
    have = tensor.shape[index]
    if have == size:
        return tensor
    if have == 0:
        raise BuildError(f"{path} dim {index} is empty in the factory's inputs: nothing to repeat")
    picks = torch.arange(size, device=tensor.device) % have
    resized = tensor.detach().index_select(index, picks)
    return resized.requires_grad_(tensor.requires_grad)


def run_once(make: Any, inputs: Any, seed: int) -> tuple[Any, str | None]:
    """A fresh callable's output on a copy of ``inputs``, or the first line of its error."""
    args, kwargs = clone_tree(inputs)
    try:
        call = make()
        with seeded(seed), torch.enable_grad():
            return call(*args, **kwargs), None
    except Exception as exc:
        first = (exception_text(exc).strip().splitlines() or [""])[0]
        return None, f"{type(exc).__name__}: {first[:200]}"


def grouped(where: str, found: dict[str, list[str]]) -> list[str]:
    """One finding per thing that went wrong, naming every program it went wrong in."""
    return [
        f"{where}: {what.replace(PROGRAM, ', '.join(labels))}" for what, labels in found.items()
    ]


def show_sizes(sizes: Sizes) -> str:
    return ", ".join(f"{name}={size}" for name, size in sizes.items())
