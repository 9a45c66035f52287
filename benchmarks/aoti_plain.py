"""AOTInductor on a device in plain torch, with no plugin and no pytest: does
``aoti_compile_and_package`` + ``aoti_load_package`` run, and do the outputs match eager?

The GPU record of 2026-11-27 saw two xdist workers die of a segmentation fault inside
``aoti_load_package`` on cuda:0; this tells whether torch alone does the same on the
machine. Each scenario runs in its own interpreter, all at once (a crash ends only that
one), with faulthandler on, so a crash prints the Python stack:

    python benchmarks/aoti_plain.py cuda        # every scenario, one line each
    python benchmarks/aoti_plain.py cuda mlp    # one scenario, in this process

Scenarios: ``mlp`` (Linear, ReLU), ``conv_bn`` (eval-mode BatchNorm folded), ``buffer``
(a buffer the forward updates), ``two_packages`` (two packages loaded in one process),
``same_twice`` (one package loaded twice), ``concurrent`` (four processes loading one
package at once, as xdist workers sharing the run's package cache do).
"""

from __future__ import annotations

import faulthandler
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCENARIOS = ("mlp", "conv_bn", "buffer", "two_packages", "same_twice", "concurrent")


def _models(device: str):
    import torch

    class Counter(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("count", torch.zeros(3))

        def forward(self, x):
            self.count.add_(1)
            return x * self.count

    mlp = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    conv = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8)).eval()
    return {
        "mlp": (mlp.to(device), (torch.randn(2, 8, device=device),)),
        "conv_bn": (conv.to(device), (torch.randn(1, 3, 16, 16, device=device),)),
        "buffer": (Counter().to(device), (torch.randn(3, device=device),)),
    }


def _package(name: str, device: str, directory: Path) -> Path:
    import torch
    from torch._inductor import aoti_compile_and_package

    torch.manual_seed(0)
    model, args = _models(device)[name]
    program = torch.export.export(model, args)
    path = directory / f"{name}.pt2"
    aoti_compile_and_package(
        program, package_path=str(path), inductor_configs={"fallback_random": True}
    )
    return path


def _check(name: str, device: str, path: Path) -> str:
    import torch
    from torch._inductor import aoti_load_package

    torch.manual_seed(0)
    model, args = _models(device)[name]
    loaded = aoti_load_package(str(path))
    expected, got = model(*args), loaded(*args)
    got = got[0] if isinstance(got, (list, tuple)) and not torch.is_tensor(expected) else got
    got = got if torch.is_tensor(got) else got[0]
    return f"max abs error {(expected - got).abs().max().item():.2e}"


def run_one(scenario: str, device: str) -> str:
    directory = Path(tempfile.mkdtemp(prefix="aoti-plain-"))
    if scenario in ("mlp", "conv_bn", "buffer"):
        return _check(scenario, device, _package(scenario, device, directory))
    if scenario == "two_packages":
        first, second = _package("mlp", device, directory), _package("conv_bn", device, directory)
        return f"mlp {_check('mlp', device, first)}; conv_bn {_check('conv_bn', device, second)}"
    if scenario == "same_twice":
        path = _package("mlp", device, directory)
        return f"{_check('mlp', device, path)}; again {_check('mlp', device, path)}"
    if scenario == "concurrent":
        path = _package("mlp", device, directory)
        code = (
            "import sys, faulthandler; faulthandler.enable(); sys.path.insert(0, 'benchmarks');"
            "import aoti_plain; from pathlib import Path;"
            f"print(aoti_plain._check('mlp', {device!r}, Path({str(path)!r})))"
        )
        loaders = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(4)]
        codes = [loader.wait() for loader in loaders]
        return f"4 loaders exited {codes}"
    raise SystemExit(f"unknown scenario {scenario!r}; one of {', '.join(SCENARIOS)}")


def main(argv: list[str]) -> int:
    device = argv[1] if len(argv) > 1 else "cuda"
    if len(argv) > 2:
        faulthandler.enable()
        print(run_one(argv[2], device), flush=True)
        return 0
    # All at once: the device machine has the cores, and its time is short.
    start = time.perf_counter()
    runs = {
        scenario: subprocess.Popen(
            [sys.executable, __file__, device, scenario],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for scenario in SCENARIOS
    }
    failed = 0
    for scenario, run in runs.items():
        out, err = run.communicate()
        last = (out.strip().splitlines() or ["(no output)"])[-1]
        wall = time.perf_counter() - start
        print(f"{scenario}: exit {run.returncode}, done at {wall:.1f} s, {last}", flush=True)
        if run.returncode:
            failed += 1
            print(err[-3000:], flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
