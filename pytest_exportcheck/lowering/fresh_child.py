"""What the fresh process runs (``fresh_process.py``), and the result it writes.

The child imports torch, then the case's ``load_imports``, loads the artifact and
calls it on the case's inputs; its result is a ``torch.save`` of one of

- ``{"outputs": [(leaves, spec text), ...], "files": [...]}``: each call's output,
  and every file the process imported after torch (the case's modules and whatever
  they imported: what a kept result depends on, ``fresh_kept.py``);
- ``{"stage": "load" | "run", "error": text}``: what raised, with the warnings torch
  logged meanwhile;
- ``{"stage": "load", "ended": sentence}``: a ``load_imports`` module that called
  ``sys.exit``, said as such (a server importing it would end there).

Before each step the child writes what it is doing to a progress file, at once
(``os.write``, no buffer): where the process ends with no result (a module that
calls ``os._exit`` or kills itself, a crash in native code) the last line says what
it was doing, as ``<stage>|<what>``.
"""

from __future__ import annotations

from typing import Any

# What a result holds (a kept result of another format is not read).
FORMAT = "leaves-and-spec-2"

# Run by the child: torch, the case's load_imports, the artifact and the inputs.
CHILD = """
import importlib, importlib.util, json, logging, os, random, sys, traceback, types
import torch

(loader, package, inputs_file, result_file, steps, seed, imports, threads, named,
 progress) = sys.argv[1:11]
torch.set_num_threads(int(threads))  # the parent's: another reduces in another order
before = set(sys.modules)  # what the process had before the case's imports
progress_file = os.open(progress, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

def at(stage, doing):
    # Written at once: the next line may end the process with no Python run after it.
    os.write(progress_file, (stage + "|" + doing + "\\n").encode())

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
    torch.save({"stage": stage, "error": prefix + error}, result_file)
    sys.exit(0)

for name in json.loads(imports):
    at("load", "importing load_imports module " + name)
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
    except SystemExit as exit:  # a server importing it would end here: said as such
        code = exit.code
        told = "importing load_imports module " + name + " called sys.exit(" + repr(code) + ")"
        torch.save({"stage": "load", "ended": told}, result_file)
        sys.exit(0)
    except BaseException:
        fail("load", "importing " + name + " (load_imports): ")
at("load", "loading it")
try:
    if loader == "aoti":
        loaded = torch._inductor.aoti_load_package(package)
    else:
        loaded = torch.export.load(package).module()
except Exception:
    fail("load")
outputs = []
for step in range(int(steps)):
    at("run", "calling it (call " + str(step + 1) + "/" + steps + ")")
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
at("run", "writing its result")
files = sorted({
    module.__file__ for name, module in list(sys.modules.items())
    if name not in before and isinstance(getattr(module, "__file__", None), str)
})
torch.save({"outputs": outputs, "files": files}, result_file)
"""


def well_formed(result: Any) -> bool:
    """Whether ``result`` is one the child writes (a kept one may be anything)."""
    if not isinstance(result, dict):
        return False
    if "outputs" in result:
        outputs, files = result["outputs"], result.get("files", [])
        return (
            isinstance(outputs, list)
            and all(
                isinstance(step, (tuple, list))
                and len(step) == 2
                and isinstance(step[0], list)
                and isinstance(step[1], str)
                for step in outputs
            )
            and isinstance(files, list)
            and all(isinstance(file, str) for file in files)
        )
    told = result.get("error", result.get("ended"))
    return result.get("stage") in ("load", "run") and isinstance(told, str)
