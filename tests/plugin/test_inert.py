"""Without --exportcheck the plugin is inert: no YAML collected, torch never imported."""

from __future__ import annotations

import pytest
from casekit import MLP_CASE, write_cases


def test_plain_run_does_not_import_torch(project: pytest.Pytester) -> None:
    # A subprocess: the point is a fresh interpreter in which nothing else imported torch.
    write_cases(project, MLP_CASE)
    project.makepyfile(
        test_probe="""
        import sys

        def test_torch_was_not_imported():
            assert "pytest_exportcheck.plugin" in sys.modules, "plugin not loaded"
            heavy = [m for m in ("torch", "jsonschema") if m in sys.modules]
            assert heavy == []
        """
    )
    result = project.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_yaml_cases_are_not_collected_without_the_flag(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    result = project.runpytest("--collect-only", "-q", "cases")
    result.stdout.no_fnmatch_line("*mlp*")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_plugin_registers_through_the_pytest11_entry_point() -> None:
    from importlib.metadata import entry_points

    names = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert names.get("exportcheck") == "pytest_exportcheck.plugin"
