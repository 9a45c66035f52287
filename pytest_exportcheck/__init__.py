"""pytest-exportcheck: export conformance testing of PyTorch models.

This package root imports nothing heavy: pytest loads it through the ``pytest11``
entry point in every run, with or without ``--exportcheck``. torch is imported
only inside the modules that build, capture and check models.
"""

__version__ = "0.1.0"
