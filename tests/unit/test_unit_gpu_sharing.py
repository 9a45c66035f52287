"""The cap of workers per GPU: reading the settings, the memory arithmetic, the deal."""

from __future__ import annotations

import pytest

from pytest_exportcheck.parallel.gpu_sharing import (
    GIB,
    Cap,
    SharingError,
    cap_for,
    deal,
    memory_per_worker,
    parse_size,
    parse_workers,
)


@pytest.mark.parametrize(
    ("text", "size"),
    [("4GiB", 4 * GIB), ("2.5G", int(2.5 * GIB)), ("512MiB", 512 << 20), ("1024", 1024)],
)
def test_sizes_read_in_powers_of_1024(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "lots", "4 GB of it", "-1G"])
def test_an_unreadable_size_says_how_to_write_one(text: str) -> None:
    with pytest.raises(SharingError, match=r"use e\.g\. 4GiB, 512MiB or a number of bytes"):
        parse_size(text)


def test_worker_counts() -> None:
    assert parse_workers("auto") is None
    assert parse_workers(" 3 ") == 3
    assert parse_workers("all") >= 1 << 20
    for bad in ("0", "-2", "many"):
        with pytest.raises(SharingError):
            parse_workers(bad)


def test_the_auto_cap_is_what_free_memory_holds() -> None:
    cap = cap_for("cuda:0", 14, None, 80 * GIB, (4 * GIB, "4.0 GiB per worker (default)"))
    assert cap == Cap(
        14,
        "auto: 80.0 GiB free x 0.9 / 4.0 GiB per worker (default) = 18, at most the 14 workers",
    )
    small = cap_for("cuda:0", 14, None, 3 * GIB, (4 * GIB, "4.0 GiB per worker (default)"))
    assert small.workers == 1
    assert small.why.endswith("= 0, at least one")


def test_a_requested_cap_needs_no_memory_figure() -> None:
    cap = cap_for("cuda:0", 8, 2, None, (4 * GIB, ""))
    assert cap == Cap(2, "2 by --exportcheck-gpu-workers / exportcheck_gpu_workers")
    assert cap_for("cuda:0", 8, 1 << 30, None, (4 * GIB, "")).workers == 8


def test_a_worker_s_need_comes_from_the_ini_then_the_last_peak_then_the_default() -> None:
    assert memory_per_worker("6GiB", 1 * GIB)[0] == 6 * GIB
    assert memory_per_worker("", 1 * GIB)[0] == int(1.5 * GIB * 1.5)
    assert memory_per_worker("", None)[0] == 4 * GIB


def test_gpus_are_spread_over_the_workers() -> None:
    workers = [f"gw{i}" for i in range(4)]
    caps = {"cuda:0": Cap(2, ""), "cuda:1": Cap(2, "")}
    assert deal(["cuda:0", "cuda:1"], workers, caps) == {
        "cuda:0": ["gw0", "gw1"],
        "cuda:1": ["gw2", "gw3"],
    }
    everyone = {"cuda:0": Cap(4, ""), "cuda:1": Cap(4, "")}
    assert deal(["cuda:0", "cuda:1"], workers, everyone)["cuda:1"] == workers
