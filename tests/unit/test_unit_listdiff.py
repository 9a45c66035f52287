"""Side-by-side diffs of expected and actual lists."""

from __future__ import annotations

from pytest_exportcheck.checks.listdiff import difference_counts, side_by_side


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


def test_long_runs_of_matching_rows_are_counted_not_listed() -> None:
    expected = [f"layer{i}" for i in range(200)]
    actual = [*expected[:100], "extra", *expected[100:]]
    text = side_by_side(expected, actual, names=("expected", "unflattened"))
    assert text.splitlines() == [
        "  expected | unflattened",
        "  … 98 matching rows …",
        "  layer98  | layer98",
        "  layer99  | layer99",
        "+          | extra",
        "  layer100 | layer100",
        "  layer101 | layer101",
        "  … 98 matching rows …",
    ]
    assert difference_counts(expected, actual) == "1 extra; 200 matching"
