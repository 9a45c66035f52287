"""Case files built to exhaust the loader fail as one ``[case]`` item at their line;
the good case in the next file still runs."""

from __future__ import annotations

import pytest
from hostilekit import write_hostile

# Nine levels of nine aliases: 387 million values once expanded.
ALIAS_BOMB = "cases:\n  bomb: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"  {name}: &{name} [{', '.join([f'*{previous}'] * 9)}]\n"
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True)
)


EXHAUSTING = (
    (
        ALIAS_BOMB,
        "cases/bad.yaml:*: invalid YAML: the document expands through its aliases to over "
        "1000000 values (an alias bomb?)*",
    ),
    (
        "cases: " + "[" * 100 + "]" * 100,
        "cases/bad.yaml:1: invalid YAML: values nest deeper than 64 levels",
    ),
    (
        "cases: " + "[" * 100000 + "]" * 100000,
        "cases/bad.yaml: invalid YAML: values nest deeper than 64 levels",
    ),
    (
        "cases: &loop [*loop]",
        "cases/bad.yaml:1: invalid YAML: an alias refers to a value that contains it",
    ),
)
IDS = ["alias bomb", "100 levels deep", "100000 levels deep", "self-referencing alias"]


@pytest.mark.parametrize(("text", "refused"), EXHAUSTING, ids=IDS)
def test_a_file_that_would_exhaust_the_loader_is_one_failing_item(
    hostile: pytest.Pytester, text: str, refused: str
) -> None:
    write_hostile(hostile)
    (hostile.path / "cases" / "bad.yaml").write_text(text)
    result = hostile.runpytest("--exportcheck", "-p", "no:xdist")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines([f"[[]case[]] {refused}"])


def test_under_xdist_each_such_file_is_one_failing_item_the_controller_reports(
    hostile: pytest.Pytester,
) -> None:
    """Each file is refused on the worker that collects it; its one item, and the good
    case beside them all, reach the controller: every file in one xdist run."""
    write_hostile(hostile)
    for number, (text, _) in enumerate(EXHAUSTING):
        (hostile.path / "cases" / f"bad{number}.yaml").write_text(text)
    result = hostile.runpytest("--exportcheck", "-n", "1")
    result.assert_outcomes(failed=len(EXHAUSTING), passed=1)
    for number, (_, refused) in enumerate(EXHAUSTING):
        result.stdout.fnmatch_lines(
            [f"[[]case[]] {refused.replace('bad.yaml', f'bad{number}.yaml')}"]
        )


def test_a_symlink_loop_named_on_the_command_line_is_a_usage_error(
    hostile: pytest.Pytester,
) -> None:
    (hostile.path / "cases" / "a.yaml").symlink_to("b.yaml")
    (hostile.path / "cases" / "b.yaml").symlink_to("a.yaml")
    result = hostile.runpytest("--exportcheck", "cases/a.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: file or directory not found: cases/a.yaml (a symlink loop: it never reaches a file)"
        ]
    )


def test_a_symlink_loop_inside_the_case_directory_is_passed_over(
    hostile: pytest.Pytester,
) -> None:
    write_hostile(hostile)
    (hostile.path / "cases" / "a.yaml").symlink_to("b.yaml")
    (hostile.path / "cases" / "b.yaml").symlink_to("a.yaml")
    hostile.runpytest("--exportcheck").assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("cases/hostile.yaml", "cases/hostile.yaml: a report path ends in .json*"),
        ("cases/hostile.py", "cases/hostile.py: a report path ends in .json*"),
        ("cases/x.recorded.json", "cases/x.recorded.json is a recording, not a report*"),
        ("notes.json", "notes.json exists and is not a report this plugin wrote: not overwritten"),
    ],
    ids=["case file", "source file", "recording", "someone's json"],
)
def test_a_report_path_that_would_destroy_a_file_is_a_usage_error(
    hostile: pytest.Pytester, path: str, said: str
) -> None:
    write_hostile(hostile)
    (hostile.path / "notes.json").write_text('{"mine": true}\n')
    (hostile.path / "cases" / "x.recorded.json").write_text("{}\n")
    before = (hostile.path / path).read_text()
    result = hostile.runpytest("--exportcheck", f"--exportcheck-report={path}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--exportcheck-report: *{said}"])
    assert (hostile.path / path).read_text() == before


def test_a_report_of_an_earlier_run_is_overwritten(hostile: pytest.Pytester) -> None:
    write_hostile(hostile)
    for _ in range(2):
        result = hostile.runpytest(
            "--exportcheck", "--exportcheck-report=out.json", "-p", "no:xdist"
        )
        assert result.ret == 0


def test_a_case_file_over_the_size_cap_is_refused_before_it_is_parsed(
    hostile: pytest.Pytester,
) -> None:
    # 5 MB of plain cases, no aliases: parsed, it took a minute and gigabytes to refuse
    # (and was called "an alias bomb?").
    line = "  c{}: {{description: d, model: {{target: hostile.py:Good}}, inputs: {{args: []}}}}\n"
    text = "cases:\n" + "".join(line.format(i) for i in range(70_000))
    assert len(text) > 4 << 20
    (hostile.path / "cases" / "big.yaml").write_text(text)
    write_hostile(hostile)
    result = hostile.runpytest("--exportcheck", "-p", "no:xdist")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        [f"*cases/big.yaml: {len(text)} bytes, over the 4194304 a case file may have "
         "(exportcheck_max_case_bytes): not read*"]
    )  # fmt: skip
    assert "alias bomb" not in result.stdout.str()


def test_huge_names_and_keys_are_shown_capped(hostile: pytest.Pytester) -> None:
    long_name, huge_key = "n" * 5000, "k" * 1_000_000
    # Explicit keys (?): YAML's plain keys stop at 1024 characters.
    (hostile.path / "cases" / "names.yaml").write_text(
        "cases:\n"
        f"  ? {long_name}\n  : {{description: d, model: {{target: hostile.py:Good}}}}\n"
        "  keyed:\n    description: d\n    model: {target: hostile.py:Good}\n"
        f"    ? {huge_key}\n    : 1\n"
    )
    write_hostile(hostile)
    result = hostile.runpytest("--exportcheck", "-p", "no:xdist")
    result.assert_outcomes(failed=2, passed=1)
    result.stdout.fnmatch_lines(
        [
            "*case name nnnn* (4960 more characters) is 5000 characters long; at most 100*",
            "*unknown key 'kkkk* (999882 more characters) in cases.keyed*",
        ]
    )
    assert max(len(line) for line in result.outlines) < 2000


def test_a_key_yaml_reads_as_a_boolean_is_named_at_its_line(hostile: pytest.Pytester) -> None:
    (hostile.path / "cases" / "on.yaml").write_text(
        "cases:\n"
        "  switched:\n"
        "    description: d\n"
        "    model: {target: hostile.py:Good}\n"
        "    inputs:\n"
        "      args: [{shape: [2, 4]}]\n"
        "      kwargs: {on: 1}\n"
    )
    write_hostile(hostile)
    result = hostile.runpytest("--exportcheck", "-p", "no:xdist")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        ["[[]case[]] cases/on.yaml:7: inputs.kwargs: a key here reads as True: YAML 1.1 *"]
    )
    assert "[eager]" not in result.stdout.str()


def test_a_path_holding_colons_keeps_its_file_and_row_in_the_report(
    hostile: pytest.Pytester,
) -> None:
    import json

    odd = hostile.path / "odd::dir"
    odd.mkdir()
    (odd / "hostile.py").write_text((hostile.path / "cases" / "hostile.py").read_text())
    (odd / "m.yaml").write_text(
        "cases:\n  good:\n    description: d\n    model: {target: hostile.py:Good}\n"
        "    inputs: {args: [{shape: [2, 4]}]}\n    captures: [export]\n    checks: [parity]\n"
    )
    result = hostile.runpytest(
        "--exportcheck", ".", "--exportcheck-report=r.json", "-p", "no:xdist"
    )
    result.assert_outcomes(passed=1)
    items = json.loads((hostile.path / "r.json").read_text())["items"]
    assert [item["file"] for item in items] == ["odd::dir/m.yaml"]
    result.stdout.fnmatch_lines(["  good *"])  # the matrix row is the case, not the path's tail
