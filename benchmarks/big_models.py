"""Big models: one plugin item against the plain-torch loop doing the same work.

    python benchmarks/big_models.py                  # alexnet, vgg11, resnet50
    python benchmarks/big_models.py --models alexnet --item "mutation[export-strict-cpu]"

The architectures are written out here (torchvision's AlexNet, VGG-11 and
ResNet-50 layer for layer, random weights), so the benchmark runs on any torch
the plugin supports without torchvision. Each measurement is a fresh process
(peak RSS from ``os.wait4``, wall time from outside):

- **plain**: ``torch.export.export`` (strict as the item's capture says), then
  ``run_decompositions()``, then three seeded calls each of eager, ``ep.module()``,
  ``unflatten(ep)`` and the program saved and loaded again (``torch.export.save`` /
  ``load``) on cloned inputs: the work a ``mutation`` item needs (the issue's loop
  had no save and load; the item runs the loaded program too, so the loop does);
- **plugin**: ``pytest --exportcheck`` on a one-case YAML, ``-k`` the one item.

Both processes import torch and build the model; the plugin's also imports
pytest and itself. The ratios are the issue's bar: peak RSS <= 1.5x, time <= 1.3x.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TARGETS = {"rss": 1.5, "time": 1.3}

ARCHITECTURES = """
import torch
from torch import nn


class AlexNet(nn.Module):
    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 11, 4, 2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
            nn.Conv2d(64, 192, 5, padding=2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
            nn.Conv2d(192, 384, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(0.5), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(inplace=True),
            nn.Dropout(0.5), nn.Linear(4096, 4096), nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


class VGG11(nn.Module):
    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        layers, channels = [], 3
        for v in (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"):
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(channels, v, 3, padding=1), nn.ReLU(inplace=True)]
                channels = v
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(),
            nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(), nn.Linear(4096, num_classes),
        )

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


class Bottleneck(nn.Module):
    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample=None) -> None:
        super().__init__()
        width = planes
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        return self.relu(self.bn3(self.conv3(out)) + identity)


class ResNet50(nn.Module):
    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = self._layer(64, 3)
        self.layer2 = self._layer(128, 4, 2)
        self.layer3 = self._layer(256, 6, 2)
        self.layer4 = self._layer(512, 3, 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(2048, num_classes)

    def _layer(self, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * 4:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * 4, 1, stride, bias=False),
                nn.BatchNorm2d(planes * 4),
            )
        layers = [Bottleneck(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * 4
        layers += [Bottleneck(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))
"""

MODELS = {"alexnet": "AlexNet", "vgg11": "VGG11", "resnet50": "ResNet50"}
INPUT = [1, 3, 224, 224]

CASE = """
cases:
  {name}:
    description: {cls} with random weights (benchmarks/big_models.py)
    model: {{target: archs.py:{cls}}}
    inputs: {{args: [{{shape: {shape}}}]}}
    captures: [export, export-strict]
    checks: [signature, hierarchy, mutation, parity]
"""

PLAIN = """
import copy, io, sys, torch
sys.path.insert(0, {directory!r})
from archs import {cls}
torch.manual_seed(0)
model = {cls}()
x = torch.randn({shape})
ep = torch.export.export(copy.deepcopy(model), (x,), strict={strict})
decomposed = copy.deepcopy(ep).run_decompositions()
eager = copy.deepcopy(model)
module, unflat = copy.deepcopy(ep).module(), torch.export.unflatten(ep)
runs = [eager, module, unflat]
if {saved}:
    buffer = io.BytesIO()
    torch.export.save(ep, buffer)
    buffer.seek(0)
    runs.append(torch.export.load(buffer).module())
    del buffer
for run in runs:
    for _ in range(3):
        torch.manual_seed(0)
        run(x.clone())
"""


def measure(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    started = time.perf_counter()
    proc = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    output = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    rc = os.waitstatus_to_exitcode(status)
    if rc not in (0,):
        sys.stderr.write(output.decode("utf-8", "replace")[-3000:])
    return wall, usage.ru_maxrss / 1024, rc


def whole_cases(models: list[str], workers: int = 2) -> int:
    """The issue's sweep in small: all items of the big cases under ``-n 2``, no worker lost."""
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "cases").mkdir()
        (project / "cases" / "archs.py").write_text(textwrap.dedent(ARCHITECTURES))
        for name in models:
            (project / "cases" / f"{name}.yaml").write_text(
                CASE.format(name=name, cls=MODELS[name], shape=INPUT)
            )
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        command += ["-p", "no:hypothesispytest", "--exportcheck", "-n", str(workers), "cases"]
        started = time.perf_counter()
        proc = subprocess.run(command, cwd=project, capture_output=True, text=True)
        wall = time.perf_counter() - started
    # The controller reaps its workers: its children's peak is the largest worker's.
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    summary = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
    print(f"{', '.join(models)}: every item, -n {workers}; python {sys.executable}")
    print(f"wall {wall:.1f} s; largest process's peak RSS {peak:.0f} MB; rc {proc.returncode}")
    print(summary)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-2000:])
    return proc.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--item", default="mutation[export-strict-cpu]")
    parser.add_argument(
        "--whole-cases",
        action="store_true",
        help="instead: every item of the models' cases (both captures, all four checks) "
        "in one `pytest --exportcheck -n 2` run; wall, outcomes, the largest process's peak",
    )
    args = parser.parse_args(argv)
    if args.whole_cases:
        return whole_cases(args.models.split(","))
    strict = "strict" in args.item
    env = dict(os.environ)
    print(f"item {args.item}; input {INPUT}; python {sys.executable}")
    header = ("model", "plain s", "plugin s", "x", "plain MB", "plugin MB", "x", "issue's loop")
    widths = (10, 9, 10, 6, 10, 11, 6, 18)
    print(
        "".join(
            f"{h:>{w}}" if i else f"{h:<{w}}"
            for i, (h, w) in enumerate(zip(header, widths, strict=True))
        )
    )
    failed = False
    for name in args.models.split(","):
        cls = MODELS[name]
        with tempfile.TemporaryDirectory() as tmp:
            project = Path(tmp)
            (project / "cases").mkdir()
            (project / "cases" / "archs.py").write_text(textwrap.dedent(ARCHITECTURES))
            (project / "cases" / "big.yaml").write_text(
                CASE.format(name=name, cls=cls, shape=INPUT)
            )
            fields = dict(directory=str(project / "cases"), cls=cls, shape=tuple(INPUT))
            fields["strict"] = strict
            plain, issue_loop = (
                measure([sys.executable, "-c", PLAIN.format(**fields, saved=saved)], project, env)
                for saved in (True, False)
            )
            plugin = measure(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    "-p",
                    "no:xdist",
                    "-p",
                    "no:hypothesispytest",
                    "--exportcheck",
                    "cases/big.yaml",
                    "-k",
                    args.item,
                ],
                project,
                env,
            )
        failed |= plain[2] != 0 or issue_loop[2] != 0 or plugin[2] not in (0, 1)
        print(
            f"{name:<10}{plain[0]:>9.1f}{plugin[0]:>10.1f}{plugin[0] / plain[0]:>6.2f}"
            f"{plain[1]:>10.0f}{plugin[1]:>11.0f}{plugin[1] / plain[1]:>6.2f}"
            f"{issue_loop[0]:>9.1f} s {issue_loop[1]:>4.0f} MB"
            + ("" if plugin[2] == 0 else f"  (plugin rc {plugin[2]})")
        )
    print(f"targets: time <= {TARGETS['time']}x, peak RSS <= {TARGETS['rss']}x")
    print("issue's loop: the plain loop without the save and load (the issue's figure's loop)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
