"""The live progress line's text (``reports/live_progress.py``): what a busy item shows,
and how it fits the terminal's width."""

from __future__ import annotations

from pytest_exportcheck.containment.crashes import Where
from pytest_exportcheck.reports.live_progress import Busy, live_text, stage_text

ITEM = "cases/main.yaml::resnet::parity[export-cpu]"


def test_the_stage_reads_as_the_user_thinks_of_it() -> None:
    key = ("/abs/cases/main.yaml", "resnet", "cpu", "export-strict")
    assert stage_text(Where(ITEM, "case", key[:3])) == "build"
    assert stage_text(Where(ITEM, "capture", key)) == "capture export-strict"
    assert stage_text(Where(ITEM, "parity", None, "decompose>save")) == "parity (decompose>save)"
    assert stage_text(Where(ITEM, "lowered-aoti", None, "lower")) == "lowered-aoti (lower)"
    # Started, in no stage yet (or between two): the time alone.
    assert stage_text(Where(ITEM, "setup")) is None


def test_one_item_is_named_whole_with_its_time_and_stage() -> None:
    text = live_text([Busy(None, ITEM, 12.4, "capture export")], 120)
    assert text == f"{ITEM}: 12 s in capture export"
    assert live_text([Busy(None, ITEM, 6, None)], 120) == f"{ITEM}: 6 s"


def test_several_workers_share_the_width_file_names_going_first() -> None:
    busy = [
        Busy("gw0", ITEM, 11, "parity (saved and loaded)"),
        Busy("gw1", "cases/main.yaml::bert::signature[export-cpu]", 8, "build"),
    ]
    assert live_text(busy, 200) == (
        f"gw0 {ITEM}: 11 s in parity (saved and loaded) | "
        "gw1 cases/main.yaml::bert::signature[export-cpu]: 8 s in build"
    )
    assert live_text(busy, 120) == (
        "gw0 resnet::parity[export-cpu]: 11 s in parity (saved and loaded) | "
        "gw1 bert::signature[export-cpu]: 8 s in build"
    )
    for width in (90, 60, 40, 20):
        text = live_text(busy, width)
        assert len(text) <= width and text.startswith("gw0 ")


def test_too_narrow_or_nothing_busy_draws_nothing() -> None:
    assert live_text([Busy(None, ITEM, 6, None)], 10) == ""
    assert live_text([], 120) == ""


def test_the_text_is_ascii_so_its_width_is_its_length() -> None:
    text = live_text([Busy(None, "cases/m.yaml::caf\u00e9::parity[export-cpu]", 6, None)], 120)
    assert text == "cases/m.yaml::caf?::parity[export-cpu]: 6 s"
