"""Side-by-side diffs of expected and actual lists."""

from __future__ import annotations

from pytest_exportcheck.checks.listdiff import side_by_side


def test_rows_are_lined_up_and_marked() -> None:
    text = side_by_side(
        ["a", "b", "c", "d"], ["a", "B", "c", "e", "f"], names=("expected", "actual")
    )
    assert text.splitlines() == [
        "  expected | actual",
        "  a        | a",
        "! b        | B",
        "  c        | c",
        "! d        | e",
        "+          | f",
    ]


def test_missing_rows_leave_the_right_column_empty() -> None:
    assert side_by_side(["x", "y"], ["x"], names=("want", "got")).splitlines() == [
        "  want | got",
        "  x    | x",
        "- y    |",
    ]
