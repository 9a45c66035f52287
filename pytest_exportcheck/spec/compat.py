"""What differs between torch releases, in one place, keyed by feature rather than by version.

Two kinds of question live here:

* *Which torch is installed?* — read from the package metadata, never by
  importing torch, so case files can be filtered by ``torch: ">=2.9"`` while
  the plugin loads (``torch_version``, ``satisfies``).
* *Does this torch have feature X?* — probed on the module that would provide
  it, where the plugin is about to use it (the functions below). Callers ask
  for the feature, so a backport or a removal needs no version table.

Measured differences (from the released wheels; see the README's version notes):
``parameters_to_mutate`` on graph signatures from 2.9; ``dynamo_graph_capture_for_export``
in ``torch._dynamo.functional_export`` in recent releases only;
``torch.export.passes.move_to_device_pass`` not in every release.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib import metadata
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version


@cache
def torch_version() -> Version | None:
    """The installed torch's version from its metadata (``2.13.0+cpu``), or None if absent."""
    try:
        return Version(metadata.version("torch"))
    except (metadata.PackageNotFoundError, InvalidVersion):
        return None


def torch_minor() -> str:
    """``2.13`` for torch 2.13.0+cpu; ``unknown`` if torch is not installed."""
    version = torch_version()
    return f"{version.major}.{version.minor}" if version is not None else "unknown"


def satisfies(specifier: str) -> bool:
    """Whether the installed torch satisfies a PEP 440 specifier (pre-releases count)."""
    version = torch_version()
    if version is None:
        return False
    return SpecifierSet(specifier).contains(version, prereleases=True)


def specifier_error(specifier: str) -> str | None:
    """Why ``specifier`` is not a PEP 440 version specifier, or None if it is."""
    try:
        SpecifierSet(specifier)
    except InvalidSpecifier:
        return f"{specifier!r} is not a PEP 440 version specifier (e.g. '>=2.9', '<2.13')"
    return None


def parameters_to_mutate(signature: Any) -> dict[str, str]:
    """``parameters_to_mutate`` of a graph signature; absent (and unsupported) before 2.9."""
    return dict(getattr(signature, "parameters_to_mutate", {}))


def dynamo_graph_capture() -> Callable[..., Any] | None:
    try:
        from torch._dynamo.functional_export import dynamo_graph_capture_for_export
    except ImportError:
        return None
    return dynamo_graph_capture_for_export


def move_to_device_pass() -> Callable[..., Any] | None:
    try:
        from torch.export.passes import move_to_device_pass as move
    except ImportError:
        return None
    return move


def moved_unavailable() -> str | None:
    """Why the ``moved`` check cannot run on this torch (None: it can)."""
    if move_to_device_pass() is None:
        import torch

        return f"torch {torch.__version__} has no torch.export.passes.move_to_device_pass"
    return None
