"""``requires:`` — the third-party distributions a case needs, checked without importing them.

A case for a Hugging Face model names ``requires: ["transformers>=4.40"]``;
where transformers is missing (or too old) its items skip, naming what is
installed, instead of failing on an import error. Like ``torch:``, the
decision reads package metadata only, so collecting a case never imports the
library.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from importlib import metadata
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement

Problem = tuple[str, list[Any]]


def requirement_problems(raw: dict[str, Any]) -> Iterator[Problem]:
    """Every ``requires`` entry that is not a PEP 508 requirement, with its path."""
    for index, text in enumerate(raw.get("requires", [])):
        try:
            requirement = Requirement(text)
        except InvalidRequirement as exc:
            yield (f"requires: {text!r} is not a requirement like 'transformers>=4.40' ({exc})",
                   ["requires", index])  # fmt: skip
            continue
        if requirement.marker is not None or requirement.url is not None:
            yield (
                f"requires: {text!r}: only a name and a version specifier are supported",
                ["requires", index],
            )


def unmet(requirements: Iterable[str]) -> str | None:
    """Why the installed distributions do not satisfy ``requirements``; None when they do."""
    for text in requirements:
        requirement = Requirement(text)
        try:
            installed = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            return f"the case needs {text} (not installed)"
        if requirement.specifier and not requirement.specifier.contains(
            installed, prereleases=True
        ):
            return f"the case needs {text}; installed: {requirement.name} {installed}"
    return None
