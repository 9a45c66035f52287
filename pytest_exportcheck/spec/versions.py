"""Torch-version conditions in case files: ``torch:`` specifiers and ``when:`` overrides.

export's surface moves every release, so one case file serves several torch
versions by saying where they differ::

    kv_cache:
      ...
      expect:
        placeholders: [...]                # what current torch lifts
      when:
        - torch: "<2.9"                    # older releases: merged over the case
          expect: {placeholders: [...]}
          xfail: {reason: ..., checks: [mutation]}
      xfail:
        - {reason: ..., torch: ">=2.14"}   # an xfail, accept entry or whole case
                                           # can carry its own specifier

Specifiers are PEP 440, matched against the installed torch read from its
metadata (``compat.torch_version``): resolving a case never imports torch.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pytest_exportcheck import compat
from pytest_exportcheck.spec.yaml_lines import LineDict

Problem = tuple[str, list[Any]]


def resolve_when(raw: LineDict) -> LineDict:
    """The case as the installed torch sees it: matching ``when`` entries applied, in order.

    ``expect`` is merged key by key, ``xfail`` entries are added, any other key
    replaces the case's. Line numbers travel with the values they came from.
    """
    merged = _copy(raw)
    for entry in raw.get("when", []):
        if not compat.satisfies(entry["torch"]):
            continue
        for key, value in entry.items():
            if key == "torch":
                continue
            if key == "expect":
                expect = _copy(merged.get("expect", LineDict()))
                expect.update(value)
                expect.key_lines.update(getattr(value, "key_lines", {}))
                merged["expect"] = expect
            elif key == "xfail":
                merged["xfail"] = [*_as_list(merged.get("xfail", [])), *_as_list(value)]
            else:
                merged[key] = value
            merged.key_lines[key] = getattr(entry, "key_lines", {}).get(key, merged.line)
    merged.pop("when", None)
    return merged


def specifier_problems(raw: dict[str, Any]) -> Iterator[Problem]:
    """Every ``torch:`` value of a case that is not a PEP 440 specifier, with its path."""
    for path, value in _specifiers(raw, []):
        error = compat.specifier_error(value)
        if error is not None:
            yield (f"torch: {error}", path)


def applies(entry: dict[str, Any]) -> bool:
    """An entry (xfail, accepted difference) without ``torch`` always applies."""
    return "torch" not in entry or compat.satisfies(entry["torch"])


def _specifiers(node: Any, path: list[Any]) -> Iterator[tuple[list[Any], str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "torch" and isinstance(value, str):
                yield [*path, key], value
            elif key in ("when", "xfail", "expect", "consistency", "accept"):
                yield from _specifiers(value, [*path, key])
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _specifiers(item, [*path, index])


def _copy(mapping: Any) -> LineDict:
    copied = LineDict(mapping)
    copied.line = getattr(mapping, "line", 1)
    copied.key_lines = dict(getattr(mapping, "key_lines", {}))
    return copied


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]
