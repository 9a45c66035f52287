"""``torch.export.export``: non-strict (capture ``export``) and strict (``export-strict``).

The graph signature names every lifted input; the program holds the tensors::

    placeholder p_lin_weight  InputSpec(PARAMETER, target="lin.weight")
    placeholder b_count       InputSpec(BUFFER, target="count", persistent=True)
    placeholder x             InputSpec(USER_INPUT)
"""

from __future__ import annotations

import time
from functools import cached_property
from typing import Any

import torch

from pytest_exportcheck.capture.chains import chain_runnables, not_run
from pytest_exportcheck.capture.decomposition import decomposed
from pytest_exportcheck.capture.dynamic_shapes import (
    declared_dynamic_shapes,
    dynamic_capture_error,
)
from pytest_exportcheck.capture.program_copies import ProgramCopies
from pytest_exportcheck.capture.record import (
    DEFAULT_PREFIX,
    CaptureRecord,
    DecompositionError,
    Mutations,
    Placeholder,
    Runnable,
    forward_defaults,
    tensor_at,
)
from pytest_exportcheck.model.isolation import held_tensors, private_copy
from pytest_exportcheck.model.preserved import preserved_names
from pytest_exportcheck.model.program_files import saved_and_loaded
from pytest_exportcheck.model.resharing import ShareKeeper
from pytest_exportcheck.model.subject import Subject
from pytest_exportcheck.spec.compat import parameters_to_mutate


def capture_export(subject: Subject, capture: str, *, strict: bool) -> ProgramRecord:
    # The model handed to export is a private copy: non-strict export keeps the
    # very Parameter objects in ep.state_dict, so sharing would tie the program
    # to later eager runs.
    model = subject.model_copy()
    args, kwargs = subject.inputs_copy()
    dynamic = declared_dynamic_shapes(subject, model, args, kwargs)
    # Strict export reads every weight through data_ptr(), unsharing the copy's
    # bytes from the subject's (resharing.py): shared again once it returns.
    sharing = ShareKeeper(held_tensors(model))
    started = time.perf_counter()
    try:
        program = torch.export.export(
            model,
            args,
            kwargs,
            strict=strict,
            dynamic_shapes=dynamic,
            **_preserving(subject, model),
        )
    except Exception as exc:
        mode = "strict" if strict else "non-strict"
        raise dynamic_capture_error(
            exc, f"{subject.case.location}: torch.export.export ({mode}) raised", subject
        ) from exc
    seconds = time.perf_counter() - started
    sharing.put_back()
    return ProgramRecord(
        capture=capture,
        subject=subject,
        placeholders=normalize_signature(program, subject, model),
        dialect="training IR (torch.export.export)",
        seconds=seconds,
        graph_module=program.graph_module,
        captured_model=model,
        program=program,
    )


def _preserving(subject: Subject, model: torch.nn.Module) -> dict[str, Any]:
    """The case's ``preserve_signatures``, each pattern made the FQNs it names, as export
    takes them (nothing when none: the call stays the one every other case makes)."""
    names = preserved_names(subject.case, model)
    return {"preserve_module_call_signature": names} if names else {}


class ProgramRecord(CaptureRecord):
    """An ``ExportedProgram``: runs as ``ep.module()``, ``unflatten(ep)``, decomposed, and
    saved and loaded again (``torch.export.save`` / ``load``).

    ``program`` is the capture's own copy: never run it (its state would drift);
    the ``fresh_*`` methods give runnable copies that share nothing with it (and
    one set of runtime tensors with each other, see ``program_copies.py``).
    """

    def __init__(self, *, program: torch.export.ExportedProgram, **fields: Any) -> None:
        super().__init__(**fields)
        self.program = program
        self.copies = ProgramCopies(program)

    @property
    def in_spec(self) -> Any:
        return getattr(self.program.call_spec, "in_spec", None)

    def state_tensor(self, fqn: str) -> torch.Tensor | None:
        if fqn.startswith(DEFAULT_PREFIX):  # mapped by identity: the program holds that tensor
            return tensor_at(self.captured_model, fqn) if self.captured_model else None
        if fqn in self.program.state_dict:
            return self.program.state_dict[fqn]
        value = self.program.constants.get(fqn)
        return value if isinstance(value, torch.Tensor) else None

    def fresh_module(self) -> torch.nn.Module:
        """``ep.module()``, as it was when first made."""
        return self._module("module", lambda: self.copies.runnable(self.program).module())

    def fresh_unflattened(self) -> torch.nn.Module:
        """``torch.export.unflatten(ep)``, as it was when first made."""
        return self._module(
            "unflattened", lambda: torch.export.unflatten(self.copies.runnable(self.program))
        )

    def fresh_decomposed_module(self) -> torch.nn.Module:
        """``ep.run_decompositions().module()``, as it was when first made."""
        return self._module("decomposed", lambda: self.copies.runnable(self.decomposed).module())

    def unflattened_program(self, label: str) -> torch.nn.Module:
        """The program a runnable labelled ``label`` runs, unflattened into the eager tree
        (for ``localize.py``): the decomposed one, the saved-and-loaded one, or ``ep``."""
        if label == "decomposed":
            return torch.export.unflatten(private_copy(self.decomposed))
        if label == "saved and loaded":
            return torch.export.unflatten(saved_and_loaded(self.copies.saving(self.program)))
        return self.fresh_unflattened()

    def fresh_loaded(self) -> torch.nn.Module:
        """``torch.export.load(<torch.export.save(ep)>).module()``: the program users ship,
        which PyTorch's own export tests run every export through."""
        return self._module("loaded", self._saved_and_loaded)

    def _saved_and_loaded(self) -> torch.nn.Module:
        return saved_and_loaded(self.copies.saving(self.program)).module()

    def _module(self, key: str, make: Any) -> torch.nn.Module:
        def pair() -> tuple[torch.nn.Module, torch.nn.Module]:
            module = make()
            return module, module

        return self._cached_run(key, pair)[1]

    def runnables(self) -> list[Runnable]:
        """The chains the case's ``programs:`` names (``chains.py``); late-bound, so a
        test can swap ``fresh_module`` and the others."""
        return chain_runnables(self)

    def programs_not_run(self) -> list[str]:
        return not_run(self)

    @cached_property
    def decomposed(self) -> torch.export.ExportedProgram:
        """``run_decompositions()`` of a copy: the functional dialect with mutation records.

        The copy holds aliases of the program's own tensors (their storage, no copy):
        decomposition traces with fake tensors and writes none
        (``test_unit_program_copies.py``, on every tox env).
        What torch derives alike for every program is derived once per process: the
        table of CompositeImplicitAutograd ops (``operator_table.py``) and the
        kernels it overrides them with (``cia_overrides.py``).
        """
        try:
            reading = self.copies.reading(self.program)
        except RecursionError as exc:  # the copy says what is too deep (program_copies.py)
            raise DecompositionError(str(exc)) from exc
        return decomposed(reading)

    def mutations(self) -> Mutations:
        """Read from the decomposed program: the training IR records no mutations."""
        signature = self.decomposed.graph_signature
        paths = [path for path, _ in self.subject.flat_inputs]
        path_of = dict(zip(signature.user_inputs, paths, strict=False))
        return Mutations(
            buffers=frozenset(signature.buffers_to_mutate.values()),
            parameters=frozenset(parameters_to_mutate(signature).values()),
            user_inputs=frozenset(
                path_of.get(n, n) for n in signature.user_inputs_to_mutate.values()
            ),
            source="the decomposed program (ep.run_decompositions())",
        )


def normalize_signature(
    program: torch.export.ExportedProgram, subject: Subject, model: torch.nn.Module
) -> list[Placeholder]:
    """``ExportGraphSignature.input_specs`` → ordered :class:`Placeholder` list."""
    from torch.export.graph_signature import InputKind

    kinds = {
        InputKind.PARAMETER: "parameter",
        InputKind.BUFFER: "buffer",
        InputKind.CONSTANT_TENSOR: "constant",
        InputKind.CUSTOM_OBJ: "custom_obj",
        InputKind.TOKEN: "token",
        InputKind.USER_INPUT: "user_input",
    }
    input_paths = [path for path, _ in subject.flat_inputs]
    nodes = {node.name: node for node in program.graph.nodes if node.op == "placeholder"}
    defaults = {id(tensor): target for target, tensor in forward_defaults(model).items()}
    user_index = 0
    placeholders = []
    for spec in program.graph_signature.input_specs:
        kind = kinds.get(spec.kind, str(spec.kind))
        target = spec.target
        mapped_by = "graph signature"
        if kind == "user_input":
            target = input_paths[user_index] if user_index < len(input_paths) else None
            user_index += 1
        elif kind == "constant" and id(program.constants.get(target)) in defaults:
            # A forward default: each mode names it its own way; the program holds
            # the very tensor, so its identity says which parameter's it is.
            target, mapped_by = defaults[id(program.constants[target])], "forward default"
        placeholders.append(
            Placeholder(
                name=spec.arg.name,
                kind=kind,
                target=target,
                persistent=getattr(spec, "persistent", None),
                example=_example(spec.arg, nodes),
                mapped_by=mapped_by,
            )
        )
    return placeholders


def _example(arg: Any, nodes: dict[str, Any]) -> Any:
    if hasattr(arg, "value"):  # ConstantArgument: a Python scalar/None input baked in
        return arg.value
    node = nodes.get(getattr(arg, "name", None))
    return None if node is None else node.meta.get("val")
