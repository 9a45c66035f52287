"""What every item runs under, from pytest or the Python API: the guards around user code.

- a time limit the model cannot switch off (``stages.time_limit``);
- ``os._exit`` refused, and ``sys.exit`` or a model's own BaseException turned into
  the error of the stage it left (``user_exits.py``);
- process-wide state (default dtype, global hooks, ...) restored after the item, and
  the item that changed it failed (``process_state.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pytest_exportcheck.containment.stages import StageTimeout, time_limit
from pytest_exportcheck.containment.user_exits import no_process_exit, user_exit_error


@contextmanager
def item_guards(seconds: float, describe: Callable[[str], str], location: str) -> Iterator[None]:
    from pytest_exportcheck.containment import process_state

    # The snapshot comes first, outside the time limit: its first use imports
    # torch._dynamo (and sympy), and a limit firing inside an import leaves the module
    # half-initialized for every later item of the process.
    with process_state.kept(location), time_limit(seconds, describe), no_process_exit():
        try:
            yield
        except (Exception, StageTimeout):
            raise
        except BaseException as exc:  # a model's sys.exit, os._exit, ...
            raise user_exit_error(exc, location) from exc
