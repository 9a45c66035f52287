"""End-of-run reports: the conformance matrix, JSON/Markdown reports, and run-to-run compare."""

from __future__ import annotations

import pytest


class ReportPlugin:
    """Placeholder until the reports land: registered for every --exportcheck run."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
