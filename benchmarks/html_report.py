"""The HTML report in headless Chromium: how fast it opens and reacts, and its screenshot.

    python benchmarks/html_report.py load REPORT.json [--repeat 5]
    python benchmarks/html_report.py screenshot REPORT.json -o docs/images/html-report.png

``load`` renders the page of REPORT.json (as ``python -m pytest_exportcheck html``
does, recordings read from the current directory), opens it from a file
``--repeat`` times and prints the medians of: the page drawn (DOMContentLoaded:
the script runs synchronously before it), the page opened and laid out (wall
clock from the driver's ``get`` to a forced layout after it, driver overhead
included), one outcome filter applied (uncheck "passed", layout included) and
the items sorted by duration. ``screenshot`` opens the page in a 1400x900 viewport,
clicks the cell of ``--item`` (default: the first failed item, else the first
xfailed one; it must be in the first screen, the page is not scrolled) and saves
the viewport. Needs selenium and Debian's chromium and chromium-driver.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from pytest_exportcheck.__main__ import main as exportcheck

MEASURE_FILTER = """
const t0 = performance.now();
document.querySelector('#filter-outcome input[value=passed]').click();
document.body.offsetHeight;
return performance.now() - t0;
"""
MEASURE_SORT = """
document.querySelector('#tabs button[data-view=items]').click();
document.body.offsetHeight;
const th = [...document.querySelectorAll('#items th')].find((t) => t.textContent === 'duration s');
const t0 = performance.now();
th.click();
document.body.offsetHeight;
return performance.now() - t0;
"""
TIMING = """
return performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd;
"""


def browser(width: int = 1400, height: int = 900):
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    size = f"--window-size={width},{height}"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--disable-gpu", size, "--hide-scrollbars"):  # fmt: skip
        options.add_argument(argument)
    driver = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)


def page_of(report: Path, directory: Path) -> Path:
    page = directory / "page.html"
    if exportcheck(["html", str(report), "-o", str(page)]) != 0:
        sys.exit(2)
    return page


def open_page(driver, page: Path) -> None:
    driver.get(page.resolve().as_uri())
    WebDriverWait(driver, 60).until(
        lambda d: d.execute_script("return document.body.dataset.ready") == "true"
    )


def load(report: Path, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        page = page_of(report, Path(directory))
        size = page.stat().st_size
        driver = browser()
        try:
            runs = []
            for _ in range(repeat):
                driver.get("about:blank")
                start = time.perf_counter()
                open_page(driver, page)
                driver.execute_script("document.body.offsetHeight")  # laid out, if not yet
                laid_out = (time.perf_counter() - start) * 1000
                drawn = driver.execute_script(TIMING)
                runs.append((drawn, laid_out, driver.execute_script(MEASURE_FILTER),
                             driver.execute_script(MEASURE_SORT)))  # fmt: skip
        finally:
            driver.quit()
    items = len(json.loads(report.read_text(encoding="utf-8"))["items"])
    print(f"{report}: {items} items, page {size / 1e6:.1f} MB")
    names = (
        "drawn (DOMContentLoaded)",
        "opened and laid out",
        "filter: uncheck passed",
        "sort by duration",
    )
    for name, values in zip(names, zip(*runs, strict=True), strict=True):
        known = [v for v in values if v is not None]
        print(f"  {name:26} median {statistics.median(known):6.0f} ms  (of {len(known)}: "
              f"{', '.join(f'{v:.0f}' for v in known)})")  # fmt: skip


def screenshot(report: Path, output: Path, item: str | None, width: int, height: int) -> None:
    items = json.loads(report.read_text(encoding="utf-8"))["items"]
    if item is None:
        chosen = [i for i in items if i["outcome"] == "failed" and i["check"]] or [
            i for i in items if i["outcome"] == "xfailed"
        ]
        item = chosen[0]["nodeid"]
    index = next(n for n, i in enumerate(items) if i["nodeid"] == item)
    with tempfile.TemporaryDirectory() as directory:
        page = page_of(report, Path(directory))
        driver = browser(width, height)
        try:
            # The viewport itself at width x height (a window of that size has less).
            driver.execute_cdp_cmd(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            )
            open_page(driver, page)
            # The item's cell: data.py's cells[index] is its [row, column].
            row, column = driver.execute_script(
                "return JSON.parse(document.getElementById('exportcheck-data').textContent)"
                f".matrix.cells[{index}]"
            )
            cell = driver.find_element(
                By.CSS_SELECTOR, f'#matrix td[data-row="{row}"][data-column="{column}"]'
            )
            cell.click()
            driver.save_screenshot(str(output))
        finally:
            driver.quit()
    print(f"{output}: {item} ({output.stat().st_size // 1024} KiB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    timing = commands.add_parser("load")
    timing.add_argument("report", type=Path)
    timing.add_argument("--repeat", type=int, default=5)
    shot = commands.add_parser("screenshot")
    shot.add_argument("report", type=Path)
    shot.add_argument("-o", "--output", type=Path, required=True)
    shot.add_argument("--item", help="the node id whose details are open")
    shot.add_argument("--size", default="1400x900")
    args = parser.parse_args()
    if args.command == "load":
        load(args.report, args.repeat)
    else:
        width, height = map(int, args.size.split("x"))
        screenshot(args.report, args.output, args.item, width, height)


if __name__ == "__main__":
    main()
