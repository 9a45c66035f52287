"""What a one-item run costs beyond its work: the plugin's fixed cost, as whole processes.

    python benchmarks/fixed_cost.py                   # bytecode cached, as an installed package
    python benchmarks/fixed_cost.py --no-bytecode     # PYTHONDONTWRITEBYTECODE=1 (containers)

A tiny model (``Linear(8, 8)``), so that the item's own work is small and what is left
is the cost every run pays whatever its model: the same ``mutation[export-strict-cpu]``
item ``big_models.py`` times on AlexNet, against the plain script doing that item's
work (``big_models.PLAIN``). The processes take turns, ``--repeat`` rounds, medians:

- ``python``: the interpreter alone (``python -c pass``);
- ``import torch``: the interpreter and torch;
- ``pytest, inert``: ``pytest --co`` of the project without ``--exportcheck``: pytest's
  start-up with its plugins and this one loaded (it collects nothing, imports no torch);
- ``plain``: the plain script;
- ``plugin, not supervised``: the item with ``-o exportcheck_supervise=false``;
- ``plugin``: the item as a user runs it (the session in a supervised child).

The differences are the parts: supervision (plugin minus not supervised), pytest's
start-up (inert minus python), and the session's own fixed cost (not supervised, minus
plain, minus pytest's start-up).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from big_models import PLAIN, PYTEST, measure

TINY = """
import torch
from torch import nn


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x).relu()
"""
CASE = """
cases:
  tiny:
    description: one Linear (benchmarks/fixed_cost.py)
    model: {target: archs.py:Tiny}
    inputs: {args: [{shape: [2, 8]}]}
    captures: [export-strict]
    checks: [mutation]
"""
ITEM = "cases/tiny.yaml::tiny::mutation[export-strict-cpu]"


def commands(project: Path) -> dict[str, list[str]]:
    plain = PLAIN.format(
        directory=str(project / "cases"), cls="Tiny", shape=(2, 8), strict=True, saved=True
    )
    item = [*PYTEST, "-p", "no:xdist", ITEM]
    return {
        "python": [sys.executable, "-c", "pass"],
        "import torch": [sys.executable, "-c", "import torch"],
        "pytest, inert": [*PYTEST[:-1], "--co", "cases"],  # PYTEST ends with --exportcheck
        "plain": [sys.executable, "-c", plain],
        "plugin, not supervised": [*item, "-o", "exportcheck_supervise=false"],
        "plugin": item,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--no-bytecode",
        action="store_true",
        help="run every process under PYTHONDONTWRITEBYTECODE=1",
    )
    args = parser.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if args.no_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "cases").mkdir()
        (project / "cases" / "archs.py").write_text(TINY)
        (project / "cases" / "tiny.yaml").write_text(CASE)
        runs: dict[str, list[float]] = {}
        for name, command in commands(project).items():  # a first round fills the caches
            rc = measure(command, project, env)[2]
            if rc not in (0, 5):  # 5: --co collected nothing, as it should
                print(f"{name}: exit status {rc}", file=sys.stderr)
                return 1
        for _ in range(args.repeat):
            for name, command in commands(project).items():
                runs.setdefault(name, []).append(measure(command, project, env)[0])
    median = {name: sorted(walls)[len(walls) // 2] for name, walls in runs.items()}
    bytecode = "not written" if args.no_bytecode else "cached"
    print(f"python {sys.executable}; bytecode {bytecode}; {args.repeat} rounds, medians (wall s)")
    for name, walls in runs.items():
        print(f"  {name:<24}{median[name]:6.2f}   ({', '.join(f'{w:.2f}' for w in walls)})")
    start = median["pytest, inert"] - median["python"]
    supervision = median["plugin"] - median["plugin, not supervised"]
    session = median["plugin, not supervised"] - median["plain"] - start
    print(f"fixed cost (plugin - plain): {median['plugin'] - median['plain']:.2f} s, of which")
    print(f"  pytest's start-up with its plugins (inert - python): {start:.2f} s")
    print(f"  supervision (plugin - not supervised): {supervision:.2f} s")
    print(f"  the session's own (not supervised - plain - start-up): {session:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
