"""Report documents made by hand, for tests of what reads them (the HTML page).

``item(...)`` is one item as ``--exportcheck-report`` writes it, every field
present; ``document(items)`` wraps items as the report's top level does.
"""

from __future__ import annotations

from typing import Any

from pytest_exportcheck.reports.results import totals

# What a failure looks like to someone who wants the page to run it.
HOSTILE = "</script><img src=x onerror=alert(1)>"


def item(
    case: str = "mlp",
    check: str | None = "parity",
    capture: str | None = "export",
    device: str | None = "cpu",
    outcome: str = "passed",
    file: str = "cases/a.yaml",
    **fields: Any,
) -> dict[str, Any]:
    name = f"{check}[{capture}-{device}]" if check else "load"
    found = {
        "nodeid": f"{file}::{case}::{name}" if check else f"{file}::{case}",
        "case": case,
        "file": file,
        "line": 3,
        "capture": capture,
        "check": check,
        "device": device,
        "outcome": outcome,
        "stage": check if outcome in ("failed", "error", "xfailed") else None,
        "message": None,
        "reason": None,
        "max_abs_err": None,
        "duration": 0.01,
        "capture_seconds": None,
        "observation": None,
        "recorded_against": None,
        "drift": None,
        "gaps": None,
    }
    found.update(fields)
    return found


def document(items: list[dict[str, Any]], **top: Any) -> dict[str, Any]:
    doc = {
        "format": 1,
        "run": {
            "torch": "2.13.0", "python": "3.11.9", "platform": "Linux", "pytest": "8.3.0",
            "exportcheck": "0.1.0", "started": "2026-11-27T12:00:00Z",
            "finished": "2026-11-27T12:01:00Z", "duration": 60.0, "exitstatus": 1, "args": [],
            "cases": "0123456789abcdef",
        },
        "totals": totals(i["outcome"] for i in items),
        "items": sorted(items, key=lambda i: i["nodeid"]),
        "gaps": {"items": 0, "gaps": 0, "by_check": {}},
    }  # fmt: skip
    doc.update(top)
    return doc


def mixed() -> dict[str, Any]:
    """A small run with an item of each kind the page colors differently, two devices,
    a failure whose headline is HOSTILE, and the fields newer reports add."""
    failure = item(
        "conv", "parity", outcome="failed", message=f"[parity] step 1: {HOSTILE}",
        max_abs_err=0.25, where="first diverging: act (Perturbed) — max abs err 0.1; inputs agree",
        tolerance="atol=1e-05, rtol=1.3e-06", text=f"[parity] step 1: {HOSTILE}\nthe whole text",
    )  # fmt: skip
    return document(
        [
            *(item("mlp", check, device=d) for check in ("signature", "parity") for d in ("cpu", "cuda:0")),
            item("mlp", "parity", "dynamo", outcome="xfailed", reason="dynamo lifts it", duration=2.5, xfail_line=12),
            item("conv", "signature", duration=7.25),
            failure,
            item("conv", "hierarchy", "dynamo", outcome="not_applicable", message="not applicable: flat"),
            item("slow", "parity", outcome="skipped", message="the case needs torch <1.0", file="cases/b.yaml"),
            item("bad", None, None, None, outcome="failed", message="[case] cases/b.yaml:9: unknown key", file="cases/b.yaml"),
        ]
    )  # fmt: skip
