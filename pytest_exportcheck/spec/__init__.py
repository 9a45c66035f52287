"""The case format: YAML loading with line numbers, schema validation, typed cases.

Nothing here imports torch, so collection stays cheap and testable on its own.
"""

from pytest_exportcheck.spec.case import Case, ExpectSpec, ModelSpec, XfailSpec
from pytest_exportcheck.spec.errors import SpecError
from pytest_exportcheck.spec.load import load_case_file

__all__ = ["Case", "ExpectSpec", "ModelSpec", "SpecError", "XfailSpec", "load_case_file"]
