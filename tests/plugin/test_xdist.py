"""Under pytest-xdist the same items run with the same outcomes as in one process."""

from __future__ import annotations

import json
import os
import re

import pytest
from casekit import MLP_CASE, write_cases

from pytest_exportcheck.parallel.worker_threads import USER_SETTINGS

MIXED = """
cases:
  passes:
    description: passes everything
    model: {target: models.py:Counter}
    inputs: {args: [{shape: [2, 4]}]}
    captures: [export, export-strict]
  python_state:
    description: fails mutation and parity at step 2
    model: {target: models.py:PythonCounter}
    inputs: {args: [{shape: [2, 4]}]}
    expect: {parity: {steps: 2}}
    xfail: {reason: "python state baked in", checks: [mutation]}
  eager_raises:
    description: case error
    model: {target: models.py:Raising}
    inputs: {args: [{shape: [2, 4]}]}
  export_raises:
    description: capture error
    model: {target: models.py:DataDependent}
    inputs: {args: [{shape: [2, 4]}]}
  bad_key:
    description: spec error
    model: {target: models.py:Mlp}
    inputs: {args: [{shape: [2, 4]}]}
    seeed: 1
"""

OUTCOME_LINE = re.compile(r"^(PASSED|FAILED|XFAIL|XPASS|SKIPPED|ERROR) (\S+)")


def outcomes(result: pytest.RunResult) -> dict[str, str]:
    found = {}
    for line in result.outlines:
        match = OUTCOME_LINE.match(line)
        if match:
            found[match.group(2)] = match.group(1)
    return found


def test_two_workers_give_the_same_outcomes_as_one_process(project: pytest.Pytester) -> None:
    write_cases(project, MIXED)
    single = project.runpytest("--exportcheck", "-rA", "-p", "no:cacheprovider")
    parallel = project.runpytest("--exportcheck", "-rA", "-n", "2", "-p", "no:cacheprovider")
    assert single.ret == parallel.ret == pytest.ExitCode.TESTS_FAILED
    assert len(outcomes(single)) == 10 + 1 + 5 * 3 + 1  # 'passes' compares its two captures
    assert outcomes(parallel) == outcomes(single)
    assert outcomes(single)["cases/main.yaml::python_state::mutation[export-cpu]"] == "XFAIL"
    assert outcomes(single)["cases/main.yaml::python_state::parity[export-cpu]"] == "FAILED"


def test_each_run_keeps_its_items_durations_for_the_next_to_schedule(
    project: pytest.Pytester, dist: list[str]
) -> None:
    write_cases(project, MLP_CASE)
    project.runpytest("--exportcheck", *dist).assert_outcomes(passed=5)
    cached = project.path / ".pytest_cache" / "v" / "exportcheck" / "durations"
    durations = json.loads(cached.read_text())
    assert len(durations) == 5
    assert all(nodeid.startswith("cases/main.yaml::mlp::") for nodeid in durations)
    assert all(seconds > 0 for seconds in durations.values())
    # A later run of some items only keeps the others' durations.
    project.runpytest("--exportcheck", "-k", "parity", *dist).assert_outcomes(passed=1)
    assert sorted(json.loads(cached.read_text())) == sorted(durations)
    # The durations of a case file that is gone are dropped.
    cases = project.path / "cases"
    (cases / "main.yaml").rename(cases / "renamed.yaml")
    project.runpytest("--exportcheck", "-k", "parity", *dist).assert_outcomes(passed=1)
    kept = json.loads(cached.read_text())
    assert sorted(kept) == ["cases/renamed.yaml::mlp::parity[export-cpu]"]


THREADS_MODEL = """
import os

import torch
from torch import nn


class ChecksItsThreads(nn.Module):
    # Fails eager unless torch's threads are this worker's share of the cores.
    def forward(self, x):
        workers = int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
        share = max(1, len(os.sched_getaffinity(0)) // workers)
        if torch.get_num_threads() > share:
            raise RuntimeError(f"{torch.get_num_threads()} threads, share {share}")
        # Inductor's compile processes too (unless the user set them)
        compile_threads = os.environ.get("TORCHINDUCTOR_COMPILE_THREADS")
        if compile_threads != os.environ.get("USERS_COMPILE_THREADS", str(share)):
            raise RuntimeError(f"TORCHINDUCTOR_COMPILE_THREADS {compile_threads}, share {share}")
        return x * 2
"""


@pytest.mark.skipif(
    any(os.environ.get(name) for name in USER_SETTINGS),
    reason="a thread setting of the user's own stands",
)
def test_each_worker_uses_its_share_of_the_cores(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    users = os.environ.get("TORCHINDUCTOR_COMPILE_THREADS")
    if users:  # the user's own stands, and the model checks that it does
        monkeypatch.setenv("USERS_COMPILE_THREADS", users)
    (project.path / "cases" / "threads.py").write_text(THREADS_MODEL)
    write_cases(
        project,
        """
cases:
  threads:
    description: checks torch's thread count in its worker
    model: {target: threads.py:ChecksItsThreads}
    inputs: {args: [{shape: [2, 4]}]}
    captures: [export]
    checks: [parity]
""",
    )
    project.runpytest("--exportcheck", "-n", "2").assert_outcomes(passed=1)
