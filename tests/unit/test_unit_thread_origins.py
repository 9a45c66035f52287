"""A thread an item leaves running fails its case only when the case's code started it: a
thread torch's own pool starts (an idle ThreadPoolExecutor worker) is never the case's."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch.utils._functools as torch_functools

from pytest_exportcheck.containment.process_state import LeakedState, kept
from pytest_exportcheck.containment.thread_origins import origin_of, recording_origins


@pytest.fixture
def torch_pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[ThreadPoolExecutor]:
    """torch's module-level prefetch pool, fresh: its first submit starts a worker thread
    (non-daemon, idle until the interpreter exits) from torch/utils/_functools.py."""
    if not hasattr(torch_functools, "_prefetch_executor"):  # 2.9 and 2.11 have none; 2.13 has
        pytest.skip("this torch has no prefetch pool in torch/utils/_functools.py")
    pool = ThreadPoolExecutor(max_workers=1)
    monkeypatch.setattr(torch_functools, "_prefetch_executor", pool)
    yield pool
    pool.shutdown()


def torch_starts_a_thread() -> None:
    torch_functools.prefetchable_cache(lambda: 42).prefetch()


def test_a_thread_torchs_pool_starts_is_torchs(torch_pool: ThreadPoolExecutor) -> None:
    with recording_origins():
        torch_starts_a_thread()
    (worker,) = torch_pool._threads
    origin = origin_of(worker)
    assert origin is not None and origin.library == "torch"
    assert "torch/utils/_functools.py" in origin.where


def test_a_thread_torch_leaves_running_does_not_fail_the_item(
    torch_pool: ThreadPoolExecutor,
) -> None:
    # Before: [case] ... 1 non-daemon thread(s) left running: 'ThreadPoolExecutor-..._0'.
    with pytest.raises(RuntimeError, match="export raised"), kept("cases/x.yaml:2"):
        torch_starts_a_thread()
        raise RuntimeError("export raised")  # the capture's own error stays the error
    assert all(thread.is_alive() and not thread.daemon for thread in torch_pool._threads)


def test_a_thread_the_models_code_leaves_running_fails_the_item_naming_where() -> None:
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="model-pool")
    try:
        with pytest.raises(LeakedState) as leak, kept("cases/x.yaml:2"):
            pool.submit(lambda: None).result()  # the model's own pool, from the model's code
        message = str(leak.value)
        assert "1 non-daemon thread(s) left running: 'model-pool_0' (started at " in message
        assert "test_unit_thread_origins.py:" in message
    finally:
        pool.shutdown()


def test_a_thread_started_from_the_standard_library_alone_takes_its_starters_origin() -> None:
    inner = threading.Thread(target=lambda: None, name="inner")
    with recording_origins():
        # outer runs inner.start from threading.py's run(): no frame but the stdlib's.
        outer = threading.Thread(target=inner.start, name="outer")
        outer.start()
        outer.join()
    inner.join()
    assert origin_of(inner) == origin_of(outer)
    origin = origin_of(inner)
    assert origin is not None and origin.cases_fault
    assert "test_unit_thread_origins.py:" in origin.where


def test_thread_start_is_put_back() -> None:
    start = threading.Thread.start
    with pytest.raises(RuntimeError), recording_origins():
        raise RuntimeError
    assert threading.Thread.start is start
