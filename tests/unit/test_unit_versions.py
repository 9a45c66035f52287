"""Torch-version conditions in cases: `torch:` specifiers and `when:` overrides."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from packaging.version import Version

from pytest_exportcheck.spec import compat, load_case_file

CASE = """
cases:
  a:
    description: a case
    model: {target: 'models.py:Model'}
    inputs: {args: [{shape: [2]}]}
    captures: [export, export-strict]
    expect:
      mutated_buffers: [count]
      modules: [lin]
    xfail:
      - {reason: old torch only, torch: "<2.9", checks: [parity]}
      - {reason: always, checks: [hierarchy]}
    when:
      - torch: "<2.9"
        captures: [export]
        expect: {mutated_buffers: []}
        xfail: {reason: from when, checks: [signature]}
      - torch: ">=2.14"
        expect: {modules: [lin, act]}
"""


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch):
    def set_version(text: str) -> None:
        monkeypatch.setattr(compat, "torch_version", lambda: Version(text))

    return set_version


def load(tmp_path: Path, text: str = CASE):
    (tmp_path / "cases.yaml").write_text(textwrap.dedent(text))
    return load_case_file(tmp_path / "cases.yaml")


def test_matching_when_entries_are_merged_in_order(tmp_path: Path, installed) -> None:
    installed("2.6.0+cu124")
    (entry,) = load(tmp_path)
    case = entry.case
    assert case.captures == ("export",)
    assert case.expect.mutated_buffers == []
    assert case.expect.modules == ["lin"]  # expect is merged key by key
    # xfails: the case's own that apply, then the when entry's
    assert [x.reason for x in case.xfails] == ["old torch only", "always", "from when"]


def test_entries_that_do_not_match_are_ignored(tmp_path: Path, installed) -> None:
    installed("2.13.0+cpu")
    (entry,) = load(tmp_path)
    case = entry.case
    assert case.captures == ("export", "export-strict")
    assert case.expect.mutated_buffers == ["count"]
    assert [x.reason for x in case.xfails] == ["always"]


def test_a_later_release_matches_its_own_entry(tmp_path: Path, installed) -> None:
    installed("2.14.1")
    (entry,) = load(tmp_path)
    assert entry.case.expect.modules == ["lin", "act"]


def test_accepted_differences_can_be_conditioned(tmp_path: Path, installed) -> None:
    installed("2.9.1")
    text = CASE.replace(
        "      modules: [lin]\n",
        "      modules: [lin]\n"
        "      consistency:\n"
        "        accept:\n"
        "          - {row: 'lifted: a', reason: new, torch: '>=2.9'}\n"
        "          - {row: 'lifted: b', reason: old, torch: '<2.9'}\n",
    )
    (entry,) = load(tmp_path, text)
    assert [a.row for a in entry.case.expect.accepted_differences] == ["lifted: a"]


def test_a_case_may_require_a_torch(tmp_path: Path) -> None:
    (entry,) = load(tmp_path, CASE.replace("    captures:", "    torch: '>=99'\n    captures:", 1))
    assert entry.case.requires_torch == ">=99"


def test_a_bad_specifier_is_a_case_error_at_its_line(tmp_path: Path) -> None:
    (entry,) = load(
        tmp_path, CASE.replace('torch: "<2.9"\n        captures', 'torch: "2.9+"\n        captures')
    )
    assert entry.error is not None
    assert entry.error.message == (
        "torch: '2.9+' is not a PEP 440 version specifier (e.g. '>=2.9', '<2.13')"
    )
    assert entry.error.line == 15


def test_the_installed_version_comes_from_metadata_without_importing_torch() -> None:
    import sys

    import childkit

    code = (
        "import sys; from pytest_exportcheck.spec import compat; v = compat.torch_version(); "
        "assert 'torch' not in sys.modules, 'torch imported'; print(compat.torch_minor())"
    )
    out = childkit.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    import torch

    assert out.stdout.strip() == ".".join(torch.__version__.split(".")[:2])
