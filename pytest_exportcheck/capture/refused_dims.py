"""Why torch refused a case's dynamic dims, read from the text of its error.

``torch.export`` (both modes) and ``torch._dynamo.export`` refuse ``dynamic_shapes``
they cannot keep with a ``ConstraintViolationError`` (wrapped in a ``UserError``)
whose text is built in ``torch/fx/experimental/symbolic_shapes.py``: a headline
naming the dims, one ``  - `` line per violated constraint, and, from
``DimConstraints.prettify_results``, a ``Suggested fixes:`` block::

    Constraints violated (src_len, tgt_len)! For more information, run with TORCH_LOGS="+dynamic".
      - You marked src_len as dynamic but your code specialized it to be a constant (7). If ...
      - You marked tgt_len as dynamic but ...
    Suggested fixes:
      src_len = 7
      tgt_len = 5

The reasons' wording varies with the torch version and the kind of guard, so
each is read by the dim it names, not by a fixed sentence: the forms below are
torch's own format strings (2.6 to 2.14). Strict export adds a ``User stack:`` under a
reason: where in the model the dim was specialized. No torch import here: the
message is text, and the unit tests feed it recorded texts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEADLINE = re.compile(r"(Constraints violated|Specializations unexpectedly required) \((.*)\)!")
# The dim a reason is about, by torch's format strings:
#   "You marked {name} as dynamic but your code specialized it to be a constant ({val})..."
#   "Not all values of {name} = {source} in the specified range {range} satisfy the
#    generated guard {guard}" / "... are valid because {name} was inferred to be ..."
#   "The values of {name} = {source} and {other} = {source} must always be equal."
#   "solving the guards generated for {name} = {source} resulted in a specialized value of {val}."
_REASON_DIM = (
    re.compile(r"^You marked (\S+) as dynamic"),
    re.compile(r"^Not all values of RelaxedUnspecConstraint\((.+?)\) "),
    re.compile(r"^Not all values of (\S+)"),
    re.compile(r"^The values of (\S+) = "),
    re.compile(r"^solving the guards generated for (\S+)"),
)
# " = L['x'].size()[1]": the input a dim was placed on, in Dynamo's spelling; the case
# names the placement already, and the reason reads better without it.
_SOURCE = re.compile(r" = (?:L|G)\[\S*")
_FRAME = re.compile(r'^\s*File "(.+)", line (\d+), in (\S+)')
_FIX = re.compile(r"^(\w+)\s*=\s*(.+)$")
_REASON_CHARS = 200


@dataclass(frozen=True)
class Frame:
    """One frame of a reason's ``User stack:`` (strict export)."""

    filename: str
    lineno: int
    name: str
    source: str


@dataclass(frozen=True)
class DimReason:
    """One refused dim: torch's first reason for it, in torch's words, and how many more."""

    dim: str
    reason: str  # torch's sentence, without the input it names (" = L['x'].size()[1]")
    more: int = 0  # further reasons torch gave for the same dim (other guards)
    stack: tuple[Frame, ...] = ()


@dataclass(frozen=True)
class Refusal:
    """What torch said when it refused the dims: the dims, a reason each, its fixes."""

    dims: tuple[str, ...]
    reasons: tuple[DimReason, ...]
    fixes: tuple[str, ...]  # torch's ``Suggested fixes:`` lines (``src_len = 7``)

    def fixes_for(self, dim: str) -> list[str]:
        """Torch's fixes that name ``dim``: its own line, and a root torch introduced for it
        (``_dx = Dim('_dx', max=32)`` before ``dx = 2*_dx``)."""
        sides = [(m[1], m[2]) for fix in self.fixes if (m := _FIX.match(fix))]
        own = [rhs for lhs, rhs in sides if lhs == dim]
        roots = {w for rhs in own for w in re.findall(r"\b_?\w+\b", rhs)} - {dim}
        return [f"{lhs} = {rhs}" for lhs, rhs in sides if lhs == dim or lhs in roots]

    def unclaimed_fixes(self) -> list[str]:
        """Fixes no refused dim names (torch's advice about a dim it did not list)."""
        claimed = {fix for reason in self.reasons for fix in self.fixes_for(reason.dim)}
        return [fix for fix in self.fixes if fix not in claimed]


def parse_refusal(text: str) -> Refusal | None:
    """Torch's refusal in ``text`` (an exception's message, or one quoting it), or None
    where it holds no ``Constraints violated (...)!`` / ``Specializations unexpectedly
    required (...)!`` headline or no reason line under it."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _HEADLINE.search(line)), None)
    if start is None:
        return None
    headline = _HEADLINE.search(lines[start])
    assert headline is not None
    dims = tuple(d.strip() for d in headline[2].split(", ") if d.strip())
    by_dim: dict[str, list[tuple[str, list[Frame]]]] = {}
    fixes: list[str] = []
    reading_fixes = False
    current: list[Frame] | None = None
    for index, line in enumerate(lines[start + 1 :], start + 1):
        if reading_fixes:
            if not line.strip() or not line[:1].isspace():
                break  # the fixes end at the blank line before torch's closing paragraph
            fixes.append(line.strip())
        elif line.strip() == "Suggested fixes:":
            reading_fixes = True
        elif line.startswith("  - "):
            reason = line[4:].strip()
            dim = _dim_of(reason)
            current = []
            by_dim.setdefault(dim or "?", []).append((reason, current))
        elif current is not None and (frame := _FRAME.match(line)):
            following = lines[index + 1] if index + 1 < len(lines) else ""
            current.append(Frame(frame[1], int(frame[2]), frame[3], following.strip()))
    if not by_dim:
        return None
    reasons = tuple(
        DimReason(dim, _shortened(found[0][0], dim), len(found) - 1, tuple(found[0][1]))
        for dim, found in by_dim.items()
    )
    return Refusal(dims, reasons, tuple(fixes))


def _dim_of(reason: str) -> str | None:
    for pattern in _REASON_DIM:
        match = pattern.match(reason)
        if match:
            return match[1]
    return None


def _shortened(reason: str, dim: str) -> str:
    """Torch's reason, its first sentence, without what the dim's name already says: the
    input it is placed on (`` = L['x'].size()[1]``) and "You marked src_len as dynamic
    but"; torch's advice after it (mark_dynamic, Dim.DYNAMIC) is about spellings a case
    does not use."""
    text = _SOURCE.sub("", reason)
    text = re.sub(rf"^You marked {re.escape(dim)} as dynamic but ", "", text)
    text = re.split(r"(?<=\))\. |(?<=\w)\. (?=[A-Z])", text, maxsplit=1)[0].rstrip(".")
    text = text[:1].lower() + text[1:] if not text.startswith(dim) else text
    return text if len(text) <= _REASON_CHARS else text[: _REASON_CHARS - 1] + "…"


def dim_line(refusal: Refusal, reason: DimReason, *, where: str = "") -> str:
    """``src_len: your code specialized it to be a constant (7); torch suggests src_len = 7``,
    one line per refused dim; ``where`` says where the model specialized it."""
    line = f"{reason.dim}: {reason.reason}"
    if reason.more:
        line += f" (and {reason.more} more guard{'s' if reason.more > 1 else ''} on it)"
    if where:
        line += f", at {where}"
    fixes = refusal.fixes_for(reason.dim)
    if fixes:
        line += f"; torch suggests {', '.join(fixes)}"
    return line
