"""pytest leaves this package's modules as Python compiles them: no assertion rewriting.

pytest rewrites the ``assert`` statements of every module of a distribution that
declares a ``pytest11`` entry point, so that a failing assert in a plugin's fixture
shows its operands. This package asserts nothing for its users (its checks raise
errors of their own; its few asserts narrow types), so the rewrite is pure cost: each
process that imports the plugin parses, rewrites and compiles ~120 of its modules
again, instead of reading their bytecode. Where bytecode is not written
(``PYTHONDONTWRITEBYTECODE=1``, usual in containers, or a read-only site-packages)
pytest cannot cache the rewritten code, and every run and every xdist worker pays it:
0.3 s of a one-item run's 4.8 s, measured on 2 cores (benchmarks/README.md).

pytest has no public way to unmark a package: the set it marks is private. Where it
is not there (another pytest), the modules are rewritten as before, which is correct,
only slower.
"""

from __future__ import annotations

from typing import Any

PACKAGE = __name__.partition(".")[0]


def leave_unrewritten(pluginmanager: Any) -> None:
    """Take this package off the rewrite hook's marks.

    Called from ``pytest_addhooks``, pytest's first call to the plugin once it has
    loaded the entry point (this module and ``plugin.py`` were rewritten on the way),
    before any other module of the package is imported: the hook decides each later
    import by the marks."""
    marked = getattr(getattr(pluginmanager, "rewrite_hook", None), "_must_rewrite", None)
    if isinstance(marked, set):
        marked.discard(PACKAGE)
