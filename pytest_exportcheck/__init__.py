"""pytest-exportcheck: export conformance testing of PyTorch models.

This package root imports nothing heavy: pytest loads it through the ``pytest11``
entry point in every run, with or without ``--exportcheck``. torch is imported
only inside the modules that build, capture and check models.

The Python API (``from pytest_exportcheck import check_model``) is re-exported
lazily, through a module ``__getattr__``, for the same reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_exportcheck.api import (
        ExportCheckFailed,
        InvalidCase,
        ItemResult,
        Report,
        check_model,
    )

__version__ = "0.1.0"
# What a case file is called: the plugin collects these; reports and unit durations read
# them. Here, at the root: every layer may import it, and it costs nothing.
CASE_SUFFIXES = (".yaml", ".yml")
__all__ = ["ExportCheckFailed", "InvalidCase", "ItemResult", "Report", "check_model"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from pytest_exportcheck import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
