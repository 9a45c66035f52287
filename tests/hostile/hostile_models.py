"""Models that misbehave on purpose, each in one way (copied into each test's project).

Each class's docstring says what it does; tests/hostile/README.md says what each proves.
"""

import contextlib
import os
import signal
import sys
import threading
import time

import torch
from torch import nn


class Good(nn.Module):
    """The innocent case beside each hostile one: it must pass, whatever ran before it."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)


class Leaves(Good):
    """Leaves by the exception named in ``how`` (sys.exit, GeneratorExit, its own
    BaseException, an exception whose __str__ raises), or ends the process (os._exit)."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how

    def forward(self, x):
        if self.how == "sys.exit":
            sys.exit(3)
        if self.how == "os._exit":
            os._exit(0)
        if self.how == "GeneratorExit":
            raise GeneratorExit("closed")
        if self.how == "BaseException":
            raise OwnBaseException("a model's own BaseException")
        raise Unprintable()


class OwnBaseException(BaseException):
    pass


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("__str__ raised")


class DefeatsTimeLimit(Good):
    """Sleeps ``seconds`` while defeating the time limit as ``how`` says: swallowing its
    exception (``except BaseException: pass``), replacing the SIGALRM handler, or
    cancelling the timer (as a library that uses alarms itself would)."""

    def __init__(self, how: str, seconds: float = 2.5) -> None:
        super().__init__()
        self.how = how
        self.seconds = seconds

    def forward(self, x):
        if self.how == "replace handler":
            signal.signal(signal.SIGALRM, lambda signum, frame: None)
        elif self.how == "cancel timer":
            signal.setitimer(signal.ITIMER_REAL, 0)
        end = time.monotonic() + self.seconds
        while time.monotonic() < end:
            try:
                time.sleep(0.02)
            except BaseException:
                if self.how != "swallow":
                    raise
        return self.lin(x)


class ToReturnsAnother(Good):
    """``.to()`` returns another module (``None`` with ``returns_none``)."""

    def __init__(self, returns_none: bool = False) -> None:
        super().__init__()
        self.returns_none = returns_none

    def to(self, *args, **kwargs):
        return None if self.returns_none else Good()


class ChangesProcessState(Good):
    """Changes process-wide state in forward and leaves it changed: ``dtype`` sets the
    default dtype to float64, ``hook`` registers a global module forward hook,
    ``function mode`` / ``dispatch mode`` enter a mode adding 1 to every linear's output
    and never exit it, ``linear`` replaces ``torch.nn.functional.linear`` with one that
    adds 1, ``torch.export`` replaces ``sys.modules["torch"].export`` with a wrapper
    that exports ``nn.Identity()`` whatever it is given."""

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what

    def forward(self, x):
        if self.what == "dtype":
            torch.set_default_dtype(torch.float64)
        elif self.what == "hook":
            nn.modules.module.register_module_forward_hook(_scale_outputs)
        elif self.what == "function mode":
            _AddOneToLinear().__enter__()
        elif self.what == "dispatch mode":
            _AddOneToAddmm().__enter__()
        elif self.what == "linear":
            torch.nn.functional.linear = _linear_plus_one
        elif self.what == "torch.export":
            sys.modules["torch"].export = _ExportsIdentity(sys.modules["torch"].export)
        return self.lin(x)


_LINEAR = torch.nn.functional.linear


def _linear_plus_one(input, weight, bias=None):
    return _LINEAR(input, weight, bias) + 1


class _AddOneToLinear(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        return out + 1 if func is torch.nn.functional.linear else out


class _AddOneToAddmm(torch.utils._python_dispatch.TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        return out + 1 if func is torch.ops.aten.addmm.default else out


class _ExportsIdentity:
    """Stands in for the ``torch.export`` module: its ``export`` exports ``nn.Identity``."""

    def __init__(self, module):
        self._module = module

    def __getattr__(self, name):
        return getattr(self._module, name)

    def export(self, model, args, *rest, **options):
        return self._module.export(nn.Identity(), args, *rest, **options)


def _scale_outputs(module, args, output):
    return output * 2 if isinstance(output, torch.Tensor) else output


class LeavesThread(Good):
    """Starts a non-daemon thread that never ends."""

    def forward(self, x):
        threading.Thread(target=threading.Event().wait, name="never-ends").start()
        return self.lin(x)


class TorchPoolThenFails(Good):
    """Not hostile: its non-strict export truly fails (a branch on a value), and on the way
    torch's own pool starts a worker thread that stays (as a detection model's did)."""

    def forward(self, x):
        if torch.compiler.is_exporting():
            from torch.utils._functools import prefetchable_cache

            prefetchable_cache(lambda: None).prefetch()  # torch's _prefetch_executor
        if x.sum() > 0:
            return self.lin(x)
        return x


class Aborts(Good):
    """Kills its process in forward (a stand-in for a segfaulting kernel)."""

    def forward(self, x):
        os.abort()


class HugeStateDict(Good):
    """Overrides state_dict() to allocate 2^40 floats (4 TiB) when called as the checks
    call it (export itself asks with keep_vars=True)."""

    def state_dict(self, *args, keep_vars=False, **kwargs):
        if not keep_vars:
            torch.zeros(1 << 40)
        return super().state_dict(*args, keep_vars=keep_vars, **kwargs)


class KilledInMutationCheck(Good):
    """SIGKILLs its own process, as the kernel's out-of-memory killer would, when the
    mutation check runs it (eager and the capture are fine)."""

    def forward(self, x):
        import inspect

        if any(frame.function == "check_mutation" for frame in inspect.stack(0)):
            os.kill(os.getpid(), signal.SIGKILL)
        return self.lin(x)


class AllocatesPastLimit(Good):
    """Asks torch for ``nbytes`` in forward (past the test's memory limit; the memory is
    never touched, so without a limit the request succeeds and the model passes)."""

    def __init__(self, nbytes: int) -> None:
        super().__init__()
        self.nbytes = nbytes

    def forward(self, x):
        torch.empty(self.nbytes, dtype=torch.uint8)
        return self.lin(x)


class EndsProcess(Good):
    """Ends or replaces the process where no Python code runs after it: ``posix._exit``,
    libc's ``exit()`` through ctypes, ``os.execv``; each with exit status 0."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how

    def forward(self, x):
        if self.how == "posix._exit":
            import posix

            posix._exit(0)
        if self.how == "libc exit":
            import ctypes

            ctypes.CDLL(None).exit(0)
        if self.how == "execv":
            os.execv("/bin/true", ["true"])
        return self.lin(x)


_STARTED: list = []


class LeavesProcess(Good):
    """Starts ``sleep 300`` and leaves it running (``child``), or forks and lets the
    child return from forward into the test session (``fork``)."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how

    def forward(self, x):
        if self.how == "child" and not _STARTED:  # once: each run is of a copy
            import subprocess

            _STARTED.append(subprocess.Popen(["sleep", "300"]))
        elif self.how == "fork":
            os.fork()  # both the parent and the child return from forward
        return self.lin(x)


class CopiesToItself(Good):
    """Its __deepcopy__ returns the model itself: every run would share one model."""

    def __deepcopy__(self, memo):
        return self


class CopySharesLayer(Good):
    """Its __deepcopy__ makes a new module around the model's own layer."""

    def __deepcopy__(self, memo):
        copied = CopySharesLayer.__new__(CopySharesLayer)
        nn.Module.__init__(copied)
        copied.lin = self.lin
        return copied


class NestsOutput(Good):
    """Returns its output inside ``depth`` one-element tuples: eager runs at any depth,
    torch's recursive walks of it do not (copy.deepcopy(ep), torch.export)."""

    def __init__(self, depth: int) -> None:
        super().__init__()
        self.depth = depth

    def forward(self, x):
        out = self.lin(x)
        for _ in range(self.depth):
            out = (out,)
        return out


class ForgesEndOfRun(Good):
    """Writes the supervisor's end-of-run line (as it was, and with a status) into every
    descriptor it inherited past stdio, then ends the process with status 0."""

    def forward(self, x):
        import posix

        for name in os.listdir("/proc/self/fd"):
            if int(name) > 2:
                for line in (b"end\n", b"end", b"end 0", b"end 0 0"):
                    with contextlib.suppress(OSError):
                        os.write(int(name), line)
        posix._exit(0)


class ExitsZeroAtExit(Good):
    """Fails its eager stage, having asked for the process to end with status 0 at exit
    (an atexit handler): the session ends with status 1, its process with 0."""

    def forward(self, x):
        import atexit
        import posix

        atexit.register(posix._exit, 0)
        raise ValueError("fails")


class ForksLongChild(Good):
    """Forks once; the forked copy sleeps for a minute (holding every descriptor the
    process had) and writes its pid to ``forked.pid``."""

    def forward(self, x):
        if not _STARTED:
            pid = os.fork()
            if pid == 0:
                time.sleep(60)
                import posix

                posix._exit(0)
            _STARTED.append(pid)
            with open("forked.pid", "w") as file:
                file.write(str(pid))
        return self.lin(x)


class Waits(Good):
    """Writes its pid to ``running.pid`` and sleeps a minute, the first time it runs: a
    run to stop from outside."""

    def forward(self, x):
        if not _STARTED:
            _STARTED.append(os.getpid())
            with open("running.pid", "w") as file:
                file.write(str(os.getpid()))
            time.sleep(60)
        return self.lin(x)


class StateDictCannotAllocate(Good):
    """Its state_dict() raises MemoryError however it is asked (export asks nothing of it)."""

    def state_dict(self, *args, **kwargs):
        raise MemoryError("state_dict could not allocate")


class MixedDtypes(Good):
    """A float64 weight against float32 inputs: forward raises on every call."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4).double()
