"""Device requests: parsing, expansion against what was discovered, narrowing per case."""

from __future__ import annotations

import pytest

from pytest_exportcheck.model.devices import (
    SIMULATE_ENV,
    DeviceError,
    discover,
    parse_request,
    select,
    unavailable_reason,
)

GPU_BOX = ["cpu", "cuda:0", "cuda:1"]


def test_a_request_is_a_comma_separated_list() -> None:
    assert parse_request(" cpu, cuda:1 ,meta") == ["cpu", "cuda:1", "meta"]


def test_an_empty_request_means_cpu() -> None:
    assert parse_request("") == ["cpu"]


@pytest.mark.parametrize("bad", ["gpu", "cuda:x", "tpu:0", "CPU"])
def test_unknown_device_names_are_refused_with_the_choices(bad: str) -> None:
    with pytest.raises(DeviceError, match=rf"unknown device '{bad}': use all, cpu, meta, cuda"):
        parse_request(bad)


def test_a_kind_expands_to_every_discovered_device_of_it() -> None:
    assert select(["cpu", "cuda"], GPU_BOX) == ["cpu", "cuda:0", "cuda:1"]


def test_all_is_every_discovered_device_but_not_meta() -> None:
    assert select(["all"], [*GPU_BOX]) == GPU_BOX
    assert select(["all", "meta"], GPU_BOX) == [*GPU_BOX, "meta"]


def test_a_kind_with_nothing_discovered_stays_so_its_items_exist_and_skip() -> None:
    assert select(["cpu", "cuda"], ["cpu"]) == ["cpu", "cuda"]


def test_an_exact_device_is_kept_even_if_not_discovered() -> None:
    assert select(["cuda:3"], GPU_BOX) == ["cuda:3"]


def test_repeats_are_dropped_in_request_order() -> None:
    assert select(["cuda:1", "cuda", "cpu", "cpu"], GPU_BOX) == ["cuda:1", "cuda:0", "cpu"]


def test_a_case_narrows_by_kind_or_by_name() -> None:
    assert select(["all"], GPU_BOX, narrowed_to=["cuda"]) == ["cuda:0", "cuda:1"]
    assert select(["all"], GPU_BOX, narrowed_to=["cpu", "cuda:1"]) == ["cpu", "cuda:1"]


def test_a_case_cannot_widen_the_run() -> None:
    assert select(["cpu"], GPU_BOX, narrowed_to=["cuda"]) == []


def test_simulated_devices_replace_discovery(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SIMULATE_ENV, "cpu,cuda:0,cuda:1")
    assert discover() == GPU_BOX


def test_discovery_always_offers_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SIMULATE_ENV, raising=False)
    assert discover()[0] == "cpu"


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_cpu_and_meta_are_always_available(device: str) -> None:
    assert unavailable_reason(device) is None


def test_an_absent_accelerator_is_named_with_the_reason() -> None:
    import torch

    # cuda:97 is absent everywhere; what torch sees is read, so this holds on a GPU machine.
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    sees = f"torch sees {count} cuda device(s)" if count else "torch sees no cuda device"
    assert unavailable_reason("cuda:97") == f"device cuda:97 is not available here: {sees}"
