"""The scaffold's lowered packages: compiled once per scaffold, kept between its rounds
in a folder that ends with it, or in the cache of a caller that keeps one."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_exportcheck.lowering import artifact_cache
from pytest_exportcheck.scaffold.verify import _packages_kept_between_rounds


def _caches_seen_in_two_calls() -> list[artifact_cache.PackageCache | None]:
    seen: list[artifact_cache.PackageCache | None] = []

    @_packages_kept_between_rounds()
    def rounds() -> None:  # every round of one scaffold runs inside one call
        seen.append(artifact_cache.packages())

    rounds()
    rounds()
    return seen


def test_a_scaffold_keeps_its_packages_in_a_scratch_folder_that_ends_with_it() -> None:
    inductor_cache = os.environ.get(artifact_cache.INDUCTOR_CACHE_VARIABLE)
    first, second = _caches_seen_in_two_calls()
    assert first is not None and second is not None
    assert first.root.name.startswith("exportcheck-new-")
    assert first.root != second.root  # each scaffold its own
    assert not first.root.exists() and not second.root.exists()
    assert artifact_cache.packages() is None
    # Inductor's own caches stay where the user keeps them.
    assert os.environ.get(artifact_cache.INDUCTOR_CACHE_VARIABLE) == inductor_cache


def test_a_caller_that_keeps_packages_keeps_its_own(tmp_path: Path) -> None:
    with artifact_cache.kept_under(tmp_path, inductor=False) as kept:
        assert _caches_seen_in_two_calls() == [kept, kept]
        assert artifact_cache.packages() is kept
