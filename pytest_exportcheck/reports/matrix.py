"""The conformance matrix: one line per case (and device), captures as column groups.

A hundred cases under five capture paths are 3,000 items; the matrix shows
them in a hundred lines, one symbol per item, so a run's shape — which path
fails which check where — reads at a glance in a CI log. It is built from
:class:`ItemResult` alone (reports, not items), so it is the same under xdist.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_exportcheck.reports.markdown_text import md_code, md_text
from pytest_exportcheck.reports.repro_outcomes import contradicts
from pytest_exportcheck.reports.results import ItemResult
from pytest_exportcheck.spec.case import ALL_CHECKS, LOWERED_CHECKS

SYMBOLS: dict[str, str] = {
    "passed": ".",
    "passed with gaps": "g",  # passed, but its check did not verify everything (gaps.py)
    "failed": "F",
    "error": "E",
    "xfailed": "x",
    "xpassed": "X",
    "skipped": "s",
    "not_applicable": "-",
}
# A failure whose plain-torch reproduction showed nothing (--exportcheck-repro): told
# apart from F, and named in the legend only where a matrix has one.
CONTRADICTED = "?"
CONTRADICTED_LEGEND = "? failed, not reproduced in plain torch (may be the plugin's own error)"
LEGEND = "  ".join(
    f"{symbol} {'n/a' if name == 'not_applicable' else name}" for name, symbol in SYMBOLS.items()
)
# The capture paths in the README's order; a path added later sorts after them by name.
CAPTURE_ORDER: tuple[str, ...] = ("export", "export-strict", "dynamo", "dynamo-legacy", "aot-joint")
# One letter per check; "moved" cannot be M (mutation), so it is V (moVed).
CHECK_LETTERS: dict[str, str] = {
    "signature": "S",
    "hierarchy": "H",
    "mutation": "M",
    "parity": "P",
    "shapes": "D",  # dynamic dims; S is signature's
    "moved": "V",
    "mode": "N",  # M is mutation's; E is an error's symbol, never a check's; N for traiNing
    "recorded": "R",
    "consistency": "C",
    "lowered-inductor": "I",
    "lowered-aoti": "A",
    "lowered-executorch": "T",  # X is xpassed; T for (execu)Torch
    "lowered-onnx": "O",
    "lowered-saved": "L",  # S is signature's; L for (torch.export.)Load
    "loaded": "B",  # L is lowered-saved's; B for Backward compatibility
}
CONSISTENCY = "consistency"
_DEVICE_KINDS = ("cpu", "cuda", "xpu", "mps", "meta")


@dataclass
class Row:
    """One case on one device (device None: a broken case, which has none)."""

    file: str
    case: str
    line: int | None
    device: str | None
    cells: dict[tuple[str, str], str] = field(default_factory=dict)  # (capture, check) → symbol
    broken: str | None = None  # the headline of a case that could not be loaded

    def symbol(self, capture: str, check: str) -> str:
        return self.cells.get((capture, check), " ")


@dataclass
class Matrix:
    captures: list[str]
    checks: list[str]  # per-capture checks, consistency excluded
    letters: dict[str, str]
    consistency: bool  # whether any consistency item ran (one column after the captures)
    devices: list[str]
    rows: list[Row]

    @property
    def per_device(self) -> bool:
        return len(self.devices) > 1


def device_key(device: str) -> tuple[int, str, int]:
    """cpu, then cuda:0, cuda:1, …, xpu, mps, meta; unknown kinds last."""
    kind, _, index = device.partition(":")
    rank = _DEVICE_KINDS.index(kind) if kind in _DEVICE_KINDS else len(_DEVICE_KINDS)
    return rank, kind, int(index) if index.isdigit() else -1


def _capture_key(capture: str) -> tuple[int, str]:
    known = capture in CAPTURE_ORDER
    return (CAPTURE_ORDER.index(capture) if known else len(CAPTURE_ORDER), capture)


def _check_key(check: str) -> tuple[int, str]:
    order = ALL_CHECKS + LOWERED_CHECKS
    known = check in order
    return (order.index(check) if known else len(order), check)


def check_letters(checks: list[str]) -> dict[str, str]:
    """A distinct letter per check: the usual one, else the first free letter of its name."""
    letters: dict[str, str] = {}
    # A cell's outcome symbols (F, E, X...) are never a column's letter: a header reading
    # "E" over a column of "E"s would say error twice.
    taken: set[str] = {symbol for symbol in SYMBOLS.values() if symbol.isupper()}
    for check in checks:
        candidates = [CHECK_LETTERS.get(check, ""), *check.upper(), *"ABCDEFGIJKLNOQTUWXYZ"]
        letter = next(c for c in candidates if c and c.isalpha() and c not in taken)
        letters[check] = letter
        taken.add(letter)
    return letters


def symbol(result: ItemResult) -> str:
    """The item's cell: its outcome's symbol, ``g`` for a pass with gaps, ``?`` for a
    failure plain torch does not reproduce."""
    if result.outcome == "passed" and result.gaps:
        return SYMBOLS["passed with gaps"]
    if result.outcome == "failed" and contradicts(result.repro_outcome):
        return CONTRADICTED
    return SYMBOLS[result.outcome]


def build(results: list[ItemResult]) -> Matrix:
    captures: set[str] = set()
    checks: set[str] = set()
    devices: set[str] = set()
    consistency = False
    rows: dict[tuple[str, str, str | None], Row] = {}
    for result in results:
        label = row_label(result)
        key = (result.file, label, None if result.broken else result.device)
        row = rows.get(key)
        if row is None:
            row = rows[key] = Row(result.file, label, result.line, key[2])
        if result.broken:
            row.broken = result.message or "the case could not be loaded"
            continue
        assert result.check is not None
        if result.device:
            devices.add(result.device)
        if result.check == CONSISTENCY:
            consistency = True
            row.cells[("", CONSISTENCY)] = symbol(result)
            continue
        capture = result.capture or "?"
        captures.add(capture)
        checks.add(result.check)
        row.cells[(capture, result.check)] = symbol(result)
    ordered_checks = sorted(checks, key=_check_key)
    return Matrix(
        captures=sorted(captures, key=_capture_key),
        checks=ordered_checks,
        letters=check_letters([*ordered_checks, CONSISTENCY]),
        consistency=consistency,
        devices=sorted(devices, key=device_key),
        rows=sorted(
            rows.values(),
            key=lambda r: (r.file, r.line or 0, r.case, device_key(r.device or "")),
        ),
    )


def row_label(result: ItemResult) -> str:
    """What names the item's row: its node id between the file and the item's own name.

    A YAML item ``f.yaml::mlp::parity[export-cpu]`` is in row ``mlp``; a fixture call's
    item ``test_m.py::test_a::ResNet::parity[export-cpu]`` in row ``test_a::ResNet``, so
    two tests that check a model of one class (one of them deliberately xfailed) keep
    rows of their own instead of sharing one by the class name.
    """
    nodeid = result.nodeid
    if result.file and nodeid.startswith(result.file + "::"):
        nodeid = nodeid[len(result.file) + 2 :]  # the file's path may hold "::" itself
    else:
        nodeid = nodeid.split("::", 1)[-1]
    parts = nodeid.split("::")
    return "::".join(parts[:-1]) if len(parts) > 1 else result.case


def _groups(matrix: Matrix) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(header, letters, cell keys) per column group: each capture, then consistency."""
    letters = "".join(matrix.letters[check] for check in matrix.checks)
    groups = [
        (capture, letters, [(capture, check) for check in matrix.checks])
        for capture in matrix.captures
    ]
    if matrix.consistency:
        groups.append(("", matrix.letters[CONSISTENCY], [("", CONSISTENCY)]))
    return groups


def legend_lines(matrix: Matrix) -> list[str]:
    checks = [*matrix.checks, *([CONSISTENCY] if matrix.consistency else [])]
    names = "  ".join(f"{matrix.letters[check]} {check}" for check in checks)
    contradicted = any(CONTRADICTED in row.cells.values() for row in matrix.rows)
    legend = f"{LEGEND}  {CONTRADICTED_LEGEND}" if contradicted else LEGEND
    return [f"legend: {legend}  (blank: no such item)", f"checks: {names}"]


def render_text(matrix: Matrix, width: int = 120) -> list[str]:
    """The matrix as terminal lines: file headings, then one indented line per case row."""
    groups = _groups(matrix)
    label_width = max(
        [len("case"), *(len(r.file) for r in matrix.rows), *(2 + len(r.case) for r in matrix.rows)]
    )
    device_width = max([len("device"), *map(len, matrix.devices)]) if matrix.per_device else 0
    widths = [max(len(header), len(letters)) for header, letters, _ in groups]

    def line(label: str, device: str, cells: list[str]) -> str:
        parts = [label.ljust(label_width)]
        if matrix.per_device:
            parts.append(device.ljust(device_width))
        parts += [cell.ljust(w) for cell, w in zip(cells, widths, strict=False)]
        return "  ".join(parts).rstrip()

    def broken(label: str, text: str) -> str:
        parts = [label.ljust(label_width), *([" " * device_width] if matrix.per_device else [])]
        text = "  ".join([*parts, "broken: " + text])
        return text if len(text) <= width else text[: width - 1] + "…"

    lines = [*legend_lines(matrix)]
    lines.append(line("", "", [header for header, _, _ in groups]))
    lines.append(line("case", "device" if matrix.per_device else "", [g[1] for g in groups]))
    current_file = None
    for row in matrix.rows:
        if row.file != current_file:
            current_file = row.file
            lines.append(row.file)
        if row.broken is not None:
            lines.append(broken(f"  {row.case}", row.broken))
            continue
        cells = ["".join(row.symbol(*key) for key in keys) for _, _, keys in groups]
        lines.append(line(f"  {row.case}", row.device or "", cells))
    return lines


def render_markdown(matrix: Matrix) -> list[str]:
    """The matrix as a GitHub-flavoured Markdown table (blank cells shown as ·)."""
    groups = _groups(matrix)
    header = ["file", "case", *(["device"] if matrix.per_device else [])]
    header += [f"{name}<br>`{letters}`" if name else f"`{letters}`" for name, letters, _ in groups]
    if not groups:  # only broken cases: one column for what broke them
        header.append("result")
    lines = [
        *(f"{text}  " for text in legend_lines(matrix)),
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for row in matrix.rows:
        cells = [md_code(row.file), md_code(row.case)]
        if matrix.per_device:
            cells.append(row.device or "")
        if row.broken is not None:
            cells += ["**broken**: " + md_text(row.broken)] + [""] * max(0, len(groups) - 1)
        else:
            symbols = ["".join(row.symbol(*key) for key in keys) for _, _, keys in groups]
            # A capture the case does not run stays empty; a missing check inside one is ·.
            cells += [f"`{s.replace(' ', '·')}`" if s.strip() else "" for s in symbols]
        lines.append("| " + " | ".join(cells) + " |")
    return lines
