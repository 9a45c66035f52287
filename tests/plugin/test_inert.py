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

        def test_the_plugins_modules_are_not_rewritten():
            # pytest marks every module of a plugin's distribution for assertion
            # rewriting; this one's are read as Python compiled them (unrewritten.py).
            from pytest_exportcheck.recordings import atomic

            assert type(atomic.__loader__).__name__ == "SourceFileLoader"

        def test_the_users_asserts_are_still_rewritten():
            seen = 1
            assert seen == 2
        """
    )
    result = project.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["E       assert 1 == 2"])


def test_yaml_cases_are_not_collected_without_the_flag(project: pytest.Pytester) -> None:
    write_cases(project, MLP_CASE)
    result = project.runpytest("--collect-only", "-q", "cases")
    result.stdout.no_fnmatch_line("*mlp*")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_plugin_registers_through_the_pytest11_entry_point() -> None:
    from importlib.metadata import entry_points

    names = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert names.get("exportcheck") == "pytest_exportcheck.plugin"


@pytest.mark.parametrize(
    "args",
    [["--help"], ["--version"], ["--co", "-q"], ["-p", "no:exportcheck", "-q"]],
    ids=["help", "version", "collect-only", "plugin-off"],
)
def test_the_first_commands_work_without_the_flag(
    project: pytest.Pytester, args: list[str]
) -> None:
    # A fresh interpreter, as a user types them: an option's help once held a bare "90%"
    # that argparse read as a format and `pytest --help` crashed in every project.
    write_cases(project, MLP_CASE)
    project.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = project.runpytest_subprocess("-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    assert "Traceback (most recent call last)" not in result.stdout.str() + result.stderr.str()
    if args == ["--help"]:
        result.stdout.fnmatch_lines(["*--exportcheck-memory-limit*", "*90% of the machine's*"])


def test_every_option_and_ini_key_renders_its_help() -> None:
    import argparse

    from pytest_exportcheck import plugin

    parser = pytest.Parser(_ispytest=True)
    plugin.pytest_addoption(parser)
    group = parser.getgroup("exportcheck")
    assert group.options, "the plugin registered no options"
    formatter = argparse.HelpFormatter("pytest")
    for option in group.options:
        action = argparse.Action(option.names(), dest=option.dest, help=option.attrs()["help"])
        rendered = formatter._expand_help(action)  # what --help does to each: help % params
        assert rendered.replace("%%", "%"), option.names()
    for name, (help_text, _type, _default) in parser._inidict.items():
        if name.startswith("exportcheck"):
            assert help_text and "%%" not in help_text, name  # printed as written, not formatted
