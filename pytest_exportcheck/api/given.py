"""A case whose model and inputs are given, not built (the Python API).

The items run as :class:`CaseRun` runs them (``case_run.py``); what differs is
only where the subject comes from: the caller's model and inputs, copied once
into a :class:`GivenSubject`; and, with ``repro=DIR``, where a failure's script
finds them: pickled beside it (``reproduce.py``).
"""

from __future__ import annotations

import torch

from pytest_exportcheck.api import reproduce
from pytest_exportcheck.containment.failures import CaseError
from pytest_exportcheck.items.case_run import CaseRun
from pytest_exportcheck.items.reproductions import Reproductions, RunItem
from pytest_exportcheck.model.build import BuildError
from pytest_exportcheck.model.independence import not_independent, shared_with_copy
from pytest_exportcheck.model.isolation import clone_tree, private_copy, to_device
from pytest_exportcheck.model.preserved import check_preserved, preserved_names
from pytest_exportcheck.model.subject import Inputs, Subject, moved_model
from pytest_exportcheck.spec import Case
from pytest_exportcheck.spec.semantics import MAX_TENSOR_ELEMENTS


class GivenSubject(Subject):
    """A :class:`Subject` holding private copies of a caller's model and inputs.

    ``Subject.__init__`` builds from the case's target; here there is nothing to
    build, so construction is replaced and everything else is inherited. The
    pristine model and inputs are copies made here, so even a check that ran
    them by mistake could not touch the caller's objects, and the caller's
    model keeps its mode (mixed train/eval submodules included), which a rebuild
    through ``model.mode`` would flatten.
    """

    def __init__(self, case: Case, device: str, model: torch.nn.Module, inputs: Inputs) -> None:
        self.case = case
        self.device = device
        self.max_elements = MAX_TENSOR_ELEMENTS  # the allocation bound user code runs under
        self._eager_steps = []
        self._fp64_steps = []
        try:
            copied = private_copy(model)
        except Exception as exc:
            raise CaseError(
                f"{case.location}: the model cannot be deep-copied ({type(exc).__name__}: {exc});"
                " every compared run needs its own copy"
            ) from exc
        shared = shared_with_copy(model, copied)
        if shared is not None:  # the runs would write the caller's own model
            raise CaseError(f"{case.location}: {not_independent(shared)}")
        model = copied
        try:
            # On an accelerator the YAML path builds on CPU and moves; a given model may
            # be anywhere already, so the copies go to the item's device in every case.
            inputs = to_device(clone_tree(inputs), device)
            model = moved_model(model, device)
        except BuildError as exc:
            raise CaseError(f"{case.location}: {exc}") from exc
        except Exception as exc:
            raise CaseError(
                f"{case.location}: moving the model and inputs to {device} raised "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        check_preserved(case, model)
        self._model, self._inputs = model, inputs


class GivenRun(CaseRun):
    """Every item of one ``check_model`` call, on private copies of the caller's objects."""

    def __init__(
        self,
        case: Case,
        model: torch.nn.Module,
        inputs: Inputs,
        devices: list[str],
        timeout: float | None,
        timeout_source: str,
        *,
        report_cpu_moved: bool = False,
        strict_gaps: str | None = None,
        reproductions: Reproductions | None = None,
        call: str = "",
    ) -> None:
        super().__init__(
            case, devices, timeout, timeout_source, report_cpu_moved=report_cpu_moved,
            strict_gaps=strict_gaps, reproductions=reproductions,
        )  # fmt: skip
        self.model = model
        self.inputs = inputs
        self.call = call  # names this call's scripts (its file and line)

    def new_subject(self, device: str) -> Subject:
        return GivenSubject(self.case, device, self.model, self.inputs)

    def repro_item(self, name: str, check: str, capture_name: str, device: str) -> RunItem:
        """A script of this call's loads the caller's model and inputs, as given."""
        item = super().repro_item(name, check, capture_name, device)
        item.given = reproduce.given(self.call)
        item.save = reproduce.saver(self.model, self.inputs)
        if self.case.preserve_signatures:
            item.preserved = preserved_names(self.case, self.model)
        return item
