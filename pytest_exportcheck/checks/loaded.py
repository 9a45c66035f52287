"""loaded: a program an older torch saved loads under this torch and computes the same.

``--exportcheck-save-programs DIR`` keeps every export's ``torch.export.save`` with
the case's inputs and eager's outputs (``saved_programs/store.py``);
``--exportcheck-load-programs DIR``, under a later torch, gives each one an item
``loaded[<saving minor>-<capture>-<device>]``. The program is loaded with
``torch.export.load(path).module()`` and called on the saved inputs over the saved
steps; its outputs are compared with what eager gave on the saving torch and with
this torch's eager on the same inputs (where this torch builds the same weights:
else with the saved outputs only, and a note says so). It is then loaded once more
in a fresh interpreter (``lowering/fresh_process.py``). A load or call that raises
is a failure at ``[load]`` or ``[run]`` naming both torch versions (a load's with
what torch logged meanwhile: ``model/program_files.py``).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.utils import _pytree as pytree

from pytest_exportcheck.checks.lowered import fresh_findings, load_imports
from pytest_exportcheck.comparison.compare_values import Tolerance, compare_trees
from pytest_exportcheck.containment.failures import Info, Note, describe_exception
from pytest_exportcheck.lowering.fresh_process import run_in_fresh_process
from pytest_exportcheck.lowering.target import LoweringError, raising_at
from pytest_exportcheck.model.isolation import clone_tree, quiet_torch_internals
from pytest_exportcheck.model.program_files import load_program
from pytest_exportcheck.model.runs import Step
from pytest_exportcheck.model.subject import Subject
from pytest_exportcheck.saved_programs.store import SavedProgram
from pytest_exportcheck.spec import Case


def check_loaded(case: Case, subject: Subject, saved: SavedProgram) -> list[str]:
    by, here = _saving_torch(saved), torch.__version__
    what = f"the program torch {by} saved ({saved.program})"
    loading = f"torch {here} loading {what} with torch.export.load().module()"
    with raising_at("load", loading), quiet_torch_internals():
        module = load_program(saved.program).module()
    inputs, saved_outputs = _saved_values(saved, subject, by)
    steps = len(saved_outputs)
    different = _first_different_state(subject.model_copy(), module)  # before it runs
    with raising_at("run", f"{what}, loaded by torch {here} and called,"):
        runs = subject.run(module, clone_tree(inputs), steps=steps, state_of=module)
    tolerance = Tolerance.of_case(case)
    label = f"loaded by torch {here}"
    findings: list[str] = []
    wants = []  # the saved outputs, in the structure the loaded program gives
    for index, (saved_output, got) in enumerate(zip(saved_outputs, runs, strict=True), start=1):
        want, told = saved_output.like(got.output, by)
        findings += [f"call {index}/{steps}: {t}" if not isinstance(t, Note) else t for t in told]
        if want is None:
            break
        wants.append(Step(want, {}, []))
        problems = compare_trees(
            want, got.output, tolerance=tolerance, root=f"call {index}/{steps}: output",
            names=(f"eager on torch {by}", label),
        )  # fmt: skip
        if problems:
            findings += problems
            break
    findings += _against_this_eager(subject, different, inputs, runs, tolerance, label, steps)
    with tempfile.TemporaryDirectory(prefix="exportcheck-loaded-") as directory:
        fresh = run_in_fresh_process(
            saved.program, clone_tree(inputs), loader="saved", imports=load_imports(case),
            steps=steps, seed=case.seed, directory=Path(directory),
        )  # fmt: skip
    where = f"loaded by torch {here} in a fresh process"
    if len(wants) == steps:  # else the in-process comparison already failed
        findings += fresh_findings(fresh, wants, where, tolerance, subject, steps, fp64=False)
    findings.append(Info(f"saved by torch {by}, loaded by torch {here}: {steps} call(s)"))
    return findings


def _saving_torch(saved: SavedProgram) -> str:
    try:
        return str(saved.about()["torch"])
    except Exception:  # the folder's name still says which minor
        return saved.label


def _saved_values(saved: SavedProgram, subject: Subject, by: str) -> tuple[Any, list[SavedOutput]]:
    """The saved inputs, in the structure this torch's case builds, and the saved outputs."""
    try:
        values = saved.values()
    except Exception as exc:
        message = describe_exception(exc, context=f"reading the values torch {by} saved raised")
        raise LoweringError("load", message) from exc
    leaves, spec, _ = values["inputs"]
    built = subject.inputs_copy()
    built_spec = pytree.tree_structure(built)
    if spec != str(built_spec):
        raise LoweringError(
            "load",
            f"the inputs torch {by} saved have the structure {spec}, where this torch's case "
            f"builds {built_spec}: the case changed since they were saved; save again",
        )
    inputs = pytree.tree_unflatten(_on(subject.device, leaves), built_spec)
    return inputs, [SavedOutput(_on(subject.device, o[0]), o[1], o[2]) for o in values["outputs"]]


def _on(device: str, leaves: list[Any]) -> list[Any]:
    return [leaf.to(device) if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]


@dataclass
class SavedOutput:
    """One call's output as the saving torch wrote it: leaves and structure."""

    leaves: list[Any]
    text: str  # str() of its pytree spec
    dumped: str | None  # treespec_dumps, where the types allowed

    def like(self, got: Any, by: str) -> tuple[Any, list[str]]:
        """The saved output in ``got``'s structure, or findings where they differ.

        The structure is compared through ``treespec_dumps`` (stable across versions);
        without it, by the number of leaves, and a note says so."""
        got_leaves, got_spec = pytree.tree_flatten(got)
        if self.dumped is not None:
            try:
                want_spec = pytree.treespec_loads(self.dumped)
            except Exception as exc:
                return None, [f"the output structure torch {by} saved cannot be read: {exc}"]
            if want_spec != got_spec:
                return None, [
                    f"output structure {got_spec}, where eager on torch {by} gave {want_spec}"
                ]
            return pytree.tree_unflatten(self.leaves, got_spec), []
        if len(got_leaves) != len(self.leaves):
            return None, [
                f"{len(got_leaves)} output leaves, where eager on torch {by} gave "
                f"{len(self.leaves)} ({self.text})"
            ]
        note = Note(
            f"output structure compared by its leaves only: torch {by} could not "
            f"write it ({self.text})"
        )
        return pytree.tree_unflatten(self.leaves, got_spec), [note]


def _against_this_eager(
    subject: Subject,
    different: str | None,
    inputs: Any,
    runs: list[Step],
    tolerance: Tolerance,
    label: str,
    steps: int,
) -> list[str]:
    """This torch's eager on the saved inputs, where it holds the weights the program does."""
    if different is not None:
        return [
            Note(
                f"this torch's eager not compared: the case builds other values for "
                f"{different} than the saved program holds (drawn by another torch's random "
                "numbers, or the case changed since); compared with the saved outputs only"
            )
        ]
    try:
        eager = subject.run(subject.model_copy(), clone_tree(inputs), steps=steps, eager=True)
    except Exception as exc:
        context = "this torch's eager not compared: it raised on the saved inputs"
        return [Note(describe_exception(exc, context=context))]
    for index, (want, got) in enumerate(zip(eager, runs, strict=True), start=1):
        problems = compare_trees(
            want.output, got.output, tolerance=tolerance, root=f"call {index}/{steps}: output",
            names=(f"eager on torch {torch.__version__}", label),
        )  # fmt: skip
        if problems:
            return problems
    return []


def _first_different_state(model: torch.nn.Module, loaded: torch.nn.Module) -> str | None:
    """The first tensor the loaded program holds that this torch's model lacks or holds
    other values for (every name of a tied or shared tensor counts)."""
    mine = {
        **dict(model.named_parameters(remove_duplicate=False)),
        **dict(model.named_buffers(remove_duplicate=False)),
    }
    for name, tensor in loaded.state_dict().items():
        own = mine.get(name)
        if own is None or own.shape != tensor.shape or not torch.equal(own.cpu(), tensor.cpu()):
            return name
    return None
