"""The HTML report's Python side: the data the page is drawn from, the page, its file, the command.

What the page does with the data in a browser is in tests/browser/test_html_page.py.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import childkit
import pytest
from reportkit import HOSTILE, document, item, mixed

from pytest_exportcheck.__main__ import main
from pytest_exportcheck.reports import matrix
from pytest_exportcheck.reports.html import overwrite_problem, render
from pytest_exportcheck.reports.html.data import page_data
from pytest_exportcheck.reports.html.files import versions_view
from pytest_exportcheck.reports.html.page import MARKER

REPO = Path(__file__).resolve().parents[2]


def embedded(page: str) -> dict:
    """The JSON the page's script reads, as the browser's JSON.parse would see it."""
    found = re.search(
        r'<script type="application/json" id="exportcheck-data">(.*?)</script>', page, re.S
    )
    assert found, "no data element"
    return json.loads(found.group(1))


# -- the data ----------------------------------------------------------------------------------


def test_each_item_sits_in_its_case_rows_and_its_capture_check_column() -> None:
    data = page_data(mixed(), None)
    grid = data["matrix"]
    for found, (row, column) in zip(data["items"], grid["cells"], strict=True):
        where = grid["rows"][row]
        assert (where["file"], where["case"]) == (found["file"], found["case"])
        if found["check"] is None:
            assert (column, where["broken"]) == (-1, "[case] cases/b.yaml:9: unknown key")
        else:
            assert where["device"] == found["device"]
            assert grid["columns"][column]["capture"] == found["capture"]
            assert grid["columns"][column]["check"] == found["check"]


def test_rows_columns_and_letters_are_the_text_matrix_s() -> None:
    grid = page_data(mixed(), None)["matrix"]
    assert [(r["file"], r["case"], r["device"]) for r in grid["rows"]] == [
        ("cases/a.yaml", "conv", "cpu"),
        ("cases/a.yaml", "mlp", "cpu"),
        ("cases/a.yaml", "mlp", "cuda:0"),
        ("cases/b.yaml", "bad", None),
        ("cases/b.yaml", "slow", "cpu"),
    ]
    assert grid["per_device"] and grid["devices"] == ["cpu", "cuda:0"]
    # no column for checks a path never ran (the text matrix keeps them, for alignment)
    assert [(c["capture"], c["letter"]) for c in grid["columns"]] == [
        ("export", "S"), ("export", "P"), ("dynamo", "H"), ("dynamo", "P"),
    ]  # fmt: skip
    assert matrix.CHECK_LETTERS["hierarchy"] == "H"


def test_consistency_items_get_the_one_column_after_the_paths() -> None:
    doc = document([item(check="consistency", capture="export+dynamo"), item(check="parity")])
    columns = page_data(doc, None)["matrix"]["columns"]
    assert [(c["capture"], c["check"]) for c in columns] == [
        ("export", "parity"),
        ("", "consistency"),
    ]


def test_a_row_says_whether_its_case_lowers_and_a_column_whether_it_is_a_target_s() -> None:
    # The page draws a target's columns as one blank span in a row that lowers nothing.
    doc = document(
        [
            item("mlp", "parity"), item("mlp", "lowered-aoti"), item("conv", "parity"),
            item("conv", "signature", "export-strict"),
        ]
    )  # fmt: skip
    grid = page_data(doc, None)["matrix"]
    assert [(r["case"], r["lowers"]) for r in grid["rows"]] == [("conv", False), ("mlp", True)]
    assert [(c["capture"], c["check"], c["lowered"]) for c in grid["columns"]] == [
        ("export", "parity", False), ("export", "lowered-aoti", True),
        ("export-strict", "signature", False),
    ]  # fmt: skip


def test_infinite_and_nan_errors_reach_the_page_as_text() -> None:
    doc = document([item("a", max_abs_err=float("inf")), item("b", max_abs_err=float("nan"))])
    assert [i["max_abs_err"] for i in embedded(render(doc))["items"]] == ["inf", "nan"]


def test_a_report_without_the_newer_fields_renders() -> None:
    doc = mixed()
    for found in doc["items"]:
        for name in ("where", "tolerance", "text"):
            found.pop(name, None)
    assert len(embedded(render(doc))["items"]) == len(doc["items"])


# -- the page ----------------------------------------------------------------------------------


def test_the_page_is_one_file_that_fetches_nothing() -> None:
    page = render(mixed())
    assert page.startswith("<!DOCTYPE html>") and MARKER in page[:4096]
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "@import" not in page and "url(" not in page


def test_a_message_that_closes_the_script_stays_data() -> None:
    page = render(mixed())
    assert "<img" not in page
    assert page.count("</script>") == 2  # the data's and the script's own
    messages = [i["message"] for i in embedded(page)["items"]]
    assert f"[parity] step 1: {HOSTILE}" in messages


def test_run_facts_in_the_header_are_escaped() -> None:
    doc = mixed()
    doc["run"]["platform"] = HOSTILE
    page = render(doc)
    assert "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<img" not in page


def test_the_data_holds_the_items_the_comparison_and_the_versions() -> None:
    comparison = {"baseline": "base.json", "baseline_torch": "2.12.0", "regressions": ["x"]}
    versions = {"recordings": ["cases/a.recorded.json"], "steps": [], "error": None}
    data = embedded(render(mixed() | {"comparison": comparison}, versions))
    assert data["comparison"]["regressions"] == ["x"]
    assert data["versions"] == versions
    failure = next(i for i in data["items"] if i["outcome"] == "failed" and i["check"])
    assert failure["tolerance"] == "atol=1e-05, rtol=1.3e-06"
    assert failure["where"].startswith("first diverging: act")


# -- the file ----------------------------------------------------------------------------------


def test_a_page_may_replace_a_page_but_nothing_else(tmp_path: Path) -> None:
    assert overwrite_problem(tmp_path / "new.html") is None
    (tmp_path / "old.html").write_text(render(mixed()))
    assert overwrite_problem(tmp_path / "old.html") is None
    (tmp_path / "mine.html").write_text("<html>my notes</html>")
    assert overwrite_problem(tmp_path / "mine.html") == (
        f"{tmp_path}/mine.html exists and is not an HTML report this plugin wrote: not overwritten"
    )
    assert overwrite_problem(tmp_path / "case.yaml") == (
        f"{tmp_path}/case.yaml: an HTML report's path ends in .html"
    )


def test_the_versions_view_reads_the_recordings_beside_the_report_s_case_files() -> None:
    view = versions_view(REPO, ["cases/basics.yaml", "cases/lowering.yaml", "test_x.py"])
    assert view["recordings"] == ["cases/basics.recorded.json"]  # lowering has none
    assert view["error"] is None
    assert view["steps"], "the bundled recordings hold several torch minors"
    step = view["steps"][0]
    assert set(step) == {"before", "after", "compared", "groups"} and step["compared"] > 0


def test_an_unreadable_recording_leaves_the_versions_out_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "a.recorded.json").write_text("{not json")
    view = versions_view(tmp_path, ["a.yaml"])
    assert view["steps"] == [] and "a.recorded.json: unreadable" in view["error"]


# -- python -m pytest_exportcheck html ---------------------------------------------------------


def test_the_command_writes_the_page_of_a_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "report.json").write_text(json.dumps(mixed()))
    out = tmp_path / "page.html"
    assert (
        main(["html", str(tmp_path / "report.json"), "-o", str(out), "--root", str(tmp_path)]) == 0
    )
    assert (
        capsys.readouterr().out == f"{out}: the HTML report of {tmp_path}/report.json (10 items)\n"
    )
    assert len(embedded(out.read_text())["items"]) == 10


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "report.json: no such file"),
        ("{oops", "report.json: not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"),
        ('{"cases": {}}', "report.json: the document: 'format' is a required property; expected a report written by --exportcheck-report"),
    ],
    ids=["missing", "not json", "not a report"],
)  # fmt: skip
def test_the_command_names_a_report_it_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, said: str
) -> None:
    if content is not None:
        (tmp_path / "report.json").write_text(content)
    assert main(["html", str(tmp_path / "report.json"), "-o", str(tmp_path / "p.html")]) == 2
    assert capsys.readouterr().out == f"python -m pytest_exportcheck html: {tmp_path}/{said}\n"
    assert not (tmp_path / "p.html").exists()


def test_the_command_does_not_overwrite_a_file_that_is_not_its_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "report.json").write_text(json.dumps(mixed()))
    (tmp_path / "index.html").write_text("<p>the team's page</p>")
    assert main(["html", str(tmp_path / "report.json"), "-o", str(tmp_path / "index.html")]) == 2
    assert "is not an HTML report this plugin wrote" in capsys.readouterr().out
    assert (tmp_path / "index.html").read_text() == "<p>the team's page</p>"


def test_the_command_imports_no_torch(tmp_path: Path) -> None:
    # The page is made where the reports are (a CI job, the xdist controller): no torch there.
    (tmp_path / "report.json").write_text(json.dumps(mixed()))
    code = (
        "import sys\nfrom pytest_exportcheck.__main__ import main\n"
        f"assert main(['html', {str(tmp_path / 'report.json')!r}, '-o', {str(tmp_path / 'p.html')!r}]) == 0\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    childkit.run([sys.executable, "-c", code], check=True, timeout=120, cwd=tmp_path)
    assert (tmp_path / "p.html").is_file()
