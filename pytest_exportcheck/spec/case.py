"""Typed, validated cases: what the rest of the plugin reads instead of raw YAML."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_exportcheck.spec.dynamic import DynamicSpec

ALL_CHECKS: tuple[str, ...] = (
    "signature",
    "hierarchy",
    "mutation",
    "parity",
    "shapes",
    "moved",
    "mode",
    "consistency",
    "recorded",
)
# Lowering targets (lowering/), each a check of its own, lowered-<target>; opt-in (a
# case's `lower:` or `checks:`, or --exportcheck-lower): they compile C++.
LOWERING_TARGETS: tuple[str, ...] = ("inductor", "aoti", "executorch", "onnx", "saved")
LOWERED_PREFIX = "lowered-"


def lowered_check(target: str) -> str:
    """The check a lowering target is: ``lowered-aoti``."""
    return f"{LOWERED_PREFIX}{target}"


LOWERED_CHECKS: tuple[str, ...] = tuple(map(lowered_check, LOWERING_TARGETS))
DEFAULT_CAPTURES: tuple[str, ...] = ("export",)
# The programs an export capture runs as (`programs:`, capture/chains.py): ep.module(),
# unflatten(ep), the decomposed program, the saved and loaded one.
DEFAULT_PROGRAMS: tuple[str, ...] = ("module", "unflatten", "decompose", "save")
# How a chain ends, and the names the checks give the default chains (capture/chains.py).
CHAIN_ENDS = ("module", "unflatten")
DEFAULT_PROGRAM_LABELS = {
    "module": "ep.module()",
    "unflatten": "unflatten(ep)",
    "decompose": "decomposed",
    "save": "saved and loaded",
}
DEFAULT_MUTATION_STEPS = 3
DEFAULT_PARITY_STEPS = 1


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when it is below it (as pytest shows ids)."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def device_matches(device: str, names: tuple[str, ...]) -> bool:
    """``cuda:1`` matches ``cuda:1`` and ``cuda``."""
    return device in names or device.split(":")[0] in names


@dataclass(frozen=True)
class ModelSpec:
    """How to build the eager model: ``target(*args, **kwargs)`` then ``.eval()``/``.train()``."""

    target: str
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    mode: str = "eval"
    init: str | None = None  # "fan_in": parameters redrawn after building (see build.py)


@dataclass(frozen=True)
class ExpectedPlaceholder:
    name: str
    kind: str
    target: str | None = None

    def render(self) -> str:
        target = f" -> {self.target}" if self.target is not None else ""
        return f"{self.name}: {self.kind}{target}"


@dataclass(frozen=True)
class ToleranceOverride:
    """Policy fields for outputs of one dtype and/or device (see ``tolerance.py``)."""

    dtype: str | None
    device: str | None
    fields: dict[str, Any]


@dataclass(frozen=True)
class ParityTolerance:
    """``None`` means: the per-dtype default of ``torch.testing.assert_close``."""

    atol: float | None = None
    rtol: float | None = None
    steps: int = DEFAULT_PARITY_STEPS
    policy: str = "auto"
    max_mismatch: float = 0.0
    fp64_multiplier: float = 2.0
    cosine: float = 0.99
    overrides: tuple[ToleranceOverride, ...] = ()
    # What eager itself may be (see soundness.py): NaN/Inf outputs, RNG-dependent outputs.
    allow_nonfinite: bool = False
    random: bool = False


@dataclass(frozen=True)
class AcceptedDifference:
    """A row of the consistency table that may differ between captures, and why."""

    row: str
    reason: str


@dataclass(frozen=True)
class ExpectSpec:
    """Exact expectations a case may state; invariants are checked without them."""

    # One list for every capture, or a list per capture name.
    placeholders: list[ExpectedPlaceholder] | dict[str, list[ExpectedPlaceholder]] | None = None
    placeholders_line: int | None = None
    modules: list[str] | None = None
    modules_line: int | None = None
    mutated_buffers: list[str] | None = None
    mutated_buffers_line: int | None = None
    parity: ParityTolerance = field(default_factory=ParityTolerance)
    mutation_steps: int = DEFAULT_MUTATION_STEPS
    accepted_differences: tuple[AcceptedDifference, ...] = ()
    consistency_line: int | None = None
    # `expect.mode.switches`: the program must follow .train()/.eval() as eager does. Off by
    # default: torch.export bakes the mode in, so no correct export switches (a train-mode
    # program is exported as one on purpose), and a default check must be passable.
    mode_switches: bool = False
    mode_line: int | None = None

    def placeholders_for(self, capture: str) -> list[ExpectedPlaceholder] | None:
        if isinstance(self.placeholders, dict):
            return self.placeholders.get(capture)
        return self.placeholders


@dataclass(frozen=True)
class XfailSpec:
    reason: str
    captures: tuple[str, ...] | None = None
    checks: tuple[str, ...] | None = None
    devices: tuple[str, ...] | None = None
    strict: bool = True
    torch: str | None = None  # its own or its `when` entry's specifier, if any
    line: int | None = None
    stages: tuple[str, ...] | None = None  # the failure's [stage]; others are not absorbed
    match: str | None = None  # a regex searched in the failure's message

    def expects(self, stage: str, message: str) -> bool:
        """Whether a failure of ``stage`` saying ``message`` is the one this xfail expects."""
        if self.stages is not None and stage not in self.stages:
            return False
        return self.match is None or re.search(self.match, message) is not None

    def describe(self) -> str:
        """``stage parity, match 'view size'`` — what it expects, for a failure that is not it."""
        parts = ([f"stage {' or '.join(self.stages)}"] if self.stages else []) + (
            [f"match {self.match!r}"] if self.match else []
        )
        return ", ".join(parts)

    def applies_to(self, capture: str, check: str, device: str) -> bool:
        # A `loaded` item checks a program another torch saved: an xfail written for this
        # torch's capture (`stage: capture`, no checks named) says nothing about it.
        checks = self.checks if self.checks is not None or check != "loaded" else ()
        return (
            (self.captures is None or capture in self.captures)
            and (checks is None or check in checks)
            and (self.devices is None or device_matches(device, self.devices))
        )


@dataclass(frozen=True)
class Elsewhere:
    """A part of a case that a ``torch:`` condition gives to other torch versions only.

    Kept so that a failure it would explain names the condition: a boundary that
    drifted is then fixed where it is written, not worked around (``spec/versions.py``).
    One of ``xfail``, ``placeholders`` or ``accept`` is set.
    """

    torch: str | None  # the specifier; None: the case's own value, replaced on this torch
    line: int | None
    xfail: XfailSpec | None = None
    placeholders: Any = None  # as ExpectSpec.placeholders
    accept: AcceptedDifference | None = None
    replaced_by: str | None = None  # torch: None only: the `when` specifier that replaced it


@dataclass(frozen=True)
class Case:
    """One named case of a case file, validated against ``case.schema.json``."""

    name: str
    path: Path
    line: int
    description: str
    model: ModelSpec
    inputs: dict[str, Any]
    seed: int = 0
    captures: tuple[str, ...] = DEFAULT_CAPTURES
    checks: tuple[str, ...] = ALL_CHECKS
    devices: tuple[str, ...] | None = None
    expect: ExpectSpec = field(default_factory=ExpectSpec)
    # aot-joint: which flattened output is the scalar loss.
    loss_output: int | None = None
    # A PEP 440 specifier the installed torch must satisfy for the case to run.
    requires_torch: str | None = None
    # PEP 508 requirements on other distributions (`requires:`); unmet → skipped.
    requires: tuple[str, ...] = ()
    # What a fresh process imports before it loads a lowered program (`load_imports:`):
    # module names, or .py files relative to the case file.
    load_imports: tuple[str, ...] = ()
    # `programs:` the chains of steps each export capture is run as (capture/chains.py).
    programs: tuple[str, ...] = DEFAULT_PROGRAMS
    # Seconds each item of the case may take (None: the run's exportcheck_timeout).
    timeout: float | None = None
    xfails: tuple[XfailSpec, ...] = ()
    elsewhere: tuple[Elsewhere, ...] = ()
    # `dynamic:`: the dims the captures are told are dynamic (None: every dim static).
    dynamic: DynamicSpec | None = None
    # `preserve_signatures:` submodule FQNs (or fnmatch patterns) torch.export.export keeps
    # the calling convention of (preserve_module_call_signature), so unflatten's child is
    # called as eager's is; checked against the built model (model/preserved.py), at its line.
    preserve_signatures: tuple[str, ...] = ()
    preserve_signatures_line: int | None = None

    @property
    def location(self) -> str:
        return f"{display_path(self.path)}:{self.line}"

    def preserves(self, fqn: str) -> bool:
        """Whether ``preserve_signatures`` names the submodule ``fqn`` (a name or a pattern:
        ``blocks.*.attn``, as ``fnmatch`` matches)."""
        return any(fnmatch.fnmatchcase(fqn, pattern) for pattern in self.preserve_signatures)

    def at(self, line: int | None) -> str:
        """``file:line`` of a line of this case's file (the case's own line if unknown)."""
        return f"{display_path(self.path)}:{line or self.line}"

    @property
    def base_dir(self) -> Path:
        """Where relative ``file.py:Attr`` targets are resolved."""
        return self.path.parent

    def names_step(self, step: str) -> bool:
        """Whether a chain of ``programs:`` takes ``step`` (``retrace``, ``save``...)."""
        return any(step in chain.split(">") for chain in self.programs)

    def xfail_for(self, capture: str, check: str, device: str) -> XfailSpec | None:
        return next((x for x in self.xfails if x.applies_to(capture, check, device)), None)
