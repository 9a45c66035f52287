"""The scaffold runs the case it wrote, and writes down what the first run would trip on.

A starter case that fails its first ``pytest --exportcheck`` teaches the user
to distrust it, yet the failures are rarely the model's fault: BatchNorm's
``num_batches_tracked`` is lifted by non-strict export only (every
consistency item of a torchvision model fails), and a train-mode CNN's
decomposed program can miss float32's default tolerance. So after writing,
the scaffold runs every item on the CPU (through :class:`CaseRun`, the Python
API's loop: the same items and messages as pytest's) and amends the file:

* a consistency row that differs → an ``accept`` entry (a known class of
  difference with its documented reason; any other row with what each capture
  showed);
* a parity or mutation mismatch within float rounding (max |error| ≤ 1e-3)
  → ``expect.parity.atol`` a notch above the observed error (a larger error is
  a wrong program, not a tolerance: it stays a failure, as an xfail);
* any other failure → an ``xfail`` scoped to that check and capture, with its
  ``stage:`` and a ``match:`` for its message.

Each amendment carries a ``# REVIEW:`` comment saying what was observed; the
run repeats (only the items that failed) until the case passes as written.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import math
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pytest_exportcheck.api.results import ItemResult
from pytest_exportcheck.capture.record import CaptureRecord
from pytest_exportcheck.checks.consistency import consistency_table, differing_rows
from pytest_exportcheck.checks.differences import classify, unread_state
from pytest_exportcheck.items.case_run import CaseRun
from pytest_exportcheck.lowering import artifact_cache
from pytest_exportcheck.scaffold.observe import quiet_torch
from pytest_exportcheck.scaffold.render import Amendment, Amendments, match_pattern
from pytest_exportcheck.spec.case import Case

# Above this a parity error is a wrong program, not float rounding: not loosened.
LARGEST_LOOSENED_ATOL = 1e-3
ROUNDS = 3  # run, amend, confirm; one more for what an amendment itself uncovers
_NUMERIC_CHECKS = ("parity", "mutation")


@contextlib.contextmanager
def _packages_kept_between_rounds() -> Iterator[None]:
    """A lowered program compiled in one round is loaded, not compiled again, in the next.

    The confirming round runs an xfailed lowering item again, and AOTInductor spends
    20-50 s of C++ on each compile (artifact_cache.py). The packages go to a scratch
    folder that ends with the scaffold: the user's pytest cache belongs to their runs.
    Inductor's own caches stay where the user keeps them. A caller that already keeps
    packages (a run inside pytest) keeps its own.
    """
    if artifact_cache.packages() is not None:
        yield
        return
    with (
        tempfile.TemporaryDirectory(prefix="exportcheck-new-") as scratch,
        artifact_cache.kept_under(Path(scratch), inductor=False),
    ):
        yield


@_packages_kept_between_rounds()
def verify(
    render: Callable[[Amendments], str],
    load: Callable[[str], Case],
    timeout: float,
    *,
    quiet: bool = True,
) -> tuple[str, Amendments]:
    """Run the case ``render`` writes, amend it until it passes; its final text and amendments.

    ``load`` reads a case text as the collector would (placed where it will be
    saved). Only the CPU runs: a starter case pins what this machine showed.
    """
    amendments = Amendments()
    text = render(amendments)
    only: set[str] | None = None
    results: dict[str, ItemResult] = {}
    trial = _InitTrial()
    rounds = done = 0
    while done < ROUNDS + rounds:
        done += 1
        # `recorded` has nothing to compare with before the file's first plugin run.
        case = load(text)
        case = dataclasses.replace(case, checks=tuple(c for c in case.checks if c != "recorded"))
        with _quiet(quiet):
            run = CaseRun(case, ["cpu"], timeout or None, "--timeout")
            ran = run.run(only)
            failed = [r for r in ran if r.outcome == "failed"]
            results.update({r.name: r for r in ran})
            rerun = trial.step(amendments, failed, case)
            if rerun:  # every item again, at the other init: values all change
                rounds += 1
                results, only, text = {}, None, render(amendments)
                continue
            if not failed:
                break
            changed = _amend(amendments, failed, case, run)
        if not changed:
            break
        text = render(amendments)
        only = {r.name for r in failed}
    text = render(amendments)  # the init's REVIEW says what the last run showed
    amendments.still_failing = [r.name for r in results.values() if r.outcome == "failed"]
    amendments.tally = _tally(list(results.values()), amendments)
    return text, amendments


class _InitTrial:
    """``model.init: fan_in`` where parity (or mutation) is vacuous at the model's own init.

    A zero-initialized head makes every output 0: parity cannot fail, and the item's
    message says to redraw the parameters. Rather than xfail that on every capture
    (a green case with no working parity check), the scaffold runs the case again
    with ``init: fan_in`` and keeps it if an item vacuous before is not vacuous any
    more; if none is, the case goes back to the model's own init, and what stays
    vacuous is xfailed as any other failure.
    """

    def __init__(self) -> None:
        self.vacuous: list[str] = []  # the items vacuous at the default init, while tried
        self.tried = False

    def step(self, amendments: Amendments, failed: list[ItemResult], case: Case) -> bool:
        """Start or judge the trial after a run; True when the case must run again."""
        if not self.tried and not self.vacuous:
            self.vacuous = [r.name for r in failed if _cured_by_fan_in(r)]
            if not self.vacuous or case.model.init is not None:
                self.tried = True
                return False
            first = next(r for r in failed if r.name == self.vacuous[0])
            why = re.search(r"signal \(([^()]*)\)", first.headline)
            amendments.init = Amendment({"init": "fan_in"}, why[1] if why else "")
            return True
        if self.tried:
            return False
        self.tried = True
        still = {r.name for r in failed if _vacuous(r)}
        cured = [name for name in self.vacuous if name not in still]
        if not cured:
            amendments.init = None
            return True
        assert amendments.init is not None
        amendments.init = Amendment(
            amendments.init.entry,
            f"{', '.join(cured)} vacuous at the model's own init "
            f"({_clip(amendments.init.review or 'no output carries signal', 80)}); with the "
            "parameters redrawn (fan_in) they carry signal, so parity can fail",
            tuple(cured),
        )
        return False


def _vacuous(result: ItemResult) -> bool:
    return result.check in _NUMERIC_CHECKS and "vacuous:" in (result.headline or "")


def _cured_by_fan_in(result: ItemResult) -> bool:
    """A vacuous item whose message gives ``model.init: fan_in`` as the way out."""
    return _vacuous(result) and "model.init: fan_in" in result.message


def _amend(amendments: Amendments, failed: list[ItemResult], case: Case, run: CaseRun) -> bool:
    """Add what makes each failure pass or expected; False when nothing more can be done."""
    changed = False
    for result in failed:
        if result.check == "consistency" and result.stage == "consistency":
            accepts = _accepts(case, run)
            if accepts:
                amendments.accepts += accepts
                changed = True
                continue
        if _loosenable(result, amendments):
            assert result.max_abs_err is not None
            atol = _notch_above(result.max_abs_err)
            amendments.atol = Amendment(
                {"atol": atol},
                f"observed max |error| {result.max_abs_err:.3g} in {result.name} (float32's "
                f"default atol is 1e-05); atol {atol:g} lets it pass. Raise it only as far as "
                "float rounding explains",
            )
            changed = True
            continue
        if any(result.name in a.items for a in amendments.xfails):
            continue  # already expected; a mismatch of its own would loop
        _add_xfail(amendments, result)
        changed = True
    return changed


def _accepts(case: Case, run: CaseRun) -> list[Amendment]:
    """The accept entries for every differing row no accept of the case names yet."""
    records: dict[str, CaptureRecord] = {}
    for capture in case.captures:
        try:
            records[capture] = run.capture_for("scaffold verify", "cpu", capture)
        except Exception:
            continue  # failed or unavailable: the consistency item leaves it out too
    if len(records) < 2:
        return []
    table = consistency_table(case, records)
    accepted = [a.row for a in case.expect.accepted_differences]
    rows = [
        row
        for row in differing_rows(table)
        if not any(fnmatch.fnmatchcase(row, pattern) for pattern in accepted)
    ]
    subject = next(iter(records.values())).subject
    known, unexplained = classify(rows, table, unread_state(subject), subject.tensor_groups)
    accepts = [
        Amendment(
            {"row": k.pattern, "reason": k.accept_reason},
            k.observed
            or f"observed: {len(k.rows)} tensor(s) forward never reads, lifted by "
            f"{_lifting(table[k.rows[0]])}",
        )
        for k in known
    ]
    for row in unexplained:
        cells = "; ".join(f"{capture}: {cell}" for capture, cell in table[row].items())
        accepts.append(
            Amendment(
                {"row": row, "reason": "scaffold: the captures differed here on the first run"},
                f"observed {_clip(cells, 160)}. Is this difference expected? Say why in reason",
            )
        )
    return accepts


def _lifting(cells: dict[str, str]) -> str:
    return ", ".join(capture for capture, cell in cells.items() if cell != "—") or "none"


def _loosenable(result: ItemResult, amendments: Amendments) -> bool:
    """A numeric mismatch small enough to be float rounding, not yet covered by the atol."""
    err = result.max_abs_err
    if result.check not in _NUMERIC_CHECKS or result.stage != result.check or err is None:
        return False
    if not (0 < err <= LARGEST_LOOSENED_ATOL) or math.isnan(err):
        return False
    current = amendments.atol.entry["atol"] if amendments.atol else 0.0
    return bool(_notch_above(err) > current)


def _notch_above(error: float) -> float:
    """The 1-2-5 value at least twice ``error``: 3.1e-5 → 1e-4, 4e-6 → 1e-5."""
    target = 2 * error
    exponent = math.floor(math.log10(target))
    for step in (1, 2, 5, 10):
        value = step * 10.0**exponent
        if value >= target:
            return float(f"{value:.0e}")
    return float(f"{10.0 ** (exponent + 1):.0e}")  # pragma: no cover - the loop covers 10


def _add_xfail(amendments: Amendments, result: ItemResult) -> None:
    """An xfail for this item; one entry for every capture that failed the same way."""
    entry: dict[str, Any] = {
        "reason": f"scaffold: {_clip(result.headline or result.message, 160)}",
        "checks": [result.check],
    }
    if result.check != "consistency":
        entry["captures"] = [result.capture]
    if result.stage and result.stage != "timeout":  # no xfail stage names a timeout
        entry["stage"] = result.stage.split(":")[0]
    match = match_pattern(result.headline)
    if match:
        entry["match"] = match
    same = ("checks", "stage", "match")
    for index, written in enumerate(amendments.xfails):
        if "captures" in entry and all(written.entry.get(k) == entry.get(k) for k in same):
            captures = [*written.entry["captures"], result.capture]
            items = (*written.items, result.name)
            amendments.xfails[index] = _xfail({**written.entry, "captures": captures}, items)
            return
    amendments.xfails.append(_xfail(entry, (result.name,)))


def _xfail(entry: dict[str, Any], items: tuple[str, ...]) -> Amendment:
    review = (
        f"{', '.join(items)} failed on the first run; fix the model, or keep this as its record"
    )
    return Amendment(entry, review, items)


def _tally(results: list[ItemResult], amendments: Amendments) -> str:
    counts: dict[str, int] = {}
    for result in results:
        counts[result.outcome] = counts.get(result.outcome, 0) + 1
    ran = ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items()))
    added = [
        "model.init fan_in" if amendments.init else "",
        f"{len(amendments.accepts)} accept(s)" if amendments.accepts else "",
        f"atol {amendments.atol.entry['atol']:g}" if amendments.atol else "",
        f"{len(amendments.xfails)} xfail(s)" if amendments.xfails else "",
    ]
    written = ", ".join(a for a in added if a)
    return f"ran the case on cpu: {ran}" + (
        f"; wrote {written}, each marked REVIEW" if written else ""
    )


def _clip(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


@contextlib.contextmanager
def _quiet(quiet: bool) -> Iterator[None]:
    """The model and torch print while the items run; stdout is the YAML's."""
    with contextlib.redirect_stdout(sys.stderr), quiet_torch(quiet):
        yield
