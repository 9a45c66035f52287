"""The names a fresh process must give the model files it imports (``names_here``): every
module of this process whose file is one of them, whatever path it was imported by."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_exportcheck.lowering.fresh_process import names_here


@pytest.fixture
def imported(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """``real.py`` imported as ``m_real``, through the link ``alias.py`` as ``m_alias``, and
    another folder's ``real.py`` as ``m_other``."""
    (tmp_path / "real.py").write_text("X = 1\n")
    (tmp_path / "alias.py").symlink_to(tmp_path / "real.py")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "real.py").write_text("X = 2\n")
    files = {
        "m_real": tmp_path / "real.py",
        "m_alias": tmp_path / "alias.py",
        "m_other": tmp_path / "other" / "real.py",
    }
    for name, path in files.items():
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    yield files
    for name in files:
        sys.modules.pop(name, None)


def test_a_file_is_named_by_every_module_imported_from_it_links_included(
    imported: dict[str, Path],
) -> None:
    real = str(imported["m_real"])
    assert names_here((real, "torch.nn")) == {real: ["m_alias", "m_real"]}


def test_a_link_given_as_the_import_finds_the_modules_of_its_target(
    imported: dict[str, Path],
) -> None:
    alias = str(imported["m_alias"])
    assert names_here((alias,)) == {alias: ["m_alias", "m_real"]}


def test_a_file_of_the_same_name_elsewhere_is_not_one_of_them(
    imported: dict[str, Path],
) -> None:
    other = str(imported["m_other"])
    assert names_here((other,)) == {other: ["m_other"]}
    assert names_here(("torch.nn",)) == {}
