"""The suite's warm children (``tests/warmstart.py``): a child forked from an interpreter
that imported torch runs what ``python ARGS`` runs, as its own process, and ends as a
child of the test ends."""

from __future__ import annotations

import json
import os
import runpy
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import warmstart

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, fork")

SHOW = (
    "import json, os, sys\n"
    "print(json.dumps({'argv': sys.argv, 'cwd': os.getcwd(), 'path0': sys.path[0],\n"
    "    'torch': 'torch' in sys.modules, 'pytest': 'pytest' in sys.modules,\n"
    "    'env': os.environ.get('WARM_PROBE'), 'threads': len(os.listdir('/proc/self/task'))}))\n"
    "sys.exit(int(sys.argv[-1]))\n"
)


def warm(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    command = warmstart.python_command(args)
    assert command[:3] == [sys.executable, "-S", warmstart.__file__], "the server did not start"
    return subprocess.run(command, capture_output=True, text=True, timeout=60, **kwargs)  # type: ignore[call-overload]


def test_a_warm_child_runs_code_with_the_callers_argv_cwd_env_and_status(tmp_path: Path) -> None:
    done = warm(["-c", SHOW, "x", "7"], cwd=tmp_path, env={**os.environ, "WARM_PROBE": "seen"})
    assert done.returncode == 7, done.stderr
    shown = json.loads(done.stdout)
    assert shown == {
        "argv": ["-c", "x", "7"], "cwd": str(tmp_path), "path0": "", "torch": True,
        "pytest": False, "env": "seen", "threads": 1,
    }  # fmt: skip


DECOMPOSED = (
    "import json, sys, torch\n"
    "class Net(torch.nn.Module):\n"
    "    def forward(self, x, w):\n"
    "        return torch.nn.functional.linear(x.flatten(1), w).sin()\n"
    "program = torch.export.export(Net(), (torch.ones(2, 2, 2), torch.ones(3, 4)))\n"
    "graph = str(program.run_decompositions().graph_module.code)\n"
    "if __name__ == '__main__':\n"
    "    print(json.dumps({'graph': graph, 'issued': sys.modules['warmstart_imports'].ISSUED,\n"
    "        'preloaded': all(m in sys.modules for m in ('torch.export._trace', 'networkx'))}))\n"
)


def test_a_warm_child_decomposes_as_this_process_does_after_a_warm_up_that_warned_nothing(
    tmp_path: Path,
) -> None:
    # The server imports what a first export imports and installs the decompositions'
    # overrides once (warmstart_imports.py): the child's program is this process's.
    (tmp_path / "decomposed.py").write_text(DECOMPOSED)
    done = warm([str(tmp_path / "decomposed.py")])
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    here = runpy.run_path(str(tmp_path / "decomposed.py"))  # not as __main__: no print
    assert shown == {"graph": here["graph"], "issued": [], "preloaded": True}
    assert "aten.linear" not in shown["graph"] and "aten.mm" in shown["graph"], shown["graph"]


def test_a_script_and_a_module_run_as_main_with_their_own_path(tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text(SHOW)
    done = warm([str(tmp_path / "script.py"), "0"], cwd="/")
    assert done.returncode == 0, done.stderr
    assert f'"path0": "{tmp_path}"' in done.stdout
    (tmp_path / "shown.py").write_text(SHOW)
    done = warm(["-mshown", "3"], cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert f'"path0": "{tmp_path}"' in done.stdout and '"argv": ["' in done.stdout


def test_an_exception_and_a_signal_end_the_launcher_as_they_end_python() -> None:
    done = warm(["-c", "raise ValueError('shown')"])
    assert done.returncode == 1 and "ValueError: shown" in done.stderr
    for sig in (signal.SIGTERM, signal.SIGKILL):
        done = warm(["-c", f"import os; os.kill(os.getpid(), {int(sig)})"])
        assert done.returncode == -sig


def test_signals_to_the_launcher_reach_the_child_and_its_death_kills_the_child() -> None:
    code = "import os, time; print(os.getpid(), flush=True); time.sleep(60)"
    launcher = subprocess.Popen(warmstart.python_command(["-c", code]), stdout=subprocess.PIPE)
    assert launcher.stdout is not None
    child = int(launcher.stdout.readline())
    launcher.send_signal(signal.SIGINT)
    assert launcher.wait(timeout=30) == -signal.SIGINT  # KeyboardInterrupt, as python ends
    launcher = subprocess.Popen(warmstart.python_command(["-c", code]), stdout=subprocess.PIPE)
    assert launcher.stdout is not None
    child = int(launcher.stdout.readline())
    launcher.kill()
    launcher.wait(timeout=30)
    for _ in range(300):
        if not Path(f"/proc/{child}").exists() or _zombie(child):
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the child {child} outlived its killed launcher")


def test_a_launcher_gone_before_it_hears_of_its_child_leaves_the_server_serving() -> None:
    # The request sent and the connection closed at once: the server's answer finds no
    # one. It served on where it had died of the broken pipe (every later child cold).
    import socket
    import struct

    from warmstart_server import HEADER

    prefix = warmstart.launcher()
    if prefix is None:
        pytest.skip("no warm server here")
    code = "import time; time.sleep(30)"
    request = json.dumps({"argv": ["-c", code], "cwd": os.getcwd(), "env": dict(os.environ)})
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(prefix[-1])
        fds = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("3i", 0, 1, 2))]
        conn.sendmsg([HEADER.pack(len(request)), request.encode()], fds)
    done = warm(["-c", "import sys; print('torch' in sys.modules)"])
    assert done.stdout.strip() == "True", done.stderr


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except (OSError, IndexError):
        return True


def test_a_child_whose_start_up_environment_differs_starts_cold(tmp_path: Path) -> None:
    env = {**os.environ, "TORCH_LOGS": "+dynamo" if os.environ.get("TORCH_LOGS") else "dynamo"}
    done = warm(["-c", "import sys; print('torch' in sys.modules)"], env=env)
    assert done.stdout.strip() == "False", done.stderr  # started afresh: no torch yet
    # A PYTHONPATH entry put first that holds a module the server imported (here a
    # "yaml"): the child must import the caller's, so it starts cold.
    (tmp_path / "yaml.py").write_text("SHADOW = True\n")
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    code = "import sys, yaml; print(getattr(yaml, 'SHADOW', False), 'torch' in sys.modules)"
    done = warm(["-c", code], env={**os.environ, "PYTHONPATH": path})
    assert done.stdout.strip() == "True False", done.stderr
    # A folder of that name without __init__.py (a built docs site/, beside the "site"
    # module Python imports at start) shadows nothing: the child starts warm.
    (tmp_path / "yaml.py").unlink()
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_text("<html></html>\n")
    done = warm(
        ["-c", "import sys, site; print('torch' in sys.modules)"],
        env={**os.environ, "PYTHONPATH": path},
    )
    assert done.stdout.strip() == "True", done.stderr


def test_what_torchs_import_sets_unset_or_set_alike_starts_warm() -> None:
    # Importing torch sets TORCHINDUCTOR_CACHE_DIR (torch 2.13); a test process has it
    # set, or a test took it out "as a user's process starts": either way a fresh child
    # ends up with the same value, so neither may decide whether a child starts warm.
    import torch._dynamo  # noqa: F401  (sets it)

    value = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if value is None:
        pytest.skip("this torch's import sets no TORCHINDUCTOR_CACHE_DIR")
    code = "import os, sys; print('torch' in sys.modules, os.environ['TORCHINDUCTOR_CACHE_DIR'])"
    unset = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
    for env in (unset, dict(os.environ)):
        done = warm(["-c", code], env=env)
        assert done.stdout.split() == ["True", value], done.stderr
    done = warm(["-c", code], env={**os.environ, "TORCHINDUCTOR_CACHE_DIR": "/elsewhere"})
    assert done.stdout.split() == ["False", "/elsewhere"], done.stderr
