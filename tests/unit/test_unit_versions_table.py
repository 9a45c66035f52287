"""reports/versions.py: what changes between recorded torch minors, and the same in a compare."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_exportcheck.__main__ import main
from pytest_exportcheck.reports.compare_runs import compare
from pytest_exportcheck.reports.versions import read_all, recording_files, steps

OLD = {
    "placeholders": [
        ["L__self___lin.weight", "parameter", "lin.weight"],
        ["x", "user_input", "args[0]"],
    ],
    "modules": None,
    "mutations": None,
}
NEW = {
    "placeholders": [
        ["L__self___lin_weight", "parameter", "lin.weight"],
        ["x", "user_input", "args[0]"],
    ],
    "modules": None,
    "mutations": None,
}
FAILED = {"capture": "[other] AttributeError: 'Source' object has no attribute 'is_input'"}


def write(directory: Path, stem: str, sections: dict) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    data = {"format": 1, "case_file": f"{stem}.yaml", "torch": sections}
    (directory / f"{stem}.recorded.json").write_text(json.dumps(data))


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    cases = tmp_path / "cases"
    write(
        cases,
        "basics",
        {
            "2.9": {"mlp": {"dynamo-legacy": OLD}, "net": {"dynamo-legacy": OLD}},
            "2.10": {"mlp": {"dynamo-legacy": NEW}, "net": {"dynamo-legacy": NEW}},
            "2.11": {
                "mlp": {"dynamo-legacy": NEW, "export-strict": FAILED},
                "net": {"dynamo-legacy": NEW},
            },
        },
    )
    # recorded on one minor only (a third-party case): nothing to compare, no row
    write(cases / "thirdparty", "hf", {"2.10": {"bert": {"export": OLD}}})
    return cases


def test_one_row_per_step_and_kind(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["versions", str(corpus)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "| torch | what changes | items | example |",
        "|---|---|---|---|",
        "| 2.9 → 2.10 | dynamo-legacy placeholder names | 2 | "
        "basics::mlp[dynamo-legacy]: L__self___lin.weight now L__self___lin_weight |",
        "| 2.10 → 2.11 | export-strict first recorded | 1 | "
        "basics::mlp[export-strict]: none for 2.10 |",
    ]


def test_a_step_where_nothing_changed_says_so(corpus: Path) -> None:
    write(corpus, "basics", {"2.12": {"mlp": {"export": NEW}}, "2.13": {"mlp": {"export": NEW}}})
    (step,) = steps(read_all(recording_files([corpus / "basics.recorded.json"])))
    assert (step.before, step.after, step.compared, step.groups) == ("2.12", "2.13", 1, [])


def test_minors_are_ordered_as_versions_not_as_text(corpus: Path) -> None:
    found = steps(read_all(recording_files([corpus])))
    assert [(s.before, s.after) for s in found] == [("2.9", "2.10"), ("2.10", "2.11")]


def test_a_capture_that_starts_failing_is_a_row(corpus: Path) -> None:
    write(
        corpus,
        "basics",
        {"2.9": {"d": {"export-strict": NEW}}, "2.10": {"d": {"export-strict": FAILED}}},
    )
    (step,) = steps(read_all(recording_files([corpus / "basics.recorded.json"])))
    (g,) = step.groups
    assert (g.kind, g.items, g.example) == (
        "export-strict capture fails",
        ["basics::d[export-strict]"],
        FAILED["capture"],
    )


def test_no_recordings_or_an_unreadable_one_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["versions", str(tmp_path)]) == 2
    assert "no *.recorded.json under" in capsys.readouterr().out
    (tmp_path / "x.recorded.json").write_text("{")
    assert main(["versions", str(tmp_path)]) == 2
    assert "x.recorded.json: unreadable (JSONDecodeError" in capsys.readouterr().out


def _report(torch: str, observation: dict) -> dict:
    return {
        "run": {"torch": torch},
        "items": [
            {
                "nodeid": f"cases/basics.yaml::{case}::recorded[dynamo-legacy-cpu]",
                "capture": "dynamo-legacy",
                "outcome": "passed",
                "observation": observation,
            }
            for case in ("mlp", "net")
        ],
    }


def test_compare_between_two_runs_groups_the_same_kinds(corpus: Path) -> None:
    """Two envs' reports list, by kind, what the table lists for the same two minors."""
    table = steps(read_all(recording_files([corpus])))[0]
    comparison = compare(_report("2.9.1", OLD), _report("2.10.0", NEW)["items"], source="b.json")
    assert [(g.kind, len(g.items), g.example) for g in comparison.drift] == [
        (g.kind, len(g.items), g.example) for g in table.groups
    ]
    assert comparison.summary()["observations_by_kind"] == [
        {
            "kind": "dynamo-legacy placeholder names",
            "items": 2,
            "example": "cases/basics.yaml::mlp::recorded[dynamo-legacy-cpu]: "
            "L__self___lin.weight now L__self___lin_weight",
        }
    ]


def test_write_puts_the_table_between_the_markers(corpus: Path, tmp_path: Path) -> None:
    from pytest_exportcheck.reports.versions import BEGIN, END

    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\n{BEGIN}\nold table\n{END}\n\nafter\n")
    assert main(["versions", str(corpus), "--write", str(readme)]) == 0
    text = readme.read_text()
    assert text.startswith(f"# Title\n\n{BEGIN}\n| torch | what changes | items | example |\n")
    assert text.endswith(f"basics::mlp[export-strict]: none for 2.10 |\n{END}\n\nafter\n")
    assert main(["versions", str(corpus), "--write", str(readme)]) == 0
    assert readme.read_text() == text


def test_write_refuses_a_file_without_markers(corpus: Path, tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("no markers\n")
    assert main(["versions", str(corpus), "--write", str(readme)]) == 2
    assert readme.read_text() == "no markers\n"


def test_the_documented_table_is_the_one_the_recordings_give() -> None:
    """docs/versions.md's table is generated, never edited: regenerate it after recording."""
    from pytest_exportcheck.reports.versions import render_markdown, with_table

    root = Path(__file__).resolve().parents[2]
    page = (root / "docs" / "versions.md").read_text(encoding="utf-8")
    table = render_markdown(steps(read_all(recording_files([root / "cases"]))))
    assert with_table(page, table) == page, (
        "docs/versions.md's table is stale: "
        "python -m pytest_exportcheck versions cases --write docs/versions.md"
    )


def test_compare_prints_the_kinds_above_the_items() -> None:
    from pytest_exportcheck.reports.compare_runs import render

    comparison = compare(_report("2.9.1", OLD), _report("2.10.0", NEW)["items"], source="b.json")
    lines = render(comparison, {"torch": "2.10.0"}, limit=None)
    at = lines.index("observations changed (2):")
    assert lines[at + 1] == (
        "  by kind: dynamo-legacy placeholder names: 2 items, e.g. "
        "cases/basics.yaml::mlp::recorded[dynamo-legacy-cpu]: "
        "L__self___lin.weight now L__self___lin_weight"
    )
    assert lines[at + 2].startswith("  cases/basics.yaml::mlp::recorded[dynamo-legacy-cpu]")
