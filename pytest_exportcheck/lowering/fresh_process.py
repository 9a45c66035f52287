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
(``torch.export.load(path).module()``). The child (``fresh_child.py``) is given the
inputs through ``torch.save`` (loaded with ``weights_only=False``: they are this
run's own inputs) and writes its outputs, or the stage that raised and why, with
the warnings torch logged in the child (``load`` raises "Please check the warnings
above", and the warning names what it could not resolve).

The child runs the case's code, so it may end with no result: a ``load_imports``
module that calls ``os._exit`` or kills its process (or the fork server) at import,
a crash in native code. The item then says what the process was doing, from the
child's progress file, and how it ended (``importing load_imports module X ended
the loading process: killed by SIGKILL``); a module that calls ``sys.exit`` is named
as such. A result that cannot be read is said the same way, never the run's error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from pytest_exportcheck.containment.exit_status import describe_returncode
from pytest_exportcheck.containment.fork_server import ForkServer, can_fork
from pytest_exportcheck.lowering import artifact_cache
from pytest_exportcheck.lowering.fresh_child import CHILD, well_formed
from pytest_exportcheck.lowering.fresh_kept import keep, kept_key, read_kept

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
    # ``error`` is a whole sentence saying how the process ended (no exception raised).
    ended: bool = False


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
    fresh process gave is kept there (``fresh_kept.py``: keyed by all it depends on),
    and a later run reads it instead of starting a Python again
    (``FreshRun.from_cache`` says so).
    """
    inputs_file, result_file = directory / "inputs.pt", directory / "fresh-result.pt"
    progress = directory / "fresh-progress.txt"
    torch.save(inputs, inputs_file)
    imported = json.dumps(list(imports))
    named = json.dumps(names_here(imports))
    threads = str(torch.get_num_threads())
    cache = artifact_cache.packages() if kept else None
    key = None
    if cache is not None:
        # An imported file's text is part of what the result depends on, as its name is.
        how = [str(steps), str(seed), imported, named, threads]
        how += [Path(name).read_text() for name in imports if name.endswith(".py")]
        key = kept_key(package, inputs_file, how)
        outputs = read_kept(cache, key)
        if outputs is not None:
            return FreshRun(outputs, from_cache=True)
    argv = [loader, str(package), str(inputs_file), str(result_file), str(steps), str(seed)]
    argv += [imported, threads, named, str(progress)]
    returncode, printed, server_ended = _fresh_python(argv, directory / "fresh-output.txt")
    result, unreadable = _read(result_file)
    if result is None:
        if returncode is None and server_ended is None:
            return FreshRun(None, "run", f"no result after {CHILD_SECONDS} s")
        run = _ended(progress, returncode, server_ended, printed, unreadable)
        return replace(run, error=_as_named(run.error or "", imports))
    if "outputs" not in result:
        told = _as_named(result.get("ended", result.get("error")).strip(), imports)
        return FreshRun(None, result["stage"], told, ended="ended" in result)
    if cache is not None and key is not None:
        keep(cache, key, result["outputs"], result["files"])
    return FreshRun(result["outputs"])


def _fresh_python(argv: list[str], output: Path) -> tuple[int | None, str, int | None]:
    """Run CHILD with ``argv`` in a Python that imported torch only: a fork of the
    process's server (``containment/fork_server.py``), else a new interpreter. The exit
    status (None: killed after CHILD_SECONDS, or unknown), what it printed, and the
    fork server's exit status where the server ended meanwhile."""
    global _SERVER
    if can_fork():
        _SERVER = _SERVER or ForkServer(CHILD, TORCH_LOADERS)
        finished = _SERVER.run(argv, output, timeout=CHILD_SECONDS)
        return finished.returncode, finished.output, finished.server_ended
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, *argv], capture_output=True, text=True,
            timeout=CHILD_SECONDS,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return None, "", None
    return done.returncode, done.stderr, None


_SERVER: ForkServer | None = None
# torch's own modules that loading a saved program imports (measured on 2.13: 1.5 s of
# a fresh load); a server preloads them, as a serving process has by its first request.
TORCH_LOADERS = ("torch._export.serde.serialize", "torch.export._unlift", "torch.fx.graph_module")


def names_here(imports: tuple[str, ...]) -> dict[str, list[str]]:
    """Each imported ``.py`` file's module names in this process: the plugin imports a
    model file under a name of its own (``model/targets.py``), and what this process
    pickles into a program (its example inputs) names that module."""
    files = {Path(name).resolve(): name for name in imports if name.endswith(".py")}
    # Resolving every module's file costs ~0.1 s where torch is imported (2000 modules,
    # a realpath each), paid by every lowered item: only a file that could be one of
    # ours is resolved, by its name (a linked folder keeps it) or being a link itself.
    names = {path.name for path in files} | {Path(name).name for name in files.values()}
    named: dict[str, list[str]] = {}
    for module_name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not isinstance(file, str) or not file.endswith(".py"):
            continue
        if os.path.basename(file) not in names and not os.path.islink(file):
            continue
        try:
            path = Path(file).resolve()
        except OSError:
            continue
        if path in files:
            named.setdefault(files[path], []).append(module_name)
    return {name: sorted(found) for name, found in named.items()}


def _read(result_file: Path) -> tuple[dict[str, Any] | None, str]:
    """The child's result, or None and why it could not be read ("" where none was
    written)."""
    if not result_file.exists():
        return None, ""
    try:
        result = torch.load(result_file, weights_only=False)
    except Exception as exc:  # a process ended while writing it
        first = (str(exc).strip().splitlines() or [""])[0]
        return None, f"its result could not be read ({type(exc).__name__}: {first})"
    if not well_formed(result):
        return None, "its result was not one it writes"
    return result, ""


def _ended(
    progress: Path, returncode: int | None, server_ended: int | None, printed: str, unreadable: str
) -> FreshRun:
    """The process ended with no result: what it was doing (its progress file's last
    line) and how it ended."""
    try:
        lines = progress.read_text(errors="replace").splitlines()
    except OSError:
        lines = []
    last_step = lines[-1] if lines else "load|starting, before torch was imported"
    stage, _, doing = last_step.partition("|")
    if server_ended is None:
        told = f"{doing} ended the loading process: {describe_returncode(returncode)}"
    else:
        # The server only waits while a child runs: what ended it is most likely what
        # the child imported (it may have gone on a little before it was taken along).
        prefix = "load|importing load_imports module "
        modules = [line.removeprefix(prefix) for line in lines if line.startswith(prefix)]
        after = f" after importing load_imports module {', '.join(modules)}," if modules else ""
        after = "" if last_step.startswith(prefix) else after  # said by "while importing"
        server = describe_returncode(server_ended)
        told = (
            f"the fork server that loads programs ended ({server}){after} "
            f"while {doing}: the loading process went with it (a new server loads the next "
            "item's)"
        )
    if unreadable:
        told += f"; {unreadable}"
    last = printed.strip().splitlines()
    if last:
        told += f"\nits last output: {last[-1][:300]}"
    return FreshRun(None, stage if stage in ("load", "run") else "load", told, ended=True)


def _as_named(text: str, imports: tuple[str, ...]) -> str:
    """``text`` with each imported file's absolute path (what the child was given) as
    the case would write it: relative to the working directory, where it is below it."""
    for name in imports:
        if name.endswith(".py") and Path(name).is_absolute():
            try:
                shown = str(Path(name).relative_to(Path.cwd()))
            except ValueError:
                continue
            text = text.replace(name, shown)
    return text
