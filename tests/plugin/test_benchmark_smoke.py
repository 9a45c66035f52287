"""``benchmarks/run.py --quick`` runs the floor and the plugin end to end, so that the
floor can never again die at import unnoticed (it once did, for a release, and the
benchmark printed plugin/floor = 40.97 against a floor that ran nothing)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import childkit

ROOT = Path(__file__).resolve().parents[2]


def test_the_quick_benchmark_runs_the_floor_and_the_plugin_and_they_agree(
    tmp_path: Path,
) -> None:
    figures = tmp_path / "quick.json"
    env = dict(os.environ)
    # This checkout's package, as the plugin's subprocesses see it (benchmarks/ adds its own).
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = childkit.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--json", str(figures)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "smoke run: floor and plugin agree on 4 checks" in done.stdout, done.stdout
    summary = json.loads(figures.read_text())
    assert summary["corpus"] == "0 bundled files (cases/) + 1 generated cases (1 files)"
    series = summary["series"]
    assert {label: s["failed_runs"] for label, s in series.items()} == {
        "floor": 0,
        "plugin": 0,
        "startup (plugin)": 0,
        "startup (no:exportcheck)": 0,
    }
    assert summary["plugin_over_floor"] > 0
    assert not list((ROOT / "benchmarks").glob("generated-quick-*")), "its corpus is left"
