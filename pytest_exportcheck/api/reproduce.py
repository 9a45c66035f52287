"""``check_model(repro=DIR)``: a failure's plain-torch script, for a model given from Python.

The items' own reproductions (``items/reproductions.py``) do the writing and the run;
what a given model adds is its file: the caller's model and inputs, as given (the
runs only ever touched private copies), pickled with ``torch.save`` beside the script
that loads them (``repro/given.py``). A model pickle cannot hold (a class defined in a
function, a lambda attribute, a class of ``__main__``) gets no script, and its item's
``repro_outcome`` says why.
"""

from __future__ import annotations

import io
import os
import pickle
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from pytest_exportcheck.items.reproductions import Reproductions
from pytest_exportcheck.model.subject import Inputs
from pytest_exportcheck.recordings.atomic import write_atomically
from pytest_exportcheck.repro.given import Given, NotSaved

# Classes whose modules a fresh interpreter finds by itself.
_INSTALLED = tuple({sys.prefix, sys.base_prefix, os.path.dirname(torch.__file__)})


def reproductions(
    repro: str | os.PathLike[str] | None, run: bool, cwd: Path | None = None
) -> Reproductions | None:
    """One call's reproductions under ``repro`` (relative to the working directory)."""
    if repro is None:
        return None
    if not isinstance(repro, (str, os.PathLike)) or not str(repro):
        raise TypeError(f"repro must be a directory path, not {repro!r}")
    here = Path.cwd() if cwd is None else cwd
    return Reproductions((here / repro).resolve(), run=bool(run), cwd=here)


def given(call: str) -> Given:
    """What names the call's scripts apart (the directories come with the file: :func:`saver`)."""
    return Given(call=call)


def saver(model: torch.nn.Module, inputs: Inputs) -> Callable[[Path], tuple[str, ...]]:
    """Writes the caller's ``model`` and ``inputs``, as given, to a path (atomically);
    returns the directories the classes it names import from."""
    args, kwargs = inputs

    def save(path: Path) -> tuple[str, ...]:
        payload = {"model": model, "args": tuple(args), "kwargs": dict(kwargs)}
        data, named, why = pickled(payload)
        if data is None:  # which of them it is, in pickle's own words
            model_why = pickled(model)[2]
            if model_why is None:
                raise NotSaved(f"the inputs cannot be pickled for the script to load: {why}")
            raise NotSaved(_model_why(model, model_why))
        if "__main__" in named:  # pickled here, but a script is its own __main__
            raise NotSaved(
                f"{named['__main__']} is defined in __main__, which the script cannot "
                "import: define it in a module"
            )
        write_atomically(path, data)
        return tuple(dict.fromkeys(_roots(set(named))))

    return save


def pickled(obj: Any) -> tuple[bytes | None, dict[str, str], str | None]:
    """``torch.save(obj)``'s bytes and the modules of the classes and functions it names
    (a pickle names them by module: the script's interpreter imports each), with a
    name of each; or None, and why not."""
    named: dict[str, str] = {}

    class Recording(pickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, (type, types.FunctionType)):
                module = getattr(obj, "__module__", None) or ""
                named.setdefault(module, getattr(obj, "__qualname__", ""))
            return NotImplemented

    buffer = io.BytesIO()
    try:
        recording = types.SimpleNamespace(__name__="pickle", Pickler=Recording, dump=pickle.dump)
        torch.save(obj, buffer, pickle_module=recording)
    except Exception as exc:
        return None, named, f"{type(exc).__name__}: {exc}"
    return buffer.getvalue(), named, None


def _model_why(model: torch.nn.Module, why: str) -> str:
    for module in model.modules():
        name = type(module).__qualname__
        if "<locals>" in name:
            return (
                f"the model's class {name} cannot be pickled: it is defined in a function ({why})"
            )
    name = type(model).__qualname__
    return f"the model ({name}) cannot be pickled for the script to load: {why}"


def _roots(modules: set[str]) -> list[str]:
    """Where each module's top package lies (``a.b.c`` in ``/x/a/b/c.py``: ``/x``), for
    the user's own modules only."""
    roots = []
    for name in sorted(modules):
        module = sys.modules.get(name)
        file = getattr(module, "__file__", None)
        if not file or name == "__main__" or os.path.abspath(file).startswith(_INSTALLED):
            continue
        root = Path(file).resolve().parent
        if Path(file).name == "__init__.py":
            root = root.parent
        for _ in range(name.count(".")):
            root = root.parent
        roots.append(str(root))
    return roots
