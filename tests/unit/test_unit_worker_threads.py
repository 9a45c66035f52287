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


def test_a_worker_gets_its_share_of_inductors_compile_processes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torch._inductor.config as inductor_config

    monkeypatch.setattr(inductor_config, "compile_threads", inductor_config.compile_threads)
    monkeypatch.setattr(worker_threads, "usable_cores", lambda: 16)
    environ: dict[str, str] = {}
    assert worker_threads.limit_compile_threads(14, environ) == 1
    assert environ == {"TORCHINDUCTOR_COMPILE_THREADS": "1"}  # for Inductor's first import
    assert inductor_config.compile_threads == 1  # and on its config, already imported
    assert worker_threads.limit_compile_threads(4, environ := {}) == 4


def test_the_users_compile_threads_stand() -> None:
    environ = {"TORCHINDUCTOR_COMPILE_THREADS": "8"}
    assert worker_threads.limit_compile_threads(14, environ) is None
    assert environ == {"TORCHINDUCTOR_COMPILE_THREADS": "8"}
