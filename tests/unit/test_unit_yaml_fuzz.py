"""Property: whatever a case file contains, load_case_file answers with SpecErrors, never a crash.

Inputs that make PyYAML's own constructors crash (``yaml.safe_load`` raises something other
than a YAMLError, e.g. ``2024-13-01``) are a known bug, shown by
``test_scalars_pyyaml_cannot_construct_are_spec_errors_at_their_line`` in
test_unit_spec_load.py; they are skipped here so that this property can find new ones.
"""

import contextlib
import math

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pytest_exportcheck.spec import Case, SpecError, load_case_file

FUZZ = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

KEYS = [
    "cases", "a", "b", "description", "model", "target", "args", "kwargs", "mode", "inputs",
    "factory", "shape", "dtype", "init", "low", "high", "value", "requires_grad", "data",
    "tuple", "dict", "seed", "captures", "checks", "expect", "placeholders", "name", "kind",
    "modules", "mutated_buffers", "parity", "atol", "rtol", "steps", "mutation", "xfail",
    "reason", "strict", "_target_", "_args_", "bad-name", "captrues",
]  # fmt: skip
WORDS = [
    "m.py:M", "torch.nn:Linear", "float32", "int64", "bool", "half", "randn", "rand",
    "randint", "zeros", "ones", "arange", "full", "export", "export-strict", "signature",
    "hierarchy", "mutation", "parity", "eval", "train", "parameter", "user_input", "x",
]  # fmt: skip
TOKENS = [
    *(f"{key}:" for key in KEYS), *WORDS,
    "\n", "\n  ", "\n    ", "\n      ", " ", " ", "- ", "-", "{", "}", "[", "]", ",", ":", "? ",
    "'", '"', "#", "&a ", "*a", "<<: ", "!!python/object:os.system", "!!str ", "!!binary ",
    "---", "...", "|", ">", "~", "null", "true", "no", "0", "7", "-1", "1.5", "1e400", ".nan",
    ".inf", "\t", "%YAML 1.1", "@", "`", "\\", "\u00e9", "\x00", "\ufeff",
]  # fmt: skip


def loader_crashes(text):
    """Whether PyYAML itself (not this plugin) crashes on ``text``: the known, separate bug."""
    try:
        yaml.safe_load(text)
    except yaml.YAMLError:
        return False
    except Exception:
        return True
    return False


def check_load(path):
    """load_case_file(path) raises only SpecError; each case is either loaded or a SpecError."""
    try:
        entries = load_case_file(path)
    except SpecError as error:
        assert error.message
        assert error.line is None or error.line >= 1
        return
    assert entries, "a file that loads has at least one case"
    for entry in entries:
        assert (entry.case is None) != (entry.error is None)
        if entry.error is not None:
            assert isinstance(entry.error, SpecError)
            assert entry.error.line is None or entry.error.line >= 1
        else:
            assert isinstance(entry.case, Case)


@pytest.fixture(scope="module")
def case_path(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz") / "fuzz.yaml"


def check_text(path, text):
    assume(not loader_crashes(text))
    path.write_text(text, encoding="utf-8")
    check_load(path)


# --- raw text ---------------------------------------------------------------------------------


@FUZZ
@given(text=st.lists(st.sampled_from(TOKENS), max_size=60).map("".join))
def test_yaml_ish_text_gives_only_spec_errors(case_path, text):
    check_text(case_path, text)


@FUZZ
@given(text=st.text(max_size=200))
def test_arbitrary_text_gives_only_spec_errors(case_path, text):
    check_text(case_path, text)


@FUZZ
@given(data=st.binary(max_size=200))
def test_arbitrary_bytes_give_only_spec_errors(case_path, data):
    with contextlib.suppress(UnicodeDecodeError):  # undecodable bytes never reach PyYAML
        assume(not loader_crashes(data.decode("utf-8")))
    case_path.write_bytes(data)
    check_load(case_path)


# --- random documents -------------------------------------------------------------------------


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(WORDS),
    st.text(max_size=8),
)
documents = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.one_of(st.sampled_from(KEYS), st.integers(-3, 3), st.text(max_size=5)),
            children,
            max_size=5,
        ),
    ),
    max_leaves=30,
)


@FUZZ
@given(document=documents)
def test_random_documents_give_only_spec_errors(case_path, document):
    check_text(case_path, yaml.safe_dump(document))


@FUZZ
@given(cases=st.dictionaries(st.sampled_from(KEYS), documents, min_size=1, max_size=3))
def test_random_cases_give_only_spec_errors(case_path, cases):
    check_text(case_path, yaml.safe_dump({"cases": cases}))


# --- near-valid cases ---------------------------------------------------------------------------

numbers = st.one_of(
    st.integers(-5, 10),
    st.floats(-5, 10),
    st.sampled_from([math.nan, math.inf, -math.inf, 2**64]),
)
tensor_specs = st.fixed_dictionaries(
    {
        "shape": st.lists(
            st.one_of(st.integers(0, 4), st.sampled_from([2.0, -1, 10**9])), max_size=3
        )
    },
    optional={
        "dtype": st.sampled_from(["float32", "int64", "bool", "half", "complex64", "uint8", "int"]),
        "init": st.sampled_from(["randn", "rand", "randint", "zeros", "ones", "arange", "full"]),
        "low": numbers,
        "high": numbers,
        "value": st.one_of(numbers, st.booleans()),
        "requires_grad": st.booleans(),
    },
)
input_values = st.recursive(
    st.one_of(tensor_specs, scalars, st.builds(lambda d: {"data": d}, st.lists(st.integers()))),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.builds(lambda items: {"tuple": items}, st.lists(children, max_size=3)),
        st.builds(
            lambda m: {"dict": m}, st.dictionaries(st.sampled_from(KEYS), children, max_size=3)
        ),
        st.dictionaries(st.sampled_from(["h", "c", "mask"]), children, max_size=3),
    ),
    max_leaves=8,
)
checks = st.lists(
    st.sampled_from(["signature", "hierarchy", "mutation", "parity"]), min_size=1, unique=True
)
captures = st.lists(st.sampled_from(["export", "export-strict"]), min_size=1, unique=True)
xfails = st.fixed_dictionaries(
    {"reason": st.sampled_from(["known", ""])},
    optional={"captures": captures, "checks": checks, "strict": st.booleans()},
)
near_valid_cases = st.fixed_dictionaries(
    {
        "description": st.sampled_from(["a case", ""]),
        "model": st.fixed_dictionaries(
            {"target": st.sampled_from(["m.py:M", "torch.nn:Linear", "m.py", "a:b:c"])},
            optional={
                "args": st.lists(scalars, max_size=2),
                "mode": st.sampled_from(["eval", "train", "test"]),
            },
        ),
        "inputs": st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    "args": st.lists(input_values, max_size=3),
                    "kwargs": st.dictionaries(
                        st.sampled_from(["x", "mask"]), input_values, max_size=2
                    ),
                },
            ),
            st.fixed_dictionaries(
                {"factory": st.just("m.py:make")}, optional={"kwargs": documents}
            ),
        ),
    },
    optional={
        "seed": numbers,
        "captures": captures,
        "checks": checks,
        "xfail": st.one_of(xfails, st.lists(xfails, max_size=2)),
        "expect": st.fixed_dictionaries(
            {},
            optional={
                "parity": st.fixed_dictionaries({}, optional={"atol": numbers, "steps": numbers}),
                "mutation": st.fixed_dictionaries({}, optional={"steps": numbers}),
                "modules": st.lists(st.sampled_from(WORDS), max_size=2),
            },
        ),
    },
)


@FUZZ
@given(cases=st.dictionaries(st.sampled_from(["a", "b", "c_1"]), near_valid_cases, min_size=1))
def test_near_valid_cases_give_only_spec_errors(case_path, cases):
    check_text(case_path, yaml.safe_dump({"cases": cases}))
