"""A lowered artifact loaded and run in a fresh interpreter, as a server loads it.

The process that lowered a program has imported the model's code, registered its
pytree nodes and custom ops, and holds torch's caches: an artifact that loads there
may not load anywhere else (huggingface/transformers#27871: an output type
registered only in the saving process). So the artifact is also loaded by a new
``python`` that imports torch, then only what the case's ``load_imports:`` names
(what a server that loads it imports: the library that registers its custom ops,
the module that registers its output types), and called on the case's inputs over
the same steps; its outputs come back through a file for the check to compare
with eager's.

Two loaders: ``aoti`` (``torch._inductor.aoti_load_package``) and ``saved``
(``torch.export.load(path).module()``). The child is given the inputs through
``torch.save`` (loaded with ``weights_only=False``: they are this run's own inputs)
and writes ``{"outputs": [...]}`` or ``{"error": "<stage>: <message>"}``, the message
with the warnings torch logged in the child (kept by a handler there: ``load``
raises "Please check the warnings above", and the warning names what it could not
resolve).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from pytest_exportcheck.lowering.fork_server import ForkServer, can_fork

# Run by the child: torch, the case's load_imports, the artifact and the inputs.
CHILD = """
import importlib, importlib.util, json, logging, random, sys, traceback, types
import torch

loader, package, inputs_file, result_file, steps, seed, imports, threads, named = sys.argv[1:10]
torch.set_num_threads(int(threads))  # the parent's: another reduces in another order

# torch's warnings, each with the exceptions it carries, root cause first: load raises
# "Please check the warnings above", and the warning holds the reason (the custom op
# it could not resolve, the pytree type not registered here). Read where every record
# meets its handlers: torch's loggers do not propagate ("torch.export" has its own).
kept_lines = []
call_handlers = logging.Logger.callHandlers

def keep(logger, record):
    if record.levelno >= logging.WARNING and record.name.split(".")[0] == "torch":
        try:
            message = record.getMessage()
        except Exception:  # torch's own malformed records (two %s, one argument)
            message = str(record.msg) + " " + repr(record.args)
        kept_lines.append(record.levelname + " " + record.name + ": " + message)
        chain, exc = [], record.exc_info[1] if record.exc_info else None
        while exc is not None and len(chain) < 5:
            chain.append(exc)
            exc = exc.__cause__ or exc.__context__
        for exc in reversed(chain):
            first = (str(exc).strip().splitlines() or ["(no message)"])[0]
            kept_lines.append("  " + type(exc).__name__ + ": " + first)
    call_handlers(logger, record)

logging.Logger.callHandlers = keep

def fail(stage, prefix=""):
    error = "".join(traceback.format_exception_only(*sys.exc_info()[:2])).strip()
    if kept_lines:
        error += "\\ntorch logged meanwhile:" + "".join(
            "\\n  " + (line if len(line) <= 300 else line[:299] + "…") for line in kept_lines
        )
    torch.save({"error": stage + ": " + prefix + error}, result_file)
    sys.exit(0)

for name in json.loads(imports):
    try:
        if name.endswith(".py"):  # a file, run as a module beside its siblings
            folder, _, file = name.rpartition("/")
            sys.path.insert(0, folder)
            spec = importlib.util.spec_from_file_location("_exportcheck_" + file[:-3], name)
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            # Also under the names the checking process gave the file: what it pickled
            # (a dataclass example input, an output type) names the module so.
            for alias in json.loads(named).get(name, []):
                sys.modules[alias] = module
                parent, _, child = alias.rpartition(".")
                while parent:
                    try:
                        importlib.import_module(parent)
                    except ImportError:  # a package of the checking process's own making
                        sys.modules[parent] = types.ModuleType(parent)
                        sys.modules[parent].__path__ = []
                    setattr(sys.modules[parent], child, sys.modules[parent + "." + child])
                    parent, _, child = parent.rpartition(".")
            spec.loader.exec_module(module)
        else:
            importlib.import_module(name)
    except Exception:
        fail("load", "importing " + name + " (load_imports): ")
try:
    if loader == "aoti":
        loaded = torch._inductor.aoti_load_package(package)
    else:
        loaded = torch.export.load(package).module()
except Exception:
    fail("load")
outputs = []
for _ in range(int(steps)):
    args, kwargs = torch.load(inputs_file, weights_only=False)  # fresh copies each call
    random.seed(int(seed))
    torch.manual_seed(int(seed))
    try:
        with torch.no_grad():
            output = loaded(*args, **kwargs)
    except Exception:
        fail("run")
    # Flat, with the structure as text: the output's types may be this process's
    # only (a dataclass of a module imported here), which the parent cannot unpickle.
    leaves, spec = torch.utils._pytree.tree_flatten(output)
    outputs.append((leaves, str(spec)))
torch.save({"outputs": outputs}, result_file)
"""

# What a kept result holds: each call's output leaves and its structure as text.
FORMAT = "leaves-and-spec"

# A fresh interpreter imports torch (~2-5 s here) before it loads anything.
CHILD_SECONDS = 300


@dataclass
class FreshRun:
    """What the fresh process gave: each step's output as its leaves and its structure's
    text (``str`` of its pytree spec), or the stage that raised and why."""

    outputs: list[tuple[list[Any], str]] | None
    stage: str | None = None
    error: str | None = None
    from_cache: bool = False  # what an earlier run's fresh process gave for the same package


def run_in_fresh_process(
    package: Path,
    inputs: tuple[tuple[Any, ...], dict[str, Any]],
    *,
    loader: str,
    imports: tuple[str, ...],
    steps: int,
    seed: int,
    directory: Path,
    kept: bool = False,
) -> FreshRun:
    """Load ``package`` in a new ``python`` with ``loader`` (``aoti`` or ``saved``), after
    importing ``imports`` (module names, or absolute paths of ``.py`` files); the files
    it exchanges go in ``directory`` (the item's own: a cached package is shared
    between workers).

    ``kept``: the package lives in the run's cache (``artifact_cache.py``), so what the
    fresh process gave is kept beside it, under the digest of the inputs, steps and
    seed, and a later run with the same package and inputs reads it instead of
    starting a Python again (``FreshRun.from_cache`` says so).
    """
    inputs_file, result_file = directory / "inputs.pt", directory / "fresh-result.pt"
    torch.save(inputs, inputs_file)
    imported = json.dumps(list(imports))
    named = json.dumps(names_here(imports))
    # An imported file's text is part of what the result depends on, as its name is.
    how = [FORMAT, str(steps), str(seed), imported, named]
    how += [Path(name).read_text() for name in imports if name.endswith(".py")]
    kept_file = _kept_result(package, inputs_file, "\n".join(how)) if kept else None
    if kept_file is not None and kept_file.is_file():
        return _read(kept_file, from_cache=True)
    argv = [loader, str(package), str(inputs_file), str(result_file), str(steps), str(seed)]
    argv += [imported, str(torch.get_num_threads()), named]
    returncode, printed = _fresh_python(argv, directory / "fresh-output.txt")
    if returncode is None:
        return FreshRun(None, "run", f"no result after {CHILD_SECONDS} s")
    if not result_file.exists():
        last = (printed.strip().splitlines() or [f"exit status {returncode}"])[-1]
        return FreshRun(None, "load", f"the process ended without a result: {last}")
    run = _read(result_file, from_cache=False)
    if kept_file is not None:
        partial = kept_file.with_name(f"{kept_file.name}.{os.getpid()}.partial")
        kept = (
            {"outputs": run.outputs}
            if run.error is None
            else {"error": f"{run.stage}: {run.error}"}
        )
        torch.save(kept, partial)
        os.replace(partial, kept_file)  # atomic: another worker may read it
    return run


def _fresh_python(argv: list[str], output: Path) -> tuple[int | None, str]:
    """Run CHILD with ``argv`` in a Python that imported torch only: a fork of the
    process's server (``fork_server.py``), else a new interpreter. The exit status
    (None: killed after CHILD_SECONDS) and what it printed."""
    global _SERVER
    if can_fork():
        _SERVER = _SERVER or ForkServer(CHILD, TORCH_LOADERS)
        finished = _SERVER.run(argv, output, timeout=CHILD_SECONDS)
        return finished.returncode, finished.output
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, *argv], capture_output=True, text=True,
            timeout=CHILD_SECONDS,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return None, ""
    return done.returncode, done.stderr


_SERVER: ForkServer | None = None
# torch's own modules that loading a saved program imports (measured on 2.13: 1.5 s of
# a fresh load); a server preloads them, as a serving process has by its first request.
TORCH_LOADERS = ("torch._export.serde.serialize", "torch.export._unlift", "torch.fx.graph_module")


def names_here(imports: tuple[str, ...]) -> dict[str, list[str]]:
    """Each imported ``.py`` file's module names in this process: the plugin imports a
    model file under a name of its own (``model/targets.py``), and what this process
    pickles into a program (its example inputs) names that module."""
    files = {Path(name).resolve(): name for name in imports if name.endswith(".py")}
    named: dict[str, list[str]] = {}
    for module_name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not file or not file.endswith(".py"):
            continue
        try:
            path = Path(file).resolve()
        except OSError:
            continue
        if path in files:
            named.setdefault(files[path], []).append(module_name)
    return {name: sorted(found) for name, found in named.items()}


def _kept_result(package: Path, inputs_file: Path, how: str) -> Path:
    digest = hashlib.sha256(inputs_file.read_bytes())
    digest.update(f"{how} {torch.__version__}".encode())
    return package.with_name(f"{package.stem}.fresh-{digest.hexdigest()[:32]}.pt")


def _read(result_file: Path, *, from_cache: bool) -> FreshRun:
    result = torch.load(result_file, weights_only=False)
    if "error" in result:
        stage, _, error = result["error"].partition(": ")
        return FreshRun(None, stage, error.strip(), from_cache=from_cache)
    return FreshRun(result["outputs"], from_cache=from_cache)
