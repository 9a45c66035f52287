"""Writing hostile cases: each beside the good case, which must still pass."""

from __future__ import annotations

import textwrap

import pytest


def hostile_case(name: str, target: str, **options: str) -> str:
    """One case of ``hostile.py:TARGET``; each option is a YAML line of the case."""
    lines = [
        f"  {name}:",
        "    description: hostile",
        f"    model: {target}",
        "    inputs: {args: [{shape: [2, 4]}]}",
        *[f"    {key}: {value}" for key, value in options.items()],
    ]
    return "\n".join(lines) + "\n"


GOOD = hostile_case("good", "{target: hostile.py:Good}", captures="[export]", checks="[parity]")


def write_hostile(pytester: pytest.Pytester, *cases: str) -> None:
    """A case file with ``cases`` and the good case after them (it must still pass)."""
    text = "cases:\n" + "".join(cases) + GOOD
    (pytester.path / "cases" / "hostile.yaml").write_text(textwrap.dedent(text))
