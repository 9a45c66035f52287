"""Each xdist worker gets its share of the cores for torch's threads."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from pytest_exportcheck.parallel import worker_threads


@pytest.mark.parametrize(
    ("cores", "workers", "threads"), [(16, 14, 1), (16, 8, 2), (64, 8, 8), (2, 2, 1), (2, 4, 1)]
)
def test_the_cores_are_shared_out(cores: int, workers: int, threads: int) -> None:
    assert worker_threads.share(cores, workers) == threads


@pytest.fixture
def restore_threads() -> Iterator[None]:
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.usefixtures("restore_threads")
def test_a_worker_sets_its_share(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in worker_threads.USER_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(worker_threads, "usable_cores", lambda: 16)
    torch.set_num_threads(16)
    assert worker_threads.limit_for_worker(8) == 2
    assert torch.get_num_threads() == 2


@pytest.mark.usefixtures("restore_threads")
def test_the_users_own_setting_stands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    monkeypatch.setattr(worker_threads, "usable_cores", lambda: 16)
    torch.set_num_threads(4)
    assert worker_threads.limit_for_worker(8) is None
    assert torch.get_num_threads() == 4
