"""Resolve ``target`` strings of case files to Python objects.

Two spellings, both ``<where>:<attribute path>``:

* ``models/lm.py:TinyLM`` — a file relative to the YAML file that names it;
* ``package.module:attr`` — anything importable.

A file target is imported under a stable synthetic module name so that two
case files naming the same model file share one module (and its classes stay
picklable and comparable), without putting the case directory on ``sys.path``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any


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
            raise TargetError(f"target {target!r}: {owner!r} has no attribute {part!r}") from None
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
    except Exception as exc:  # a module may raise anything while it executes
        raise TargetError(f"cannot import {name!r}: {type(exc).__name__}: {exc}") from exc


def _import_file(path: Path) -> ModuleType:
    path = path.resolve()
    if not path.is_file():
        raise TargetError(f"model file {path} does not exist")
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
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise TargetError(f"importing {path} raised {type(exc).__name__}: {exc}") from exc
    setattr(parent, name.rpartition(".")[2], module)
    return module


_PARENT = "_exportcheck_models"


def _parent_package() -> ModuleType:
    """A namespace for file-target modules, so pickle can import ``parent.child`` back."""
    parent = sys.modules.get(_PARENT)
    if parent is None:
        parent = ModuleType(_PARENT, "Modules imported from case files' file.py:Attr targets.")
        parent.__path__ = []
        sys.modules[_PARENT] = parent
    return parent
