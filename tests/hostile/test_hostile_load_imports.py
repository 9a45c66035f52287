"""A ``load_imports`` module runs in the fresh process that loads a lowered program
(``lowering/fresh_process.py``), where it may end that process, or the fork server it
was forked from, at import. Each is its own case's ``[load]`` failure naming what the
module did, and the next item loads in a new server and passes."""

from __future__ import annotations

import sys

import pytest
from hostilekit import hostile_case, write_hostile
from lowerkit import torch_left_as_found as torch_left_as_found  # autouse

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fork, signals")

# Each module ends its process at import, one way each.
MODULES = {
    "exits": "import os\nos._exit(7)\n",
    "posix_exits": "import posix\nposix._exit(0)\n",
    "kills_itself": "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
    "calls_sys_exit": "import sys\nsys.exit(3)\n",
    "kills_its_group": "import os, signal\nos.killpg(0, signal.SIGKILL)\n",
    "kills_the_server": "import os, signal, time\nos.kill(os.getppid(), signal.SIGKILL)\n"
    "time.sleep(60)\n",
}
SAID = {
    "exits": "ended the loading process: exit status 7",
    "posix_exits": "ended the loading process: exit status 0",
    "kills_itself": "ended the loading process: killed by SIGKILL",
    "calls_sys_exit": "called sys.exit(3)",
    "kills_its_group": "ended the loading process: killed by SIGKILL",
}
GOOD = "{target: hostile.py:Good}"


def loading(name: str) -> str:
    return hostile_case(
        name, GOOD, captures="[export]", checks="[parity]", lower="[saved]",
        load_imports=f"[{name}.py]",
    )  # fmt: skip


def test_a_module_that_ends_the_loading_process_fails_its_item_naming_what_it_did(
    hostile: pytest.Pytester,
) -> None:
    for name, text in MODULES.items():
        (hostile.path / "cases" / f"{name}.py").write_text(text)
    # The good case with a saved program last: it loads in the server that replaced
    # the one killed just before it.
    good = hostile_case(
        "good_loaded", GOOD, captures="[export]", checks="[parity]", lower="[saved]"
    )
    write_hostile(hostile, *(loading(name) for name in MODULES), good)
    result = hostile.runpytest("--exportcheck", "-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=len(MODULES) + 3, failed=len(MODULES))
    where = "lowered to saved, loaded in a fresh process (torch, {}.py)"
    for name, said in SAID.items():
        result.stdout.fnmatch_lines(
            [
                f"- [[]load[]] {where.format(name)}: importing load_imports module cases/{name}.py {said}"
            ]
        )
    result.stdout.fnmatch_lines(
        [
            f"- [[]load[]] {where.format('kills_the_server')}: the fork server that loads "
            "programs ended (killed by SIGKILL) while importing load_imports module "
            "cases/kills_the_server.py: the loading process went with it (a new server loads "
            "the next item's)"
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*kills_the_server::lowered[[]saved-export-cpu[]] FAILED*",
            "*good_loaded::lowered[[]saved-export-cpu[]] PASSED*",
        ]
    )
    assert "[internal]" not in result.stdout.str()
    assert "raised, where this process did not" not in result.stdout.str()
