"""The suite's own bytecode, written once by the process that starts the run, before its
xdist workers start.

Where bytecode is not written (``PYTHONDONTWRITEBYTECODE``, as on CI's machine), each
worker rewrote the asserts of every test module it collected (~2.2 s of CPU a worker,
every worker collecting the whole suite), and every child a test starts compiled the
helper modules it imports (``childplugin``, ``hostile_models``, ...). Python and pytest
read bytecode they did not write all the same.
"""

from __future__ import annotations

import compileall
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
# The modules pytest rewrites as it collects (``python_files`` at its default, and
# conftests); compileall writes the others.
_REWRITTEN = re.compile(r"(^|/)(test_[^/]*|conftest)\.py$")


def write_helper_bytecode() -> None:
    """The helper modules' bytecode, which the tests' children import."""
    compileall.compile_dir(TESTS, quiet=1, rx=_REWRITTEN)


def write_rewritten_test_modules(config: pytest.Config) -> None:
    """Every test module as pytest's import hook writes it where bytecode is written,
    through its own functions, so the rewriting is pytest's. They are private: a pytest
    where they differ leaves the rewriting to the workers, as pytest always does."""
    try:
        from _pytest.assertion import rewrite

        state = config.stash[rewrite.assertstate_key]
        for source in sorted(TESTS.rglob("*.py")):
            if not _REWRITTEN.search(source.as_posix()):
                continue
            pyc = rewrite.get_cache_dir(source) / (source.stem + rewrite.PYC_TAIL)
            if rewrite._read_pyc(source, pyc) is not None:
                continue
            pyc.parent.mkdir(exist_ok=True)
            source_hash, code = rewrite._rewrite_test(source, config)
            rewrite._write_pyc(state, code, source_hash, pyc)
    except (AttributeError, ImportError, KeyError, TypeError, ValueError, OSError):
        return
