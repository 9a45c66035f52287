"""--exportcheck-repro in the reports beyond the JSON: the Markdown rows, the GitHub
annotations, the HTML page's data and held scripts, and the merge, fed report items
with ``repro`` and ``repro_outcome`` set (what the page's script does with them is in
tests/browser/test_html_page.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from reportkit import HOSTILE, document, item

from pytest_exportcheck.reports import github, markdown, merge, repro_outcomes
from pytest_exportcheck.reports import matrix as matrix_mod
from pytest_exportcheck.reports.html import render
from pytest_exportcheck.reports.html.data import page_data
from pytest_exportcheck.reports.html.files import (
    MAX_SCRIPT_BYTES,
    REPRO_SIGNATURE,
    scripts_view,
    write_page,
)
from pytest_exportcheck.repro import confirm

SCRIPT = f"#!/usr/bin/env python\n{REPRO_SIGNATURE} It imports torch\nprint('{HOSTILE}')\n"
NOT_REPRODUCED_SAID = (
    "not reproduced outside the plugin: this verdict may be the plugin's own error"
)


def failed(case: str, outcome: str | None, repro: str | None = None, **fields: object) -> dict:
    return item(
        case, outcome="failed", message=f"[parity] {case} differs", repro=repro,
        repro_outcome=outcome, **fields,
    )  # fmt: skip


def run_doc() -> dict:
    xfailed = item("e", outcome="xfailed", reason="known", repro="/tmp/r/e.py")
    return document(
        [
            failed("a", "reproduced", "/tmp/r/a-parity-export-cpu.py"),
            failed("b", "not reproduced", "/tmp/r/b-parity-export-cpu.py"),
            failed("c", "no plain reproduction yet: hierarchy's call counts"),
            failed("d", None),  # a run without --exportcheck-repro
            xfailed | {"repro_outcome": "not run"},
            item("f"),
        ]
    )


def embedded(page: str) -> dict:
    found = re.search(r'<script type="application/json" id="exportcheck-data">(.*?)</script>',
                      page, re.S)  # fmt: skip
    assert found
    return json.loads(found.group(1))


# -- the words ---------------------------------------------------------------------------------


def test_the_reports_words_are_the_outcomes_the_plugin_records() -> None:
    known = {confirm.REPRODUCED, confirm.NOT_REPRODUCED, confirm.NO_VERDICT}
    known |= {confirm.NOT_RUN, confirm.XPASS_GONE, confirm.XPASS_SHOWS}
    assert set(repro_outcomes.WORDS) == known
    assert {confirm.NOT_REPRODUCED, confirm.XPASS_SHOWS} == repro_outcomes.CONTRADICTING
    why = f"{confirm.NOT_WRITTEN}: chains that move a program"
    assert repro_outcomes.line(None, why) == f"reproduction: {why}"
    assert repro_outcomes.line("r/a.py", "not reproduced") == (
        f"reproduction: {NOT_REPRODUCED_SAID}: r/a.py"
    )
    assert repro_outcomes.line(None, None) is None


# -- Markdown ----------------------------------------------------------------------------------


def test_markdown_failures_carry_the_outcome_and_the_script_loudly_where_contradicted() -> None:
    doc = run_doc()
    text = markdown.render(doc, matrix_mod.build([]), None)
    lines = text.splitlines()
    head = lines.index("| item | stage | message | plain-torch reproduction |")
    assert lines[head + 1] == "|---|---|---|---|"
    assert lines[head - 2] == (
        "**1 verdict(s) that plain torch contradicts may be the plugin's own error: run their "
        "scripts, and report them.**"
    )
    rows = {line.split("`")[1].split("::")[1]: line for line in lines if line.startswith("| `")}
    assert rows["a"].endswith("| reproduced in plain torch<br>`/tmp/r/a-parity-export-cpu.py` |")
    assert rows["b"].endswith(f"| **{NOT_REPRODUCED_SAID}**<br>`/tmp/r/b-parity-export-cpu.py` |")
    assert rows["c"].endswith("| no plain reproduction yet: hierarchy's call counts |")
    assert rows["d"].endswith("differs |  |")
    assert rows["e"].endswith(
        "| written, not run (--exportcheck-repro-run=no)<br>`/tmp/r/e.py` |"
    )  # the expected failures' table has the column too
    assert "| item | reason | message | plain-torch reproduction |" in lines


def test_markdown_without_reproductions_is_as_before() -> None:
    doc = document([failed("a", None), item("e", outcome="xfailed", reason="known")])
    text = markdown.render(doc, matrix_mod.build([]), None)
    assert "reproduction" not in text and "| item | stage | message |\n|---|---|---|" in text


def test_a_hostile_path_and_outcome_stay_text_in_markdown() -> None:
    path = f"/r/x|y`{HOSTILE}](http://e/).py"
    doc = document([failed("a", f"no plain reproduction yet: {HOSTILE}\n| x |", path)])
    row = next(line for line in markdown.render(doc, matrix_mod.build([]), None).splitlines()
               if line.startswith("| `"))  # fmt: skip
    # the outcome as a cell shows HTML as text; the path is a code span, which shows all
    # as text, where only a backtick or a pipe could end the span or the cell
    assert row.endswith(
        "| no plain reproduction yet: &lt;/script&gt;&lt;img src=x onerror=alert(1)&gt; \\| x \\|"
        "<br>`/r/x\\|y'</script><img src=x onerror=alert(1)>](http://e/).py` |"
    )
    assert row.count(" | ") == 3  # four cells: no pipe of the user's splits one


# -- GitHub annotations ------------------------------------------------------------------------


def test_an_annotation_says_what_the_reproduction_gave_and_where_the_script_is(
    tmp_path: Path,
) -> None:
    script = tmp_path / "project" / "repros" / "b.py"
    results = [
        merge.item_result(failed("b", "not reproduced", str(script))),
        merge.item_result(failed("c", "no plain reproduction yet: hierarchy's call counts")),
    ]
    environ = {"GITHUB_WORKSPACE": str(tmp_path)}
    lines = github.annotations(results, root=tmp_path / "project", environ=environ)
    assert lines[0].endswith(
        f"::[parity] b differs%0Areproduction: {NOT_REPRODUCED_SAID}: project/repros/b.py"
    )
    assert lines[1].endswith(
        "::[parity] c differs%0Areproduction: no plain reproduction yet: hierarchy's call counts"
    )
    assert all("reproduction" not in line for line in github.annotations(
        [merge.item_result(failed("d", None))], environ={}
    ))  # fmt: skip


def test_a_hostile_script_path_starts_no_workflow_command() -> None:
    path = "/r/x.py\n::add-mask::secret\r::error::forged%0A"
    (line,) = github.annotations(
        [merge.item_result(failed("b", "reproduced\n::warning::x", path))], environ={}
    )
    assert "\n" not in line and "\r" not in line
    assert line.endswith(
        "reproduction: reproduced%0A::warning::x: /r/x.py%0A::add-mask::secret%0D::error::forged%250A"
    )


# -- the merge ---------------------------------------------------------------------------------


def test_a_merged_report_keeps_each_item_s_reproduction(tmp_path: Path) -> None:
    doc = run_doc()
    shards = []
    for n, items in enumerate((doc["items"][:3], doc["items"][3:])):
        shard = tmp_path / f"shard-{n}.json"
        shard.write_text(json.dumps(document(items)))
        shards.append(shard)
    merged = merge.merge(shards)
    kept = {i["nodeid"]: (i.get("repro"), i.get("repro_outcome")) for i in merged["items"]}
    assert kept == {i["nodeid"]: (i.get("repro"), i.get("repro_outcome")) for i in doc["items"]}
    merge.write(merged, tmp_path / "merged.json")
    assert f"**{NOT_REPRODUCED_SAID}**<br>`/tmp/r/b-parity-export-cpu.py`" in (
        (tmp_path / "merged.md").read_text()
    )


# -- the HTML page's data ----------------------------------------------------------------------


def test_the_page_data_says_each_outcome_and_counts_the_contradicted() -> None:
    data = page_data(run_doc(), None, {"/tmp/r/a-parity-export-cpu.py": {"text": SCRIPT}})
    said = {i["case"]: (i.get("repro_said"), i.get("repro_contradicts")) for i in data["items"]}
    assert said == {
        "a": ("reproduced in plain torch", False),
        "b": (NOT_REPRODUCED_SAID, True),
        "c": ("no plain reproduction yet: hierarchy's call counts", False),
        "d": (None, None),
        "e": ("written, not run (--exportcheck-repro-run=no)", False),
        "f": (None, None),
    }
    assert data["contradicted"] == 1
    assert data["scripts"] == {"/tmp/r/a-parity-export-cpu.py": {"text": SCRIPT}}


def test_a_hostile_script_path_and_text_stay_data_in_the_page() -> None:
    path = f"/r/{HOSTILE}.py"
    doc = document([failed("a", f"not reproduced{HOSTILE}", path)])
    page = render(doc, None, {path: {"text": SCRIPT}})
    assert "<img" not in page
    assert page.count("</script>") == 2  # the data's and the script's own
    data = embedded(page)
    assert data["items"][0]["repro"] == path
    assert data["scripts"][path]["text"] == SCRIPT


def test_the_header_counts_the_verdicts_plain_torch_contradicts() -> None:
    assert 'id="contradicted"' not in render(document([failed("a", "reproduced", "/r/a.py")]))
    page = render(run_doc())
    found = re.search(r'<span class="pill o-contradicts" id="contradicted"[^>]*>([^<]*)<', page)
    assert found and found.group(1) == "1 verdict(s) plain torch contradicts"


# -- the scripts the page holds ----------------------------------------------------------------


def test_the_page_holds_whole_reproductions_only(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "a.py").write_text(SCRIPT)
    (tmp_path / "r" / "big.py").write_text(SCRIPT + "#" * MAX_SCRIPT_BYTES)
    (tmp_path / "notes.txt").write_text("my secrets")
    items = [
        {"repro": "r/a.py"}, {"repro": str(tmp_path / "r" / "a.py")}, {"repro": "r/big.py"},
        {"repro": "notes.txt"}, {"repro": "r/gone.py"}, {"repro": "r"}, {"repro": None}, {},
    ]  # fmt: skip
    view = scripts_view(tmp_path, items)
    assert view["r/a.py"] == view[str(tmp_path / "r" / "a.py")] == {"text": SCRIPT}
    assert view["r/big.py"] == {"missing": "over 256 KiB: open the file"}
    assert view["notes.txt"] == {"missing": "the file is not a reproduction this plugin wrote"}
    assert (
        view["r/gone.py"]
        == view["r"]
        == {"missing": "not readable where this page was made (no such file)"}
    )
    assert len(view) == 6


def test_a_written_page_holds_the_scripts_its_items_name(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(SCRIPT)
    doc = document([failed("a", "reproduced", str(tmp_path / "a.py"))])
    write_page(tmp_path / "page.html", doc, tmp_path)
    scripts = embedded((tmp_path / "page.html").read_text())["scripts"]
    assert scripts == {str(tmp_path / "a.py"): {"text": SCRIPT}}
