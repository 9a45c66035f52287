"""reports/inert_output.py and reports/markdown_text.py: user text that cannot act on CI."""

from __future__ import annotations

import io

import pytest

from pytest_exportcheck.containment.supervisor_parent import incomplete_run_message
from pytest_exportcheck.reports.inert_output import InertLines, inert
from pytest_exportcheck.reports.markdown_text import md_code, md_text


def written(*pieces: str) -> str:
    out = io.StringIO()
    lines = InertLines(out)
    for piece in pieces:
        lines.write(piece)
        lines.flush()
    lines.write("\n")
    return out.getvalue()


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        ("::error::x", "| ::error::x"),
        ("   ::add-mask::secret", "|    ::add-mask::secret"),
        ("\t::stop-commands::T", "| \t::stop-commands::T"),
        ("##[error]old", "## [error]old"),
        ("E   RuntimeError: ::error::x", "E   RuntimeError: ::error::x"),  # not at the start
        ("cases/a.yaml::m::parity[export-cpu]", "cases/a.yaml::m::parity[export-cpu]"),
        (":", ":"),
    ],
)
def test_a_line_that_the_runner_would_read_as_a_command_is_shown_inert(
    line: str, shown: str
) -> None:
    assert inert(line) == shown
    assert written(line) == shown + "\n"


def test_a_command_split_over_writes_is_still_caught() -> None:
    assert written("  :", ":err", "or::x") == "|   ::error::x\n"
    assert written("progress ", "#", "#[group]x") == "progress ## [group]x\n"


def test_a_carriage_return_starts_a_line_for_the_runner() -> None:
    assert written("ok\r::error::x\r\n::warning::y") == "ok\r| ::error::x\r\n| ::warning::y\n"


def test_text_that_cannot_be_a_command_is_written_at_once() -> None:
    out = io.StringIO()
    lines = InertLines(out)
    lines.write("cases/a.yaml ..")
    assert out.getvalue() == "cases/a.yaml .."  # progress shows as it comes


def test_the_plugins_own_command_is_written_as_it_is_on_its_own_line() -> None:
    out = io.StringIO()
    lines = InertLines(out)
    lines.write("matrix row")
    lines.command("::error file=a.yaml,line=3::[parity] failed")
    assert out.getvalue() == "matrix row\n::error file=a.yaml,line=3::[parity] failed\n"


def test_markdown_cells_show_html_and_links_as_text() -> None:
    cell = md_text("<img src=x onerror=alert(1)> ![i](https://t/x.png) a|b\n[parity] 1 & 2")
    assert cell == (
        "&lt;img src=x onerror=alert(1)&gt; ![i]\\(https://t/x.png) a\\|b [parity] 1 &amp; 2"
    )
    assert md_code("a`b|<i>") == "`a'b\\|<i>`"  # a code span shows HTML as text already


def test_the_supervisors_message_keeps_the_childs_words_on_its_own_line() -> None:
    message = incomplete_run_message("cases/a.yaml::m\r::error::x", "died\r::add-mask::s", 0)
    assert "\r" not in message and message.startswith("exportcheck: ")
