"""The slowest-cases table: a case's time from its items', split into build, captures
and checks (``reports/slowest.py``)."""

from __future__ import annotations

from pytest_exportcheck.reports.slowest import ItemTime, case_times, item_time, render


def test_a_case_is_its_items_time_less_what_the_first_ones_built() -> None:
    (case,) = case_times(
        [
            ItemTime(
                "cases/a.yaml::resnet", "signature", 12.0, build=3.0, captured={"export": 8.0}
            ),
            ItemTime("cases/a.yaml::resnet", "parity", 2.5),
            ItemTime("cases/a.yaml::resnet", "parity", 1.5, captured={"dynamo": 1.0}),
        ]
    )
    assert case.seconds == 16.0
    assert case.build == 3.0
    assert case.captures == {"export": 8.0, "dynamo": 1.0}
    assert case.checks == {"signature": 1.0, "parity": 3.0}


def test_a_check_never_gets_less_than_nothing() -> None:
    # pytest's phase timer and the made-it timer are separate clocks
    (case,) = case_times([ItemTime("f::c", "parity", 1.0, build=1.01)])
    assert case.checks == {"parity": 0.0}


def test_cases_come_slowest_first_and_only_ten_over_a_second_are_listed() -> None:
    items = [ItemTime(f"f::c{i}", "parity", float(i)) for i in range(15)]
    lines = render(case_times(items))
    assert lines[0].startswith("the 10 slowest case(s) over 1 s")
    assert [line.split()[-3].rstrip(":") for line in lines[1:]] == [
        f"f::c{i}" for i in range(14, 4, -1)
    ]


def test_each_line_says_where_the_time_went_pipeline_first_then_checks_by_time() -> None:
    items = [
        ItemTime("cases/a.yaml::m", "signature", 10.0, build=2.0, captured={"export": 7.0}),
        ItemTime("cases/a.yaml::m", "parity", 4.0),
        ItemTime("cases/a.yaml::m", "mutation", 0.01),
    ]
    _, line = render(case_times(items))
    assert (
        line == "14.0 s  cases/a.yaml::m: build 2.0, capture export 7.0, parity 4.0, signature 1.0"
    )


def test_a_run_of_quick_cases_prints_nothing() -> None:
    assert render(case_times([ItemTime("f::c", "parity", 0.4)])) == []
    assert render([]) == []


def test_item_times_come_from_the_properties_the_items_left() -> None:
    properties = {
        "exportcheck_case": "mlp",
        "exportcheck_check": "parity",
        "exportcheck_build_seconds": 1.5,
        "exportcheck_captured": {"export": 0.5},
    }
    item = item_time("cases/a.yaml::mlp::parity[export-cpu]", 3.0, properties)
    assert item == ItemTime("cases/a.yaml::mlp", "parity", 3.0, 1.5, {"export": 0.5})
    # A broken case file's item, or a test using the fixture: not a case's item.
    assert item_time("cases/a.yaml::load", 1.0, {"exportcheck_case": "load"}) is None


def test_the_first_item_of_a_process_is_starred_its_time_holds_imports() -> None:
    # Seen under -n 2: cases/basics.yaml::mlp's signature at 5.0 s, the worker's first item.
    items = [
        ItemTime("cases/a.yaml::m", "signature", 5.0, first=True),
        ItemTime("cases/a.yaml::m", "parity", 0.5),
    ]
    _, line, note = render(case_times(items))
    assert line.endswith("cases/a.yaml::m: signature* 5.0, parity 0.5")
    assert note == "*: holds the first item of a process, and so the imports it was first to need"
    properties = {"exportcheck_case": "m", "exportcheck_check": "signature"}
    first = item_time("cases/a.yaml::m::signature[export-cpu]", 5.0, properties | {
        "exportcheck_first_in_process": True})  # fmt: skip
    assert first is not None and first.first
