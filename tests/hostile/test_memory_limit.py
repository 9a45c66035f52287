"""``exportcheck_memory_limit``: a model asking for more memory than the limit fails its
own item, naming the limit, and the process goes on (no worker killed by the system)."""

from __future__ import annotations

import resource

import pytest
from hostilekit import hostile_case, write_hostile

GIB = 1 << 30


def data_in_use() -> int:
    """This process's private writable memory now (what RLIMIT_DATA counts)."""
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmData:"))
    return int(line.split()[1]) * 1024


def test_an_allocation_past_the_limit_fails_its_item_naming_the_limit(
    hostile: pytest.Pytester, dist: list[str]
) -> None:
    # Above what this process (and so a fresh worker) already holds, below what the
    # model asks for: the model's request alone is past it.
    limit_gib = data_in_use() // GIB + 2
    nbytes = (limit_gib + 1) * GIB
    target = f"{{target: hostile.py:AllocatesPastLimit, kwargs: {{nbytes: {nbytes}}}}}"
    write_hostile(hostile, hostile_case("greedy", target, captures="[export]", checks="[parity]"))
    before = resource.getrlimit(resource.RLIMIT_DATA)
    result = hostile.runpytest("--exportcheck", f"--exportcheck-memory-limit={limit_gib}GiB", *dist)
    result.stdout.fnmatch_lines([f"exportcheck: memory limit {limit_gib}.0 GiB per process"])
    result.stdout.fnmatch_lines(
        [
            "[[]eager[]] cases/hostile.yaml:2: the eager forward raised: RuntimeError: *"
            "can't allocate memory*",
            f"(this process's memory limit is {limit_gib}.0 GiB, exportcheck_memory_limit: "
            "the allocation past it failed here instead of the system killing the process*",
        ]
    )
    result.assert_outcomes(failed=1, passed=1)
    # An in-process run gives its host back the limit it had.
    assert resource.getrlimit(resource.RLIMIT_DATA) == before


def test_the_limit_is_not_set_where_the_run_checks_cuda_devices(
    hostile: pytest.Pytester,
) -> None:
    write_hostile(hostile)
    result = hostile.runpytest(
        "--exportcheck",
        "--exportcheck-memory-limit=8GiB",
        "--exportcheck-devices=cuda:0",
        "--collect-only",
        "-p",
        "no:xdist",
    )
    result.stdout.fnmatch_lines(
        ["exportcheck: memory limit not set: this run checks CUDA devices, *"]
    )


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("lots", "'lots': use e.g. 4GiB, 512MiB or a number of bytes"),
        ("512MiB", "'512MiB' is under 1GiB, less than torch itself needs"),
    ],
)
def test_a_bad_limit_is_a_usage_error_naming_it(
    hostile: pytest.Pytester, value: str, says: str
) -> None:
    result = hostile.runpytest("--exportcheck", f"--exportcheck-memory-limit={value}")
    result.stderr.fnmatch_lines([f"*exportcheck_memory_limit: *{says}*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
