"""Per-check counts of a field-corpus run, from its ``--exportcheck-report`` JSON.

    pytest --exportcheck cases/field cases/thirdparty -n 2 --exportcheck-report field.json
    python benchmarks/field_summary.py field.json

Prints, per check, how many items the run judged (passed, failed or xfailed: an item
that skipped or was not applicable judged nothing) and how many of them failed or
xfailed, then every failed item with the first line of its message. Whether a failure
is a true finding or a false verdict is decided by reproducing it in plain torch
(benchmarks/README.md, "Field corpus"); this script only counts.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

JUDGED = ("passed", "failed", "xfailed", "xpassed")


def main(path: str) -> None:
    items = json.loads(Path(path).read_text())["items"]
    judged: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    xfailed: Counter[str] = Counter()
    cases = {item["case"] for item in items}
    for item in items:
        if item["outcome"] not in JUDGED:
            continue
        judged[item["check"]] += 1
        if item["outcome"] == "failed":
            failed[item["check"]] += 1
        elif item["outcome"] == "xfailed":
            xfailed[item["check"]] += 1
    print(f"{len(cases)} cases, {len(items)} items")
    print(f"{'check':12} {'judged':>6} {'failed':>6} {'xfailed':>7}")
    for check in sorted(judged):
        print(f"{check:12} {judged[check]:6} {failed[check]:6} {xfailed[check]:7}")
    totals = (sum(judged.values()), sum(failed.values()), sum(xfailed.values()))
    print(f"{'total':12} {totals[0]:6} {totals[1]:6} {totals[2]:7}")
    for item in items:
        if item["outcome"] == "failed":
            first = (item.get("message") or "").strip().splitlines()[:1]
            print(f"FAILED {item['nodeid']}: {first[0][:160] if first else ''}")


if __name__ == "__main__":
    main(sys.argv[1])
