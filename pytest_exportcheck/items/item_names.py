"""How items are named: ``check[capture-device]``, and ``consistency[device]``.

The YAML items, the Python API's results and the xdist scheduler all read these
names, so they live apart from the pytest collector (no pytest or torch import).
"""

from __future__ import annotations


def item_name(check: str, capture: str, device: str) -> str:
    return f"{check}[{capture}-{device}]"


def consistency_name(device: str) -> str:
    return f"consistency[{device}]"


def split_item_name(name: str) -> tuple[str, str, str] | None:
    """``parity[export-strict-cuda:0]`` → ``("parity", "export-strict", "cuda:0")``;
    ``consistency[cpu]`` → ``("consistency", "", "cpu")`` (it covers every capture)."""
    check, bracket, rest = name.partition("[")
    if not bracket or not rest.endswith("]"):
        return None
    if check == "consistency":
        return check, "", rest[:-1]
    capture, dash, device = rest[:-1].rpartition("-")
    return (check, capture, device) if dash else None
