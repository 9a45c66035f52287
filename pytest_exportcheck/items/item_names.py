"""How items are named: ``check[capture-device]``, ``consistency[device]``, and a
lowering target's ``lowered[target-capture-device]`` (its check is ``lowered-target``).

The YAML items, the Python API's results and the xdist scheduler all read these
names, so they live apart from the pytest collector (no pytest or torch import).
"""

from __future__ import annotations

from pytest_exportcheck.spec.case import LOWERED_PREFIX as LOWERED


def item_name(check: str, capture: str, device: str) -> str:
    if check.startswith(LOWERED):
        return f"lowered[{check.removeprefix(LOWERED)}-{capture}-{device}]"
    return f"{check}[{capture}-{device}]"


def loaded_name(saving_minor: str, capture: str, device: str) -> str:
    """A program torch ``saving_minor`` saved, loaded by this one: ``loaded[2.9-export-cpu]``."""
    return f"loaded[{saving_minor}-{capture}-{device}]"


def consistency_name(device: str) -> str:
    return f"consistency[{device}]"


def split_item_name(name: str) -> tuple[str, str, str] | None:
    """``parity[export-strict-cuda:0]`` → ``("parity", "export-strict", "cuda:0")``;
    ``lowered[aoti-export-cpu]`` → ``("lowered-aoti", "export", "cpu")``;
    ``loaded[2.9-export-cpu]`` → ``("loaded", "export", "cpu")``;
    ``consistency[cpu]`` → ``("consistency", "", "cpu")`` (it covers every capture)."""
    check, bracket, rest = name.partition("[")
    if not bracket or not rest.endswith("]"):
        return None
    if check == "consistency":
        return check, "", rest[:-1]
    if check == "loaded":  # loaded[2.9-export-cpu]: the saving minor is its first part
        rest = rest.partition("-")[2]
    elif check == "lowered":  # lowered[aoti-export-cpu]: the target is its first part
        target, dash, rest = rest.partition("-")
        check = f"{LOWERED}{target}" if dash else check
    capture, dash, device = rest[:-1].rpartition("-")
    return (check, capture, device) if dash else None
