"""Import torchvision on a CPU-only torch whose build its C++ operators do not load against.

torchvision 0.28.0 (the release that matches torch 2.13) is published only as a CUDA
build. Against ``torch 2.13.0+cpu`` its extension ``_C.so`` fails to load, which
torchvision tolerates, but ``torchvision/_meta_registrations.py`` then calls
``torch.library.register_fake("torchvision::nms")`` and ``("torchvision::qnms")`` at
import, and ``import torchvision`` raises ``RuntimeError: operator torchvision::nms does
not exist`` (measured: torchvision 0.28.0, torch 2.13.0+cpu). Those two are the only
schemas the import needs; every other fake registration there is guarded by
``extension._has_ops()``.

``load()`` declares the two schemas with ``torch.library`` (exactly as torchvision's
C++ declares them) when the import fails that way, gives ``nms`` a CPU kernel written
in plain torch (``nms_reference`` below), and imports torchvision again. The rest of
torchvision needs no C++ op for the field corpus: ``roi_align`` falls back to its
Python ``_roi_align`` when ``_has_ops()`` is false. ``torchvision.ops.boxes.nms`` calls
``_assert_has_ops()`` before dispatching to ``torch.ops.torchvision.nms``, so that one
module's name is rebound to a check that the schema exists.

Only the field corpus's model factories import this file (by path); the plugin never
depends on torchvision. Where torchvision imports by itself (a CPU build whose C++ ops
load), ``load()`` changes nothing.
"""

from __future__ import annotations

import sys
from types import ModuleType

import torch

# torchvision/csrc/ops/nms.cpp's schemas, verbatim.
_SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)
_MISSING_OP = "operator torchvision::nms does not exist"
_library: torch.library.Library | None = None


def nms_reference(dets: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """Greedy non-maximum suppression, as torchvision's CPU kernel computes it.

    ``torchvision/csrc/ops/cpu/nms_kernel.cpp``: boxes are visited by score, descending
    (a stable sort, so equal scores keep index order); a visited box that is not yet
    suppressed is kept and suppresses every later box whose IoU with it is strictly
    above the threshold. Areas and IoU are computed in the boxes' dtype with the same
    operations in the same order, so the result is the kernel's, not an approximation.
    Returns the kept indices (int64) in the order they were kept.
    """
    if dets.numel() == 0:
        return torch.empty((0,), dtype=torch.long, device=dets.device)
    order = torch.sort(scores, stable=True, descending=True).indices
    x1, y1, x2, y2 = (dets[:, k][order] for k in range(4))
    areas = (x2 - x1) * (y2 - y1)
    count = order.numel()
    suppressed = torch.zeros(count, dtype=torch.bool, device=dets.device)
    kept: list[int] = []
    # One row of IoUs per kept box, not an N x N matrix: region proposals reach
    # thousands of boxes, and only the kept ones need their row.
    for i in range(count):
        if suppressed[i]:
            continue
        kept.append(i)
        later = slice(i + 1, count)
        w = (torch.minimum(x2[i], x2[later]) - torch.maximum(x1[i], x1[later])).clamp(min=0)
        h = (torch.minimum(y2[i], y2[later]) - torch.maximum(y1[i], y1[later])).clamp(min=0)
        inter = w * h
        iou = inter / (areas[i] + areas[later] - inter)
        suppressed[later] |= iou > iou_threshold
    return order[torch.tensor(kept, dtype=torch.long, device=dets.device)]


def _declare_ops() -> None:
    """Define ``torchvision::nms`` / ``qnms`` and register the CPU kernel for ``nms``."""
    global _library
    if _library is not None:
        return
    library = torch.library.Library("torchvision", "DEF")
    for schema in _SCHEMAS:
        library.define(schema)
    library.impl("nms", nms_reference, "CPU")
    _library = library  # kept alive: the definitions go with the Library object


def _forget_partial_import() -> None:
    """Drop the modules a failed ``import torchvision`` left half-initialised."""
    for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
        del sys.modules[name]


def _assert_nms_declared() -> None:
    if not torch._C._dispatch_has_kernel_for_dispatch_key("torchvision::nms", "CPU"):
        raise RuntimeError("torchvision::nms has no CPU kernel (cases/field/torchvision_cpu.py)")


def load() -> ModuleType:
    """``import torchvision``, declaring its two missing operators first if it needs them."""
    try:
        import torchvision
    except RuntimeError as error:
        if _MISSING_OP not in str(error):
            raise
        _forget_partial_import()
        _declare_ops()
        import torchvision
        import torchvision.ops.boxes

        torchvision.ops.boxes._assert_has_ops = _assert_nms_declared
    return torchvision
