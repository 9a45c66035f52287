"""One reproduction script, put together and written under the run's directory.

The header says which item and case it reproduces (file:line), the torch and Python
it was written under, and the finding as the item reported it; then the case's
build (``source.py``), its capture call and programs (``programs.py``) and the
comparison of its kind (``kinds.py``). The finding and the case's names are the
user's text: they go in as comments, each line escaped, never as code.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import platform
import re
from dataclasses import dataclass
from pathlib import Path

from pytest_exportcheck.recordings.atomic import write_atomically
from pytest_exportcheck.repro import given as given_model
from pytest_exportcheck.repro.dynamic import SHAPES, dims_source
from pytest_exportcheck.repro.hierarchy_kind import hierarchy_parts
from pytest_exportcheck.repro.kinds import CAPTURES, DYNAMOS, LOWERINGS, MAINS
from pytest_exportcheck.repro.lowered_kind import LOADERS
from pytest_exportcheck.repro.lowered_sizes import sizes_source
from pytest_exportcheck.repro.moved_kind import MOVE_HELPERS
from pytest_exportcheck.repro.programs import (
    GRAPH_PROGRAMS,
    RETRACED,
    SAVED_AND_LOADED,
    moves,
    programs_source,
)
from pytest_exportcheck.repro.shapes_kind import shapes_source
from pytest_exportcheck.repro.signature_kind import expected_source
from pytest_exportcheck.repro.source import HELPERS, Imports, inputs_source, model_source
from pytest_exportcheck.spec import Case

SHOWN_FINDING_LINES = 12  # of the item's message, in the header


@dataclass(frozen=True)
class Finding:
    """What the item found, as a script needs it."""

    nodeid: str
    case: Case
    capture: str
    check: str
    device: str
    kind: str  # kinds.MAINS
    message: str  # the failure as the item reported it
    error: str | None = None  # ``capture``: the exception type the capture raised
    preserved: tuple[str, ...] = ()  # the FQNs ``preserve_signatures`` resolved to
    findings: tuple[str, ...] = ()  # the check's own, where it ran (shapes: the sizes they
    # name; hierarchy: which parts)
    saved: Path | None = None  # ``loaded``: the folder of the stored program the item loaded
    given: given_model.Given | None = None  # a model given from Python, loaded (given.py)


def file_name(finding: Finding) -> str:
    """``<case>-<check>-<capture>-<device>.py`` (:func:`_safe`)."""
    # A capture's failure is every check's of that capture: one script for them all.
    check = "capture" if finding.kind == "capture" else finding.check
    parts = [finding.case.name, check, finding.capture, finding.device]
    if finding.given is not None:  # a call's: its file and line before the case's name
        parts.insert(0, finding.given.call)
    return f"{_safe(parts)}.py"


def saved_file(finding: Finding, directory: Path) -> Path:
    """Where a given model and its inputs are pickled (``given.py``): one file for
    every script of the call's case, so a large model is written once, not per check."""
    assert finding.given is not None
    return directory / f"{_safe([finding.given.call, finding.case.name])}.pt"


def _safe(parts: list[str]) -> str:
    """``parts`` joined, in characters every file system takes; a digest of the real
    names where any had to be replaced."""
    raw = "-".join(parts)
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", raw)[:150].lstrip(".-") or "case"
    if safe != raw:
        safe += "-" + hashlib.sha1(raw.encode()).hexdigest()[:8]
    return safe


def write_script(finding: Finding, directory: Path) -> Path:
    path = directory / file_name(finding)
    write_atomically(path, script_text(finding))
    return path


def script_text(finding: Finding) -> str:
    case = finding.case
    imports = Imports()
    paths = [str(case.base_dir.resolve()), str(Path.cwd())]
    if finding.given is None:
        build_model = model_source(case, imports)
        build_inputs = inputs_source(case, imports)
    else:
        saved = saved_file(finding, Path(".")).name
        build_model = given_model.model_source(saved)
        build_inputs = given_model.inputs_source(saved)
        paths[:0] = finding.given.paths
    kind_sections = []  # before the imports are read: a kind's own inputs may add some
    if finding.kind in ("parity", "shapes") and finding.capture in DYNAMOS:
        kind_sections.append(GRAPH_PROGRAMS.strip())
    elif finding.kind in ("parity", "mutation", "shapes"):
        if moves(case):  # a chain that moves the program to a device
            kind_sections.append(MOVE_HELPERS.strip())
        kind_sections.append(RETRACED.strip())
        stateful = finding.kind == "mutation"
        kind_sections.append(programs_source(case, only_stateful=stateful))
    if finding.kind == "shapes":
        kind_sections.append(shapes_source(case, finding.findings, imports))
    if finding.kind == "lowered":
        kind_sections.append(sizes_source(case, finding.findings, imports))
    if finding.kind == "signature":
        kind_sections.append(expected_source(case, finding.capture))
    parity = case.expect.parity
    steps = case.expect.mutation_steps if finding.kind == "mutation" else parity.steps
    sections = [
        _header(finding),
        IMPORTS,
        "\n".join(
            [
                "# where the item's run found the case's modules",
                f"sys.path[:0] = {paths!r}",
                f"SEED = {case.seed}",
                "INPUT_SEED = (SEED * 0x9E3779B1 + 0x5EED) % 2**32  # the inputs' own stream",
                f"DEVICE = {finding.device!r}",
                f"STEPS = {steps}",
                f"ATOL, RTOL = {parity.atol!r}, {parity.rtol!r}  # None: assert_close's default",
                f"EXPECTED_ERROR = {finding.error!r}  # the exception type the capture raised",
                f"EXPECTED_BUFFERS = {case.expect.mutated_buffers!r}  # expect.mutated_buffers",
                f"EXPECTED_MODULES = {case.expect.modules!r}  # expect.modules",
                *_kind_constants(finding),
            ]
        ),
        HELPERS.strip(),
        SAVED_AND_LOADED.strip(),
        given_model.HELPER.strip() if finding.given is not None else "",
        "# the case's own code\n" + "\n".join(imports.lines) if imports.lines else "",
        _function("build_model", build_model),
        _function("build_inputs", build_inputs),
        _capture(finding),
    ]
    target = finding.check.removeprefix("lowered-")
    if finding.kind == "lower":
        sections.append(LOWERINGS[target].strip())
    if finding.kind == "lowered":
        sections.append(LOADERS[target][0].strip())
    if finding.kind == "moved":
        sections.append(MOVE_HELPERS.strip())
    sections += kind_sections
    sections += [MAINS[finding.kind].strip(), MAIN_CALL]
    return "\n\n\n".join(s for s in sections if s) + "\n"


IMPORTS = """import copy
import importlib.util
import inspect
import os
import random
import re
import sys
import tempfile
import traceback

import torch
from torch.utils import _pytree as pytree"""

# Exit 2 where the script itself raised: 1 is kept for "reproduced".
MAIN_CALL = """if __name__ == "__main__":
    try:
        status = main()
    except Exception:
        traceback.print_exc()
        print("not run to its verdict: the reproduction raised (above)")
        status = 2
    sys.exit(status)"""


def _kind_constants(finding: Finding) -> list[str]:
    """The constants one kind's ``main()`` reads."""
    case = finding.case
    lines = [f"DYNAMIC = {case.dynamic is not None}  # the case declares dynamic: dims"]
    if finding.kind == "mode":
        lines.append(f"EXPECT_SWITCHES = {case.expect.mode_switches!r}  # expect.mode.switches")
    if finding.kind == "hierarchy":
        parts, _ = hierarchy_parts(finding.findings)
        lines.append(f"PARTS = {parts!r}  # what the item's findings compared")
    if finding.kind == "lowered":
        target = finding.check.removeprefix("lowered-")
        lines.append(f"TARGET = {target!r}")
        lines.append(f"KEEPS_STATE = {LOADERS[target][1]!r}  # it carries state between calls")
    if finding.kind == "loaded" and finding.saved is not None:
        lines.append(f"SAVED = {str(finding.saved.resolve())!r}  # the stored program's folder")
        lines.append(f"SAVED_BY = {_saving_torch(finding.saved)!r}  # the torch that saved it")
    return lines


def _saving_torch(folder: Path) -> str:
    """The saving torch's version from ``about.json``, else the folder's ``torch-2.9``."""
    try:
        return str(json.loads((folder / "about.json").read_text())["torch"])
    except (OSError, ValueError, KeyError, TypeError):
        return folder.parent.parent.name.removeprefix("torch-")


def _header(finding: Finding) -> str:
    case = finding.case
    shown = finding.message.splitlines()[:SHOWN_FINDING_LINES]
    more = len(finding.message.splitlines()) - len(shown)
    lines = [
        "#!/usr/bin/env python",
        "# A plain-torch reproduction of a pytest-exportcheck finding. It imports torch",
        "# and the case's own code only. Exit 1, the finding printed: reproduced in plain",
        '# torch. Exit 0, "not reproduced": plain torch does not show it. Exit 2: the',
        "# reproduction itself raised.",
        "#",
        f"# item:    {_escaped(finding.nodeid)}",
        f"# case:    {_escaped(case.location)} ({_escaped(case.name)})",
        f"# written: torch {_version('torch')}, Python {platform.python_version()}",
        "# finding, as the item reported it:",
        *(f"#   {_escaped(line)}" for line in shown),
    ]
    if more > 0:
        lines.append(f"#   ({more} more lines in the item's report)")
    return "\n".join(lines)


def _escaped(text: str) -> str:
    """A line of user text safe in a comment: no line break, no control character."""
    return repr(text)[1:-1]


def _function(name: str, body: str) -> str:
    indented = "\n".join(f"    {line}" if line else "" for line in body.splitlines())
    return f"def {name}():\n{indented}"


def _capture(finding: Finding) -> str:
    extra = dynamo_extra = constraints = ""
    lines = [
        "def capture(model, inputs):",
        f'    """The item\'s capture call ({finding.capture}), on copies of its own."""',
        "    model = copy.deepcopy(model)",
        "    args, kwargs = cloned(inputs)",
    ]
    if finding.case.dynamic is not None:
        lines.append("    dynamic = dynamic_shapes(model, args, kwargs)")
        extra, dynamo_extra = ", dynamic_shapes=dynamic", ", dynamic_shapes=dynamic"
        constraints = ", constraints=constraints"
        if finding.capture == "dynamo":  # as torch.export derives them for its own capture
            lines += [
                "    shapes = torch.export.dynamic_shapes",
                "    combined = shapes._combine_args(model, args, kwargs)",
                "    constraints = shapes._process_dynamic_shapes(combined, dynamic)",
            ]
    if finding.preserved:
        extra += f", preserve_module_call_signature={finding.preserved!r}"
    call = CAPTURES[finding.capture].format(
        extra=extra, dynamo_extra=dynamo_extra, constraints=constraints
    )
    if finding.capture == "dynamo":
        lines.insert(2, "    import torch._dynamo.functional_export")
    if finding.capture == "dynamo-legacy":
        lines.append("    torch._dynamo.reset()  # each capture from an empty cache, as the item's")
    lines += ["    seed_everything(SEED)", f"    return {call}"]
    text = "\n".join(lines)
    if finding.case.dynamic is not None:
        text = f"{dims_source(finding.case.dynamic)}\n\n\n{SHAPES.strip()}\n\n\n{text}"
    return text


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
