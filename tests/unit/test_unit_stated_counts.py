"""reports/stated_counts.py: the counts a page states, written from a report between markers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from reportkit import document, item

from pytest_exportcheck.__main__ import main
from pytest_exportcheck.reports.stated_counts import Query, QueryError, path_matches, stated

ITEMS = [
    item(case="mlp", check="parity", outcome="passed", gaps=[{"what": "a", "why": "b"}]),
    item(case="mlp", check="hierarchy", outcome="xfailed"),
    item(case="cnn", check="parity", outcome="failed", gaps=[{"what": "c", "why": "d"}]),
    item(case="vit", check="parity", outcome="skipped", file="cases/field/vision.yaml"),
    item(
        case="vit",
        check="lowered-aoti",
        capture="export",
        outcome="not_applicable",
        file="cases/field/vision.yaml",
    ),
]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("items", 5),
        ("cases", 3),
        ("cases file=cases/*.yaml", 2),
        ("items file=cases/field/**", 2),
        ("items file!=cases/field/**", 3),
        ("items check=parity outcome=passed,failed", 2),
        ("items check=lower* outcome=*applicable", 1),
        ("items outcome!=skipped,not_applicable", 3),
        # only a passing item's gaps are gaps: the failed item's are not counted
        ("gaps", 1),
        ("gaps check=hierarchy", 0),
    ],
)
def test_a_query_counts_what_its_filters_select(query: str, expected: int) -> None:
    assert Query.parse(query).count(ITEMS) == expected


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("", "starts with one of items, cases, gaps"),
        ("tests", "starts with one of"),
        ("items nodeid=x", "is not KEY=VALUES"),
        ("items outcome=pased", "an outcome is one of passed"),
    ],
)
def test_a_query_that_cannot_be_read_says_why(query: str, says: str) -> None:
    with pytest.raises(QueryError, match=says):
        Query.parse(query)


def test_a_glob_star_stays_in_its_folder_and_double_star_crosses_them() -> None:
    assert path_matches("cases/a.yaml", "cases/*.yaml")
    assert not path_matches("cases/field/b.yaml", "cases/*.yaml")
    assert path_matches("cases/field/deep/b.yaml", "cases/field/**")
    assert path_matches("cases/lowering.yaml", "cases/lowering.yaml")
    assert not path_matches("other/cases/a.yaml", "cases/*.yaml")


PAGE = """\
The corpus has <!-- count: items -->7<!-- /count --> items in
<!-- count:  cases   file=cases/*.yaml -->0<!-- /count --> cases; prose stays as it was.
"""


@pytest.fixture
def report(tmp_path: Path) -> Path:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document(ITEMS)), encoding="utf-8")
    return path


def test_counts_writes_the_marked_numbers_and_the_record(
    report: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page, record = tmp_path / "page.md", tmp_path / "counts.json"
    page.write_text(PAGE, encoding="utf-8")
    assert main(["counts", str(report), str(page), "--record", str(record)]) == 0
    assert page.read_text(encoding="utf-8") == PAGE.replace("-->7<", "-->5<").replace(
        "-->0<", "-->2<"
    )
    written = json.loads(record.read_text(encoding="utf-8"))
    assert written["counts"] == {"cases file=cases/*.yaml": 2, "items": 5}
    assert written["run"]["torch"] == "2.13.0"
    assert f"{page}: counts updated" in capsys.readouterr().out
    # a second run finds nothing to do, and --check agrees
    assert main(["counts", str(report), str(page), "--record", str(record), "--check"]) == 0


def test_check_names_each_stale_count_and_writes_nothing(
    report: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "page.md"
    page.write_text(PAGE, encoding="utf-8")
    assert main(["counts", str(report), str(page), "--check"]) == 1
    out = capsys.readouterr().out
    assert f"{page}: <!-- count: items --> states 7, the report 5" in out
    assert f"{page}: <!-- count: cases file=cases/*.yaml --> states 0, the report 2" in out
    assert page.read_text(encoding="utf-8") == PAGE


def test_a_bad_query_or_report_exits_2_and_writes_nothing(
    report: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- count: items nodeid=x -->1<!-- /count -->\n", encoding="utf-8")
    assert main(["counts", str(report), str(page)]) == 2
    assert "'items nodeid=x': 'nodeid=x' is not KEY=VALUES" in capsys.readouterr().out
    assert main(["counts", str(tmp_path / "none.json"), str(page)]) == 2
    assert "none.json: no such file" in capsys.readouterr().out
    assert page.read_text(encoding="utf-8").startswith("<!-- count: items nodeid=x -->1<")


def test_stated_reads_query_and_value_of_every_marker() -> None:
    assert stated(PAGE) == [("items", "7"), ("cases file=cases/*.yaml", "0")]
    # the markers shown as code are no count
    assert stated("between `<!-- count: QUERY -->` and `<!-- /count -->`") == []
