"""Crash breadcrumbs and the crash log: what a dead worker was doing, and what it condemns."""

from __future__ import annotations

import dataclasses
import signal
from pathlib import Path

import pytest

from pytest_exportcheck.containment.crashes import (
    Breadcrumb,
    Crash,
    CrashLog,
    Where,
    WorkerCrash,
    doing,
)

SUBJECT = ("cases/a.yaml", "lm", "cpu")
CAPTURE = (*SUBJECT, "dynamo")
ITEM = "cases/a.yaml::lm::parity[dynamo-cpu]"


def crash(stage: str, key: tuple[str, ...] | None) -> Crash:
    return Crash("gw1", ITEM, "cases/a.yaml:7", stage, key)


def test_a_breadcrumb_reads_back_the_innermost_stage(tmp_path: Path) -> None:
    trail = Breadcrumb(tmp_path / "gw1.at")
    trail.start(ITEM, "cases/a.yaml:7", [("exportcheck_case", "lm")])
    with trail.at("case", SUBJECT), trail.at("capture", CAPTURE):
        # what the controller finds if the worker dies right here
        found = Breadcrumb.read(tmp_path / "gw1.at", "gw1")
    assert found is not None
    assert found.peak_rss is not None and found.peak_rss > 0  # this process's, measured
    assert dataclasses.replace(found, peak_rss=None) == Crash(
        "gw1", ITEM, "cases/a.yaml:7", "capture", CAPTURE, (("exportcheck_case", "lm"),)
    )


def test_a_worker_killed_by_sigkill_is_named_likely_out_of_memory() -> None:
    crash = Crash(
        "gw1", ITEM, "cases/a.yaml:7", "mutation", None, unit=CAPTURE, peak_rss=3 << 30,
        signal=signal.SIGKILL,
    )  # fmt: skip
    assert crash.condemns() == CAPTURE  # its capture's next heavy item would be killed too
    assert (
        "died in the mutation stage of this item (killed by SIGKILL, likely the kernel's "
        "out-of-memory killer); its peak memory when last measured: 3.0 GiB"
    ) in crash.describe()
    aborted = dataclasses.replace(crash, signal=signal.SIGABRT)
    assert aborted.condemns() is None  # a crash inside a check condemns only its item
    assert "(killed by SIGABRT)" in aborted.describe()


def test_leaving_a_stage_restores_the_outer_one_even_after_a_longer_record(
    tmp_path: Path,
) -> None:
    trail = Breadcrumb(tmp_path / "gw1.at")
    trail.start(ITEM, "cases/a.yaml:7", [])
    with trail.at("capture", CAPTURE):
        pass
    found = Breadcrumb.read(tmp_path / "gw1.at", "gw1")
    assert found is not None and (found.stage, found.key) == ("setup", None)


def test_without_a_file_a_breadcrumb_does_nothing() -> None:
    trail = Breadcrumb(None)
    trail.start(ITEM, "cases/a.yaml:7", [])
    with trail.at("eager", SUBJECT):
        pass


def test_a_worker_that_died_before_any_item_left_no_breadcrumb(tmp_path: Path) -> None:
    assert Breadcrumb.read(tmp_path / "gw1.at", "gw1") is None


@pytest.mark.parametrize(
    ("stage", "key", "condemned"),
    [
        ("case", SUBJECT, SUBJECT),
        ("eager", SUBJECT, SUBJECT),
        ("capture", CAPTURE, CAPTURE),
        ("parity", None, None),  # a check: only its own item crashed
        ("setup", None, None),
    ],
)
def test_what_a_crash_condemns_follows_its_stage(
    stage: str, key: tuple[str, ...] | None, condemned: tuple[str, ...] | None
) -> None:
    assert crash(stage, key).condemns() == condemned


def test_the_crashed_item_names_the_stage_and_what_is_not_run() -> None:
    assert crash("capture", CAPTURE).describe("Not properly terminated") == (
        "cases/a.yaml:7: worker gw1 died in the capture stage of this item "
        "(Not properly terminated); the process ended, so no traceback is left "
        "(run this case without -n to see Python's fault handler output); "
        "the dynamo capture's other items on cpu are not run; the rest of the run goes on"
    )
    assert "its other items run as usual" in crash("parity", None).describe()


def test_a_condemned_key_is_found_by_every_reader_of_the_log(tmp_path: Path) -> None:
    CrashLog(tmp_path).record(crash("eager", SUBJECT))
    reader = CrashLog(tmp_path)  # another process: only the directory is shared
    found = reader.find(SUBJECT)
    assert isinstance(found, WorkerCrash)
    assert found.headline == (
        f"[crashed] not run: this case killed worker gw1 in the eager stage on cpu "
        f"(while running {ITEM}); running it again would kill another worker"
    )
    assert reader.find(CAPTURE) is None  # another key: builds as usual


def test_the_items_a_crash_condemns_name_its_signal(tmp_path: Path) -> None:
    # So that an xfail's match (stage crashed) reads the signal on them as on the crash.
    CrashLog(tmp_path).record(dataclasses.replace(crash("eager", SUBJECT), signal=11))
    found = CrashLog(tmp_path).find(SUBJECT)
    assert found is not None
    assert f"on cpu (by SIGSEGV, while running {ITEM})" in found.headline


def test_the_breadcrumb_carries_the_xfail_the_controller_judges_a_crash_by(
    tmp_path: Path,
) -> None:
    xfail = {"reason": "segfaults", "strict": True, "stages": ["crashed"], "match": None}
    Breadcrumb(tmp_path / "gw1.at").start(ITEM, "cases/a.yaml:7", [], xfail=xfail)
    found = Breadcrumb.read(tmp_path / "gw1.at", "gw1")
    assert found is not None and found.xfail == xfail


def test_a_crash_inside_a_check_condemns_nothing(tmp_path: Path) -> None:
    log = CrashLog(tmp_path)
    log.record(crash("parity", None))
    assert log.by_item[ITEM].stage == "parity"
    assert list(tmp_path.glob("*.crash")) == []


def test_the_progress_line_reads_where_an_item_is_from_memory_or_the_file(
    tmp_path: Path,
) -> None:
    # One process reads its own breadcrumb; the xdist controller, each worker's file.
    for trail, where in (
        (Breadcrumb(None), lambda t: t.where()),
        (Breadcrumb(tmp_path / "gw1.at"), lambda t: Breadcrumb.where_in(tmp_path / "gw1.at")),
    ):
        trail.start(ITEM, "cases/a.yaml:7", [])
        with trail.at("parity"), trail.detail("decompose>save"):
            assert where(trail) == Where(ITEM, "parity", None, "decompose>save")
        with trail.at("capture", CAPTURE):
            assert where(trail) == Where(ITEM, "capture", CAPTURE)
        assert where(trail) == Where(ITEM, "setup")


def test_a_stage_detail_goes_to_the_breadcrumb_of_the_item_running_here() -> None:
    # raising_at (lowering) and the parity loop call doing() without a breadcrumb at hand.
    trail = Breadcrumb(None)
    trail.start(ITEM, "cases/a.yaml:7", [])
    with trail.at("lowered-aoti"), doing("lower"):
        assert trail.where() == Where(ITEM, "lowered-aoti", None, "lower")
    assert trail.where() == Where(ITEM, "setup")
