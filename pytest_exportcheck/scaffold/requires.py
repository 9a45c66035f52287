"""The distributions a scaffolded case needs: ``requires:`` from where its targets come from.

A case for ``torchvision.models:resnet18`` written on a machine with
torchvision fails to build on one without it; with ``requires: [torchvision]``
its items skip there, naming what is missing. The distribution is found from
package metadata (``importlib.metadata.packages_distributions``) for every
importable target in the case (the model's and nested ``_target_`` ones);
file targets, the standard library and torch itself need no entry.
"""

from __future__ import annotations

import importlib.metadata
import sys
from typing import Any

# Always installed where the plugin runs: never worth a requires entry.
_IMPLIED = {"torch", "pytest", "pytest-exportcheck", "pytest_exportcheck"}


def requirements(model: dict[str, Any]) -> list[tuple[str, str]]:
    """``(requirement, observation)`` per distribution the case's targets import from."""
    found: dict[str, str] = {}
    for target in _targets(model):
        module, sep, _ = target.partition(":")
        if not sep or module.endswith(".py"):
            continue  # a file target: the user's own code
        top = module.split(".")[0]
        if top in sys.stdlib_module_names:
            continue
        for dist in importlib.metadata.packages_distributions().get(top, []):
            if dist in _IMPLIED or dist in found:
                continue
            try:
                version = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:  # pragma: no cover - metadata race
                continue
            found[dist] = (
                f"{target} comes from {dist}, {version} here; add a minimum version "
                f'("{dist}>={version}") if older ones cannot build it'
            )
    return list(found.items())


def _targets(value: Any) -> list[str]:
    """The model's ``target`` and every ``_target_`` nested in its arguments."""
    if isinstance(value, list):
        return [t for v in value for t in _targets(v)]
    if not isinstance(value, dict):
        return []
    own = [value[k] for k in ("target", "_target_") if isinstance(value.get(k), str)]
    return own + [
        t for k, v in value.items() if k not in ("target", "_target_") for t in _targets(v)
    ]
