"""A case's ``preserve_signatures:`` checked against the model it builds.

The names go to ``torch.export.export(..., preserve_module_call_signature=...)``,
which takes any string: a misspelt FQN is only met deep in export, or not at
all. So each name must be a submodule of the built eager model, and one that is
not is the case's error at the key's line, with the model's own names to pick
from. A name may be an ``fnmatch`` pattern (``blocks.*.attn``: every block's attention
of a ViT), which must match at least one submodule.
"""

from __future__ import annotations

import difflib
import fnmatch

import torch

from pytest_exportcheck.containment.failures import CaseError
from pytest_exportcheck.spec import Case

_NAMES_SHOWN = 8  # a transformer has hundreds of submodules; the start says what they look like


def preserved_names(case: Case, model: torch.nn.Module) -> tuple[str, ...]:
    """The submodules of ``model`` the case's ``preserve_signatures`` names, in the model's
    order (a pattern, ``blocks.*.attn``, names each submodule it matches)."""
    return tuple(name for name, _ in model.named_modules() if name and case.preserves(name))


def check_preserved(case: Case, model: torch.nn.Module) -> None:
    """Raise :class:`CaseError` at the key's line where a name, or a pattern, names no
    submodule of ``model``."""
    if not case.preserve_signatures:
        return
    known = [name for name, _ in model.named_modules() if name]
    wrong = [
        pattern
        for pattern in case.preserve_signatures
        if not any(fnmatch.fnmatchcase(name, pattern) for name in known)
    ]
    if not wrong:
        return
    name = wrong[0]
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    shown = ", ".join(known[:_NAMES_SHOWN])
    if len(known) > _NAMES_SHOWN:
        shown += f" ... and {len(known) - _NAMES_SHOWN} more"
    raise CaseError(
        f"{case.at(case.preserve_signatures_line)}: preserve_signatures names {name!r}, "
        f"which {'matches' if '*' in name or '?' in name else 'is'} no submodule of the "
        f"model{hint}; its submodules: {shown or '(none)'}"
    )
