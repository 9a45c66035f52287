"""How the scaffold stops: at which stage, and the message shortened for a terminal."""

from __future__ import annotations


class ScaffoldError(Exception):
    """Scaffolding stopped at ``stage`` (case / eager / internal); nothing was written."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(message)
        self.stage = stage
        self.message = message

    def render(self, full: bool = False) -> str:
        return f"exportcheck new: [{self.stage}] {self.message if full else condense(self.message)}"


def condense(message: str) -> str:
    """A failure's first line, the ``- `` lines right under it (why torch refused each
    dynamic dim, and its fix), and the user-code frame that raised it: one paragraph.

    The plugin's messages carry up to a dozen lines of the exception (Dynamo's
    are long); the scaffold's user needs what failed and where, then decides
    whether to ask for more (``--traceback``).
    """
    lines = message.strip().splitlines()
    if not lines:
        return "(no message)"
    reasons = 0
    while reasons + 1 < len(lines) and lines[reasons + 1].startswith("- "):
        reasons += 1
    kept = [lines[0], *(f"  {line}" for line in lines[1 : reasons + 1])]
    if "raised from user code:" in lines[1:]:
        kept += lines[lines.index("raised from user code:", 1) :]
    elif len(lines) > reasons + 1:
        kept.append(f"  ... ({len(lines) - reasons - 1} more lines with --traceback)")
    return "\n".join(kept)
