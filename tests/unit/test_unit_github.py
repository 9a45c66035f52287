"""GitHub workflow commands from results: grouping by root cause, the cap, escaping."""

from __future__ import annotations

from pathlib import Path

from pytest_exportcheck.reports import github
from pytest_exportcheck.reports.results import ItemResult


def failed(nodeid: str, message: str, text: str = "", line: int = 2, **extra: object) -> ItemResult:
    return ItemResult(
        nodeid=nodeid,
        case=nodeid.split("::")[1],
        file=nodeid.split("::")[0],
        line=line,
        capture="export",
        check=nodeid.split("::")[2].split("[")[0],
        device="cpu",
        outcome="failed",
        stage="capture",
        message=message,
        text=text or message,
        **extra,  # type: ignore[arg-type]
    )


def test_items_a_failure_stopped_are_counted_in_its_annotation() -> None:
    first = failed("cases/a.yaml::m::signature[export-cpu]", "[capture] export raised: boom")
    stopped = [
        failed(
            f"cases/a.yaml::m::{check}[export-cpu]",
            "[capture] export raised: boom",
            "[capture] export raised: boom\n(full report on cases/a.yaml::m::signature[export-cpu])",
        )
        for check in ("hierarchy", "parity")
    ]
    other = failed("cases/a.yaml::n::parity[export-cpu]", "[parity] differs", line=9)
    (cause, second) = github.causes([*stopped, other, first])
    assert cause.first is first and cause.also == [s.nodeid for s in stopped]
    assert (second.first, second.line) == (other, 9)


def test_past_ten_causes_the_last_annotation_summarizes_the_rest() -> None:
    results = [
        failed(f"cases/a.yaml::case{i:02}::parity[export-cpu]", f"[parity] output {name} differs")
        for i, name in enumerate("abcdefghijklmn")
    ]
    lines = github.annotations(results, environ={})
    assert len(lines) == github.MAX_ERRORS
    assert all(line.startswith("::error file=cases/a.yaml,line=2,") for line in lines[:9])
    assert lines[-1].startswith(
        "::error title=exportcheck%3A 5 more failure(s) not annotated::5 more failure(s) "
        "(5 items), listed in the job summary and the log:%0Acases/a.yaml::case09::parity"
    )


def test_commands_escape_what_github_would_read_as_syntax() -> None:
    line = github.command("error", "50% off\nnext", file="a,b:c.yaml", line=3, title="t: x, y")
    assert line == "::error file=a%2Cb%3Ac.yaml,line=3,title=t%3A x%2C y::50%25 off%0Anext"


def test_the_where_line_follows_the_headline() -> None:
    result = failed(
        "cases/a.yaml::m::parity[export-cpu]", "[parity] differs", where="first diverging: act"
    )
    (cause,) = github.causes([result])
    assert cause.text == "[parity] differs\nwhere: first diverging: act"


def test_files_are_named_relative_to_the_checkout(tmp_path: Path) -> None:
    project = tmp_path / "models" / "project"
    environ = {"GITHUB_WORKSPACE": str(tmp_path)}
    assert github.relative_to_workspace("cases/a.yaml", project, environ) == (
        "models/project/cases/a.yaml"
    )
    assert github.relative_to_workspace("cases/a.yaml", Path("/elsewhere"), environ) == (
        "cases/a.yaml"
    )


def test_modes() -> None:
    assert github.annotating("auto", {"GITHUB_ACTIONS": "true"})
    assert not github.annotating("auto", {})
    assert github.annotating("on", {})
    assert not github.annotating("off", {"GITHUB_ACTIONS": "true"})
    assert github.summary_path("auto", {"GITHUB_STEP_SUMMARY": "/s.md"}) == Path("/s.md")
    assert github.summary_path("off", {"GITHUB_STEP_SUMMARY": "/s.md"}) is None


def test_a_summary_past_githubs_limit_is_cut_and_says_so(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    assert github.append_summary(summary, "x" * (2 << 20)) is None
    text = summary.read_text()
    assert len(text.encode()) <= github.MAX_SUMMARY_BYTES
    assert "cut at GitHub's 1 MiB step-summary limit" in text
    assert github.append_summary(tmp_path, "x") is not None  # a directory: told, not raised


def test_items_failing_alike_at_one_line_share_a_cause_whatever_their_numbers() -> None:
    # Seen on the GPU machine: a case's AOTInductor load crashed a worker on each device.
    crash = (
        "[crashed] cases/a.yaml:2: worker {} died in the lowered-aoti stage of this item "
        "(killed by SIGSEGV); its peak memory when last measured: {}"
    )
    cpu = failed("cases/a.yaml::m::lowered[aoti-export-cpu]", crash.format("gw4", "760 MiB"))
    cuda = failed("cases/a.yaml::m::lowered[aoti-export-cuda:0]", crash.format("gw10", "1.1 GiB"))
    other = failed("cases/a.yaml::m::parity[export-cpu]", "[parity] output differs")
    (crashed, differs) = github.causes([cpu, cuda, other])
    assert (crashed.first, crashed.also) == (cpu, [cuda.nodeid])
    assert (differs.first, differs.also) == (other, [])
