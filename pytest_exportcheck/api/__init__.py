"""The Python API: check a model object exactly as a YAML case is checked.

* ``check.py``    :func:`check_model` and the ``exportcheck`` fixture: arguments → a
  validated case, located at the caller's line;
* ``given.py``    the given model and inputs as a subject, and the loop that runs
  every item of the case (the YAML items' run, collected as results);
* ``results.py``  :class:`ItemResult`, :class:`Report` and the two errors.
* ``reproduce.py`` ``repro=DIR``: the given model and inputs pickled beside each
  failure's plain-torch script (``items/reproductions.py`` writes and runs it).

Importing this package imports neither torch nor jsonschema: the package root
re-exports it lazily, and the ``exportcheck`` fixture is registered in every
pytest run. ``given.py`` and ``reproduce.py`` (torch) are imported when a check runs.
"""

from pytest_exportcheck.api.check import check_model, fixture_checker, make_case
from pytest_exportcheck.api.results import (
    ExportCheckFailed,
    InvalidCase,
    ItemResult,
    Outcome,
    Report,
)

__all__ = [
    "ExportCheckFailed",
    "InvalidCase",
    "ItemResult",
    "Outcome",
    "Report",
    "check_model",
    "fixture_checker",
    "make_case",
]
