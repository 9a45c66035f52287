"""describe_exception: the headline of an error and the line of *user* code that raised it."""

import importlib.util
import json
import sys
import textwrap
import traceback

import pytest

from pytest_exportcheck.containment.failures import (
    CaseError,
    CheckFailure,
    describe_exception,
    innermost_user_frame,
)

USER_MODULE = """
import json


def helper(values):
    total = sum(values)
    raise ValueError(f"bad total {total}")


def forward(values):
    return helper(values) + 1


def parse(text):
    return json.loads(text)  # raises inside the stdlib


def long_error():
    raise RuntimeError("\\n".join(f"line {i}" for i in range(30)))


def blank_error():
    raise KeyError()
"""


@pytest.fixture
def user_module(tmp_path):
    path = tmp_path / "user_model.py"
    path.write_text(textwrap.dedent(USER_MODULE).lstrip("\n"), encoding="utf-8")
    name = f"exportcheck_unit_user_model_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(name, None)


def raised(function, *args):
    try:
        function(*args)
    except BaseException as exc:
        return exc
    raise AssertionError(f"{function.__name__} did not raise")


def source_line_number(module, text):
    with open(module.__file__, encoding="utf-8") as source:
        return next(number for number, line in enumerate(source, 1) if text in line)


# --- the message ------------------------------------------------------------------------------


def test_headline_names_the_context_and_the_exception_type(user_module):
    text = describe_exception(raised(user_module.forward, [1, 2]), context="cases.yaml:3: eager")

    assert text.splitlines()[0] == "cases.yaml:3: eager: ValueError: bad total 3"


def test_long_messages_are_cut_and_say_how_many_lines_were_cut(user_module):
    text = describe_exception(raised(user_module.long_error), context="export")

    lines = text.splitlines()
    assert lines[0] == "export: RuntimeError: line 0"
    assert "line 11" in lines
    assert "line 12" not in lines
    assert "... (18 more lines; run with -vv for all)" in lines


def test_messages_of_twelve_lines_are_not_cut():
    text = describe_exception(ValueError("\n".join(str(i) for i in range(12))), context="c")

    assert "more lines" not in text
    assert text.splitlines()[11] == "11"


def test_blank_lines_do_not_count_towards_the_limit():
    message = "\n\n".join(f"part {i}" for i in range(12))

    text = describe_exception(ValueError(message), context="c")

    assert "more lines" not in text
    assert "" not in text.splitlines()


def test_an_exception_without_a_message_says_so():
    assert describe_exception(ValueError(), context="c") == "c: ValueError: (no message)"


def test_an_exception_never_raised_has_no_user_frame():
    assert "raised from user code" not in describe_exception(ValueError("x"), context="c")


# --- the user frame -------------------------------------------------------------------------------


def test_points_at_the_innermost_user_frame_with_its_source_line(user_module):
    text = describe_exception(raised(user_module.forward, [1, 2]), context="eager")

    line = source_line_number(user_module, 'raise ValueError(f"bad total')
    assert "\nraised from user code:\n" in text
    assert f'user_model.py", line {line}, in helper' in text
    assert text.endswith('    raise ValueError(f"bad total {total}")')


def test_frames_inside_the_stdlib_are_skipped(user_module):
    exc = raised(user_module.parse, "{not json")

    assert isinstance(exc, json.JSONDecodeError)
    frame = innermost_user_frame(exc.__traceback__)
    assert frame.filename == user_module.__file__
    assert frame.name == "parse"
    assert frame.lineno == source_line_number(user_module, "return json.loads(text)")


def test_frames_inside_torch_are_skipped(user_module):
    import torch

    def call_torch():
        torch.nn.Linear(2, 2).load_state_dict({})  # raises in torch's Python code

    exc = raised(call_torch)
    frame = innermost_user_frame(exc.__traceback__)

    innermost = [frame for frame, _ in traceback.walk_tb(exc.__traceback__)][-1]
    assert "/torch/" in innermost.f_code.co_filename
    assert frame.name == "call_torch"
    assert frame.filename == __file__


def test_user_frame_render_shows_file_line_function_and_source(user_module):
    frame = innermost_user_frame(raised(user_module.forward, [1]).__traceback__)

    rendered = frame.render()

    first, second = rendered.splitlines()
    assert first.startswith('File "') and first.endswith(f", line {frame.lineno}, in helper")
    assert second == '    raise ValueError(f"bad total {total}")'


def test_no_traceback_means_no_user_frame():
    assert innermost_user_frame(None) is None


# --- failure types ------------------------------------------------------------------------------


def test_failures_render_with_their_stage():
    assert CaseError("no such file").render() == "[case] no such file"


def test_check_failure_counts_and_lists_findings_with_indented_continuations():
    failure = CheckFailure("parity", ["output[0]: differs\n  detail", "output[1]: too"])

    assert failure.stage == "parity"
    assert failure.render() == (
        "[parity] parity check failed (2 findings):\n"
        "- output[0]: differs\n    detail\n"
        "- output[1]: too"
    )


def test_check_failure_with_one_finding_says_finding():
    assert "(1 finding):" in CheckFailure("mutation", ["x"]).message


def test_check_failure_headline_is_the_first_finding_and_a_count_of_the_rest():
    failure = CheckFailure("parity", ["output[0]: differs\n  detail", "output[1]: too"])

    assert failure.headline == "[parity] output[0]: differs (+1 more)"


def test_dependency_failure_repeats_only_the_headline_and_points_at_the_full_report():
    original = CaseError("cases.yaml:3: broken\nlong detail")

    failure = original.as_dependency("cases.yaml::a::signature[export]")

    assert type(failure) is CaseError
    assert failure.message == (
        "cases.yaml:3: broken\n(full report on cases.yaml::a::signature[export])"
    )
