"""One export per (case, capture) per process, released after the last item that needs it."""

from __future__ import annotations

import json

import pytest
from casekit import write_cases

TWO_CASES = """
cases:
  first:
    description: first
    model: {target: models.py:Mlp}
    inputs: {args: [{shape: [2, 4]}]}
    captures: [export, export-strict]
  second:
    description: second
    model: {target: models.py:Counter}
    inputs: {args: [{shape: [2, 4]}]}
"""

COUNTING_CONFTEST = """
import json
from collections import Counter

from pytest_exportcheck import capture as registry

exports = Counter()
alive = []
CONFIG = []

def pytest_configure(config):
    CONFIG.append(config)
    config.saved = dict(registry.CAPTURES)
    for name, fn in config.saved.items():
        def counted(subject, _fn=fn, _name=name):
            exports[f"{subject.case.name}[{_name}]"] += 1
            return _fn(subject)
        registry.CAPTURES[name] = counted

def pytest_runtest_logfinish(nodeid):
    session = CONFIG[0].pluginmanager.get_plugin("exportcheck-session")
    alive.append((nodeid.split("::", 1)[1], len(session.cached_captures())))

def pytest_unconfigure(config):
    registry.CAPTURES.update(config.saved)
    with open("observed.json", "w") as f:
        json.dump({"exports": exports, "alive": alive}, f)
"""


def observe(pytester: pytest.Pytester, *args: str) -> dict:
    pytester.makeconftest(COUNTING_CONFTEST)
    pytester.runpytest("--exportcheck", *args)
    return json.loads((pytester.path / "observed.json").read_text())


def test_each_capture_is_exported_once_for_all_its_checks(project: pytest.Pytester) -> None:
    write_cases(project, TWO_CASES)
    observed = observe(project)
    assert observed["exports"] == {
        "first[export]": 1,
        "first[export-strict]": 1,
        "second[export]": 1,
    }


def test_a_capture_is_released_after_its_last_item(project: pytest.Pytester) -> None:
    write_cases(project, TWO_CASES)
    alive = dict(observe(project)["alive"])
    assert alive["first::signature[export-cpu]"] == 1
    # first's consistency item compares both captures: it is their last user.
    assert alive["first::parity[export-strict-cpu]"] == 2
    assert alive["first::consistency[cpu]"] == 0
    assert alive["second::parity[export-cpu]"] == 1
    assert alive["second::mode[export-cpu]"] == 0


def test_deselected_items_do_not_keep_a_capture_alive(project: pytest.Pytester) -> None:
    write_cases(project, TWO_CASES)
    alive = dict(
        observe(
            project, "-k", "first and not parity and not mode and not strict and not consistency"
        )["alive"]
    )
    assert alive == {
        "first::signature[export-cpu]": 1,
        "first::hierarchy[export-cpu]": 1,
        "first::mutation[export-cpu]": 0,
    }
