"""The documentation's code blocks and shell commands, for the tests that run them.

A block is a fenced block of README.md or a page of docs/, with the ``<!-- example:
LABEL -->`` comment above it if it has one. A command is a line a reader would type:
every line of a ``bash``/``sh`` block (``$ `` prompts dropped, ``\\``
continuations joined, a trailing ``# comment`` cut), a ``$ ``, ``pytest `` or
``python -m pytest_exportcheck `` line of a ``console`` block or one with no language (a
transcript or a synopsis), and every line of a ``run:`` step of a GitHub Actions workflow block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(
    r"(?:<!-- example: (?P<label>[^>]*?) -->\n)?^```(?P<lang>\w*)\n(?P<body>.*?)^```", re.S | re.M
)
SHELLS = {"bash", "sh", "shell"}
# In a block with no language, the lines that are commands rather than output.
TYPED = re.compile(r"^(?:\$ |pytest |python -m pytest_exportcheck )")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    body: str
    label: str | None

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(pages: list[Path] = PAGES) -> list[Block]:
    found = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start("lang")) + 1
            found.append(Block(page, line, match["lang"], match["body"], match["label"] or None))
    return found


def labelled(label: str) -> Block:
    (block,) = [b for b in blocks() if b.label == label]
    return block


def contains_in_order(lines: list[str], expected: list[str]) -> bool:
    """``expected`` appears in ``lines`` as consecutive lines (trailing blanks ignored)."""
    lines = [line.rstrip() for line in lines]
    expected = [line.rstrip() for line in expected]
    return any(
        lines[start : start + len(expected)] == expected
        for start in range(len(lines) - len(expected) + 1)
    )


@dataclass
class Command:
    """One command as the pages write it, with every place that shows it."""

    text: str
    places: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.text!r} ({', '.join(self.places)})"


def without_comment(line: str) -> str:
    """``line`` up to a ``#`` that starts a shell comment (outside quotes, after a blank)."""
    quote = None
    for index, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index].rstrip()
    return line.rstrip()


def _shell_lines(body: str) -> list[tuple[int, str]]:
    """(offset, line) of each logical line: continuations joined, comments cut."""
    found, pending, start = [], "", 0
    for offset, raw in enumerate(body.splitlines()):
        if not pending:
            start = offset
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1].rstrip() + " "
            continue
        line = without_comment(pending + raw.strip())
        pending = ""
        if line:
            found.append((start, line))
    return found


def _workflow_runs(block: Block) -> list[tuple[int, str]]:
    try:
        workflow = yaml.safe_load(block.body)
    except yaml.YAMLError:
        return []
    if not isinstance(workflow, dict) or not isinstance(workflow.get("jobs"), dict):
        return []
    found = []
    for job in workflow["jobs"].values():
        for step in job.get("steps", []) if isinstance(job, dict) else []:
            if not isinstance(step, dict) or "run" not in step:
                continue
            body_lines = block.body.splitlines()
            first = str(step["run"]).splitlines()[0]
            offset = next((i for i, line in enumerate(body_lines) if first in line), 0)
            found += [(offset + i, line) for i, line in _shell_lines(str(step["run"]))]
    return found


def commands(pages: list[Path] = PAGES) -> list[Command]:
    """Every command the pages show, once per text, in the order the pages show them."""
    by_text: dict[str, Command] = {}
    for block in blocks(pages):
        if block.lang in SHELLS:
            lines = [(i, line.removeprefix("$ ")) for i, line in _shell_lines(block.body)]
        elif block.lang == "yaml":
            lines = _workflow_runs(block)
        elif block.lang in ("", "console", "text"):
            lines = [
                (i, line.removeprefix("$ "))
                for i, line in _shell_lines(block.body)
                if TYPED.match(line)
            ]
        else:
            lines = []
        for offset, text in lines:
            place = f"{block.page.relative_to(ROOT)}:{block.line + 1 + offset}"
            by_text.setdefault(text, Command(text)).places.append(place)
    return list(by_text.values())
