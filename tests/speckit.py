"""Helpers for the spec tests: write a case file, load it, and get the error it gives."""

import textwrap

import pytest

from pytest_exportcheck.spec import SpecError, load_case_file


def write(tmp_path, text, name="cases.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def load(tmp_path, text):
    return load_case_file(write(tmp_path, text))


def file_error(tmp_path, text):
    """The SpecError that makes the whole file unusable."""
    with pytest.raises(SpecError) as info:
        load(tmp_path, text)
    return info.value


def case_error(tmp_path, text, name="a"):
    """The SpecError of one case of the file (the file itself loads)."""
    loaded = {entry.name: entry for entry in load(tmp_path, text)}
    entry = loaded[name]
    assert entry.case is None, f"case {name!r} unexpectedly loaded"
    assert entry.error is not None
    return entry.error


def line_with(text, needle):
    """1-based line of the first line of ``text`` containing ``needle``."""
    lines = textwrap.dedent(text).lstrip("\n").splitlines()
    return next(number for number, line in enumerate(lines, 1) if needle in line)


def any_error(tmp_path, text, name):
    """The SpecError that stops case ``name``: its own, or the whole file's."""
    try:
        entries = {entry.name: entry for entry in load(tmp_path, text)}
    except SpecError as error:
        return error
    assert entries[name].error is not None, f"case {name!r} unexpectedly loaded"
    return entries[name].error


def one_case(extra="", inputs="args:\n        - {shape: [2]}"):
    """A valid case `a` (its name on line 2) plus ``extra`` lines at case level."""
    return (
        "cases:\n"
        "  a:\n"
        "    description: a case\n"
        "    model: {target: 'models.py:Model'}\n"
        "    inputs:\n"
        f"      {inputs}\n"
        f"{extra}"
    )


def tensor_case(spec):
    """Case `a` whose only input is the tensor spec ``spec`` (on line 7)."""
    return one_case(inputs=f"args:\n        - {spec}")
