"""The HTML report in a real browser: headless Chromium, driven by Selenium, from a file.

The page must load offline without a console error, its filters must hide what
they exclude, a click must open an item's details, and a hostile failure message
must show as text. Chromium and its driver come from the system packages
(``apt-get install chromium chromium-driver``); without them these tests skip,
except under CI (the ``CI`` variable set), where they must run and so fail instead.
``EXPORTCHECK_CORPUS_REPORT`` names the bundled corpus's report when CI made one;
the corpus test renders that, else a small run of its own.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from casekit import MLP_CASE, write_cases
from reportkit import HOSTILE, document, item, mixed

from pytest_exportcheck.__main__ import main
from pytest_exportcheck.reports.html import render

DRIVER_NAMES = ("chromedriver",)
BROWSER_NAMES = ("chromium", "chromium-browser")


def _browser_problem() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    if not any(map(shutil.which, DRIVER_NAMES)):
        return "no chromedriver on PATH (apt-get install chromium-driver)"
    if not any(map(shutil.which, BROWSER_NAMES)):
        return "no chromium on PATH (apt-get install chromium)"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    problem = _browser_problem()
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the browser tests: {problem}")
        pytest.skip(problem)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    # Both paths given: Selenium Manager then has nothing to look up or download.
    options.binary_location = next(filter(None, map(shutil.which, BROWSER_NAMES)))
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--disable-gpu", "--window-size=1400,900"):  # fmt: skip
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver_path = next(filter(None, map(shutil.which, DRIVER_NAMES)))
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def open_page(browser: Any, path: Path) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get_log("browser")  # what an earlier page left
    browser.get(path.resolve().as_uri())
    WebDriverWait(browser, 30).until(
        lambda b: b.execute_script("return document.body.dataset.ready") == "true"
    )
    return browser


def severe(browser: Any) -> list[dict]:
    return [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]


def visible(browser: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return [e for e in browser.find_elements(By.CSS_SELECTOR, selector) if e.is_displayed()]


def find(browser: Any, selector: str) -> Any:
    from selenium.webdriver.common.by import By

    return browser.find_element(By.CSS_SELECTOR, selector)


def write_page(tmp_path: Path, doc: dict) -> Path:
    path = tmp_path / "page.html"
    path.write_text(render(doc), encoding="utf-8")
    return path


# -- a small report made by hand (reportkit.mixed) ---------------------------------------------


def test_the_page_loads_from_a_file_without_a_console_error(browser: Any, tmp_path: Path) -> None:
    open_page(browser, write_page(tmp_path, mixed()))
    assert severe(browser) == []
    assert browser.title == "exportcheck: 10 items, torch 2.13.0"
    assert len(visible(browser, "#matrix tr.case-row")) == 5
    assert find(browser, "#filter-count").text == "showing 10 of 10 items"


def test_an_outcome_filter_hides_the_rows_it_leaves_empty(browser: Any, tmp_path: Path) -> None:
    open_page(browser, write_page(tmp_path, mixed()))
    before = [row.text.split()[0] for row in visible(browser, "#matrix tr.case-row")]
    find(browser, "#filter-outcome input[value=passed]").click()
    after = [row.text.split()[0] for row in visible(browser, "#matrix tr.case-row")]
    # mlp on cuda:0 had passes only; the other rows keep an item that is not a pass
    assert (len(before), len(after)) == (5, 4)
    assert find(browser, "#filter-count").text == "showing 5 of 10 items"
    assert visible(browser, "#matrix td.c.o-passed:not(.dim)") == []


def test_the_text_filter_keeps_the_items_that_mention_it(browser: Any, tmp_path: Path) -> None:
    open_page(browser, write_page(tmp_path, mixed()))
    find(browser, "#filter-text").send_keys("unknown key")
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 5).until(lambda b: len(visible(b, "#matrix tr.case-row")) == 1)
    assert [row.text for row in visible(browser, "#matrix tr.case-row")] == [
        "bad broken: [case] cases/b.yaml:9: unknown key"
    ]
    assert [row.text for row in visible(browser, "#matrix tr.file")] == ["cases/b.yaml"]


def test_a_click_on_a_cell_shows_its_failure_and_a_hostile_message_stays_text(
    browser: Any, tmp_path: Path
) -> None:
    open_page(browser, write_page(tmp_path, mixed()))
    assert not find(browser, "#details").is_displayed()
    find(browser, "#matrix td.o-failed[data-column]:not(.broken)").click()
    details = find(browser, "#details")
    assert details.is_displayed()
    text = details.text
    assert "cases/a.yaml::conv::parity[export-cpu]" in text
    assert "first diverging: act (Perturbed) — max abs err 0.1; inputs agree" in text
    assert "atol=1e-05, rtol=1.3e-06" in text
    assert "0.25" in text
    assert f"failure\n[parity] step 1: {HOSTILE}\nthe whole text" in text
    assert "headline" not in text  # the failure text begins with it
    assert browser.execute_script("return document.querySelectorAll('img').length") == 0
    assert severe(browser) == []


def test_an_xfail_shows_its_reason_and_an_old_report_its_message(
    browser: Any, tmp_path: Path
) -> None:
    open_page(browser, write_page(tmp_path, mixed()))
    find(browser, "#matrix td.o-xfailed").click()
    assert (
        "xfail reason\ndynamo lifts it\nxfail entry\ncases/a.yaml:12"
        in find(browser, "#details").text
    )
    find(browser, "#matrix td.broken").click()  # no text field: the headline stands in
    assert "message\n[case] cases/b.yaml:9: unknown key" in find(browser, "#details").text


def test_details_show_a_tolerance_and_an_error_only_where_the_check_compared_values(
    browser: Any, tmp_path: Path
) -> None:
    float32 = "atol=1e-05, rtol=1.3e-06 (float32 default)"
    doc = document(
        [
            # compared 0: the check judged no values, whatever else the item holds
            item("mlp", "signature", compared=0, max_abs_err=0.0, tolerance="atol=0, rtol=0"),
            item("mlp", "parity", compared=4, max_abs_err=0.0, tolerance=float32),
            # a report that does not say (compared absent) shows what it holds
            item("mlp", "mutation", max_abs_err=0.0, tolerance=float32),
        ]
    )
    open_page(browser, write_page(tmp_path, doc))
    said = {}
    for cell in visible(browser, "#matrix td.c[data-row]"):
        cell.click()
        said[find(browser, "#details h2").text.split("::")[-1]] = find(browser, "#details").text
    assert "tolerance" not in said["signature[export-cpu]"]
    assert "max abs err" not in said["signature[export-cpu]"]
    assert (
        f"compared\n4 tensor pairs\ntolerance\n{float32}\nmax abs err\n0"
        in said["parity[export-cpu]"]
    )
    assert f"tolerance\n{float32}\nmax abs err\n0" in said["mutation[export-cpu]"]


def test_a_case_that_lowers_nothing_draws_no_cells_under_the_targets(
    browser: Any, tmp_path: Path
) -> None:
    doc = document(
        [
            *(item("mlp", check) for check in ("parity", "lowered-aoti", "lowered-onnx")),
            *(item("conv", check) for check in ("signature", "parity")),
        ]
    )
    open_page(browser, write_page(tmp_path, doc))
    rows = {row.text.split()[0]: row for row in visible(browser, "#matrix tr.case-row")}
    from selenium.webdriver.common.by import By

    def cells(name: str) -> list[tuple[str, int]]:
        return [
            (td.get_attribute("class"), int(td.get_attribute("colspan") or 1))
            for td in rows[name].find_elements(By.CSS_SELECTOR, "td")
            if td.is_displayed()
        ]

    # columns: S P A O; conv lowers nothing: its A and O are one blank span, aligned
    assert cells("mlp") == [("c empty", 1), ("c o-passed", 1), ("c o-passed", 1), ("c o-passed", 1)]
    assert cells("conv") == [("c o-passed", 1), ("c o-passed", 1), ("none", 2)]
    from selenium.webdriver.support.ui import Select, WebDriverWait

    Select(find(browser, "#filter-check")).select_by_value("lowered-aoti")  # one target left

    WebDriverWait(browser, 5).until(lambda b: len(visible(b, "#matrix tr.case-row")) == 1)
    assert cells("mlp") == [("c o-passed", 1)]
    Select(find(browser, "#filter-check")).select_by_value("parity")
    WebDriverWait(browser, 5).until(lambda b: len(visible(b, "#matrix tr.case-row")) == 2)
    assert cells("conv") == [("c o-passed", 1)]  # no target column shown: no span
    assert severe(browser) == []


def test_durations_sort_slowest_first(browser: Any, tmp_path: Path) -> None:
    open_page(browser, write_page(tmp_path, mixed()))
    find(browser, "#tabs button[data-view=items]").click()
    headings = [th.text for th in visible(browser, "#items th")]
    find(browser, f"#items th:nth-child({headings.index('duration s') + 1})").click()
    durations = [row.text.split()[0] for row in visible(browser, "#items tbody tr td:nth-child(7)")]
    assert durations[:3] == ["7.250", "2.500", "0.010"]
    find(browser, "#items tbody tr").click()
    assert "cases/a.yaml::conv::signature[export-cpu]" in find(browser, "#details").text


def test_the_comparison_is_a_view_with_regressions_first(browser: Any, tmp_path: Path) -> None:
    comparison = {
        "baseline": "base.json", "baseline_torch": "2.12.0", "unchanged": 7, "not_run": 0,
        "regressions": ["cases/a.yaml::conv::parity[export-cpu]"], "fixes": [],
        "new": ["cases/b.yaml::slow::parity[export-cpu]"], "removed": ["cases/a.yaml::gone"],
        "observations_by_kind": [],
        "was": {"cases/a.yaml::conv::parity[export-cpu]": "passed", "cases/a.yaml::gone": "passed"},
    }  # fmt: skip
    open_page(browser, write_page(tmp_path, mixed() | {"comparison": comparison}))
    find(browser, "#tabs button[data-view=comparison]").click()
    headings = [h.text for h in visible(browser, "#comparison h3")]
    assert headings == ["1 regressions", "1 new items", "1 removed items"]
    regression = find(browser, "#comparison tbody tr").text
    assert regression.startswith("cases/a.yaml::conv::parity[export-cpu] passed failed")
    assert not find(browser, "#filters").is_displayed()
    find(browser, "#comparison a.item").click()
    assert "[parity] step 1" in find(browser, "#details").text


def test_a_reproduction_shows_its_outcome_path_and_copies_its_script(
    browser: Any, tmp_path: Path
) -> None:
    script = f"#!/usr/bin/env python\n# a reproduction\nprint('{HOSTILE}')\n"
    path = f"/r/{HOSTILE}.py"
    doc = document(
        [
            item("mlp", outcome="failed", message="[parity] differs", repro=path,
                 repro_outcome="not reproduced"),
            item("conv", outcome="failed", message="[parity] differs", repro="/r/gone.py",
                 repro_outcome="reproduced"),
        ]
    )  # fmt: skip
    page = tmp_path / "page.html"
    page.write_text(render(doc, None, {path: {"text": script}}), encoding="utf-8")
    open_page(browser, page)
    assert find(browser, "#contradicted").text == "1 verdict(s) plain torch contradicts"
    assert len(visible(browser, "#matrix td.c.contradicts")) == 1
    # The page's own copy, not the machine's clipboard: headless, that is not ours to read.
    browser.execute_script(
        "Object.defineProperty(navigator, 'clipboard', {value: {writeText: (text) => {"
        "window.copiedText = text; return Promise.resolve(); }}});"
    )
    find(browser, "#matrix td.c.contradicts").click()
    said = find(browser, "#details .repro-said.contradicts")
    assert said.text == (
        "not reproduced outside the plugin: this verdict may be the plugin's own error"
    )
    assert find(browser, "#details .repro-path").text == path
    find(browser, "#details button.copy").click()
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 5).until(lambda b: find(b, "#details button.copy").text == "copied")
    assert browser.execute_script("return window.copiedText") == script
    find(browser, "#details summary").click()
    assert find(browser, "#details pre.script").text == script.rstrip("\n")
    assert browser.execute_script("return document.querySelectorAll('img').length") == 0
    # a script the page does not hold: named, with no button
    find(browser, "#matrix td.c:not(.contradicts)").click()
    details = find(browser, "#details").text
    assert "reproduced in plain torch\n/r/gone.py\nThe script is not in this page." in details
    assert visible(browser, "#details button.copy") == []
    assert severe(browser) == []


# -- the corpus's page -------------------------------------------------------------------------


REPO = Path(__file__).resolve().parents[2]


def _corpus_report(pytester: pytest.Pytester) -> tuple[Path, Path]:
    """The report and the directory its case files are relative to."""
    named = os.environ.get("EXPORTCHECK_CORPUS_REPORT")
    if named:
        return Path(named), REPO
    write_cases(pytester, MLP_CASE.rstrip() + "\n    expect: {modules: [fc1, fc3]}\n")
    pytester.runpytest("--exportcheck", "-p", "no:cacheprovider", "--exportcheck-report=r.json")
    return pytester.path / "r.json", pytester.path


def test_the_corpus_s_page_opens_filters_and_shows_details(
    browser: Any, project: pytest.Pytester, tmp_path: Path
) -> None:
    report, root = _corpus_report(project)
    page = tmp_path / "corpus.html"
    assert main(["html", str(report), "-o", str(page), "--root", str(root)]) == 0
    items = json.loads(report.read_text(encoding="utf-8"))["items"]
    open_page(browser, page)
    assert severe(browser) == []
    assert find(browser, "#filter-count").text == f"showing {len(items)} of {len(items)} items"
    # the text filter, on one item's node id: its row stays, with that one cell bright
    chosen = items[len(items) // 2]
    said = ("nodeid", "message", "reason", "where", "text", "tolerance")
    expected = sum(
        any(chosen["nodeid"].lower() in str(i.get(k) or "").lower() for k in said) for i in items
    )
    find(browser, "#filter-text").send_keys(chosen["nodeid"])
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 10).until(
        lambda b: find(b, "#filter-count").text == f"showing {expected} of {len(items)} items"
    )
    assert len(visible(browser, "#matrix tr.case-row")) == 1 < len(items)
    bright = visible(browser, "#matrix td.c[data-row]:not(.dim)")
    assert len(bright) == 1
    bright[0].click()
    assert chosen["nodeid"] in find(browser, "#details").text
    assert severe(browser) == []
