"""Resolve ``target`` strings of case files to Python objects.

Two spellings, both ``<where>:<attribute path>``:

* ``models/lm.py:TinyLM`` — a file relative to the YAML file that names it;
* ``package.module:attr`` — anything importable.

A file is executed once per process, whoever imports it: a model file that
registers a custom op at import (``torch.library.define``) fails the second
time, and a second copy's classes are not the user's (``isinstance`` fails). So
a file target is, in this order, the module already imported from that file
(by a conftest or a test), the module of the name it is importable under from
``sys.path`` (so a later ``import`` of that name finds it), or else a module of
a stable synthetic name that two case files naming the file share (picklable,
without putting the case directory on ``sys.path``).
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from pytest_exportcheck.containment.failures import exception_text
from pytest_exportcheck.containment.user_exits import is_user_exit


class TargetError(Exception):
    """A target that cannot be imported or does not name an attribute."""


def resolve_target(target: str, base_dir: Path) -> Any:
    where, _, attr_path = target.rpartition(":")
    if not where or not attr_path:
        raise TargetError(f"target {target!r} must look like 'file.py:Attr' or 'pkg.mod:attr'")
    module = _import_file(base_dir / where) if where.endswith(".py") else _import_module(where)
    obj: Any = module
    walked = []
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            owner = ".".join(walked) or where
            raise TargetError(
                f"target {target!r}: {owner!r} has no attribute {part!r}{_did_you_mean(obj, part)}"
            ) from None
        walked.append(part)
    return obj


def resolve_callable(target: str, base_dir: Path) -> Any:
    obj = resolve_target(target, base_dir)
    if not callable(obj):
        raise TargetError(f"target {target!r} is a {type(obj).__name__}, not callable")
    return obj


def _import_module(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except BaseException as exc:  # a module may raise anything while it executes
        if not isinstance(exc, Exception) and not is_user_exit(exc):
            raise  # Ctrl-C, the item's time limit
        failure = f"{type(exc).__name__}: {exception_text(exc)}"
        raise TargetError(f"cannot import {name!r}: {failure}") from exc


def _did_you_mean(owner: Any, wrong: str) -> str:
    """``; did you mean 'ResNet18'?`` from the owner's public names, case aside."""
    names = [name for name in dir(owner) if not name.startswith("_")]
    by_lower = {name.lower(): name for name in names}
    close = difflib.get_close_matches(wrong.lower(), list(by_lower), n=1, cutoff=0.75)
    return f"; did you mean {by_lower[close[0]]!r}?" if close else ""


def _import_file(path: Path) -> ModuleType:
    path = path.resolve()
    if not path.is_file():
        raise TargetError(f"model file {path} does not exist")
    existing = _already_imported(path) or _import_by_name(path)
    if existing is not None:
        return existing
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    name = f"{_PARENT}.{path.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    parent = _parent_package()
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    # Registered before execution so dataclasses, pickling and deepcopy can find it.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        del sys.modules[name]
        if not isinstance(exc, Exception) and not is_user_exit(exc):
            raise  # Ctrl-C, the item's time limit
        failure = f"{type(exc).__name__}: {exception_text(exc)}"
        raise TargetError(f"importing {path} raised {failure}") from exc
    setattr(parent, name.rpartition(".")[2], module)
    return module


def _already_imported(path: Path) -> ModuleType | None:
    """A module a conftest or test already made from this file, under any name."""
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if file and file.endswith(path.name) and _same_file(file, path):
            return module
    return None


def _import_by_name(path: Path) -> ModuleType | None:
    """The file imported under the dotted names ``sys.path`` gives it, so that the user's
    own later ``import`` finds this very module.

    One file may be importable under several names (``shared_models`` with ``cases/`` on
    the path, ``cases.shared_models`` with the rootdir): it is imported under the
    shortest, and the module is registered under the others too.
    """
    names = []
    for entry in sys.path:
        try:
            relative = path.relative_to(Path(entry or ".").resolve())
        except (OSError, ValueError):
            continue
        parts = relative.with_suffix("").parts
        if all(part.isidentifier() for part in parts) and ".".join(parts) not in names:
            names.append(".".join(parts))
    importable = [name for name in sorted(names, key=lambda n: n.count(".")) if _finds(name, path)]
    if not importable:
        return None
    module = _import_module(importable[0])
    for alias in importable[1:]:
        sys.modules.setdefault(alias, module)
    return module


def _finds(name: str, path: Path) -> bool:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    return spec is not None and bool(spec.origin) and _same_file(spec.origin, path)


def _same_file(file: str, path: Path) -> bool:
    try:
        return Path(file).resolve() == path
    except OSError:
        return False


_PARENT = "_exportcheck_models"


def _parent_package() -> ModuleType:
    """A namespace for file-target modules, so pickle can import ``parent.child`` back."""
    parent = sys.modules.get(_PARENT)
    if parent is None:
        parent = ModuleType(_PARENT, "Modules imported from case files' file.py:Attr targets.")
        parent.__path__ = []
        sys.modules[_PARENT] = parent
    return parent
