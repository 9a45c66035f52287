"""What ``shapes`` costs against ``parity``: the same case, capture and device, item by item.

    python benchmarks/shapes_cost.py                       # cases/dynamic.yaml, 3 runs
    python benchmarks/shapes_cost.py cases/dynamic.yaml --repeat 5
    python benchmarks/shapes_cost.py --report corpus.json  # read a report already written

Each run is ``pytest --exportcheck FILES -p no:xdist`` with a JSON report: every check
of each case runs, so the capture's time goes to the case's first item (``signature``)
and neither of the two compared items pays it. For each (case, capture, device) with
both items judged, the ratio of their durations; the figure is the median over those
pairs of each pair's median over the runs (issue 47's target: 3x at most).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

JUDGED = ("passed", "failed", "xfailed")
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]


def ratios(report: dict) -> dict[tuple[str, ...], float]:
    """shapes / parity duration for each (file, case, capture, device) with both judged."""
    pairs: dict[tuple[str, ...], dict[str, float]] = defaultdict(dict)
    for item in report["items"]:
        if item["check"] in ("shapes", "parity") and item["outcome"] in JUDGED:
            key = (item["file"], item["case"], item["capture"], item["device"])
            pairs[key][item["check"]] = item["duration"]
    return {
        key: both["shapes"] / both["parity"]
        for key, both in pairs.items()
        if "shapes" in both and both.get("parity")
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", default=["cases/dynamic.yaml"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--report", action="append", help="a JSON report to read instead")
    args = parser.parse_args(argv)
    reports = [json.loads(Path(path).read_text()) for path in args.report or []]
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(0 if args.report else args.repeat):
            path = Path(tmp) / f"run{run}.json"
            command = [*PYTEST, "--exportcheck", *args.files, f"--exportcheck-report={path}"]
            done = subprocess.run(command, capture_output=True, text=True)
            if not path.exists():
                sys.stderr.write(done.stdout[-3000:] + done.stderr[-2000:])
                return 1
            reports.append(json.loads(path.read_text()))
    runs: dict[tuple[str, ...], list[float]] = defaultdict(list)
    for report in reports:
        for key, ratio in ratios(report).items():
            runs[key].append(ratio)
    per_pair = {key: statistics.median(values) for key, values in runs.items()}
    if not per_pair:
        print("no case has both a judged shapes and a judged parity item")
        return 1
    for key, ratio in sorted(per_pair.items(), key=lambda kv: kv[1]):
        print(f"{ratio:6.2f}  {'::'.join(key[:2])} [{key[2]}-{key[3]}]")
    values = sorted(per_pair.values())
    quartiles = statistics.quantiles(values, n=4) if len(values) > 1 else values * 3
    by_capture: dict[str, list[float]] = defaultdict(list)
    for key, ratio in per_pair.items():
        by_capture[key[2]].append(ratio)
    for capture, found in sorted(by_capture.items()):
        print(f"{capture}: {len(found)} pairs, median {statistics.median(found):.2f}")
    print(
        f"{len(values)} pairs, {len(reports)} run(s): median shapes/parity "
        f"{statistics.median(values):.2f} (quartiles {quartiles[0]:.2f}, {quartiles[2]:.2f}; "
        f"largest {values[-1]:.2f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
