"""The field corpus's CPU kernel for ``torchvision::nms`` (cases/field/torchvision_cpu.py).

torchvision's own kernel cannot load against a CPU-only torch 2.13, so detection models
in the field corpus run this one: it must keep exactly the boxes torchvision's CPU
kernel keeps, in the same order. The reference below is that kernel's loop written out
pair by pair (torchvision/csrc/ops/cpu/nms_kernel.cpp), in the boxes' dtype.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

_SHIM = Path(__file__).parents[2] / "cases" / "field" / "torchvision_cpu.py"
_spec = importlib.util.spec_from_file_location("field_torchvision_cpu", _SHIM)
assert _spec is not None and _spec.loader is not None
shim = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(shim)


def brute_force_nms(dets: torch.Tensor, scores: torch.Tensor, threshold: float) -> list[int]:
    order = torch.sort(scores, stable=True, descending=True).indices.tolist()
    suppressed = set()
    keep = []
    for a, i in enumerate(order):
        if i in suppressed:
            continue
        keep.append(i)
        ix1, iy1, ix2, iy2 = dets[i]
        iarea = (ix2 - ix1) * (iy2 - iy1)
        for j in order[a + 1 :]:
            jx1, jy1, jx2, jy2 = dets[j]
            w = torch.clamp(torch.minimum(ix2, jx2) - torch.maximum(ix1, jx1), min=0)
            h = torch.clamp(torch.minimum(iy2, jy2) - torch.maximum(iy1, jy1), min=0)
            inter = w * h
            if inter / (iarea + (jx2 - jx1) * (jy2 - jy1) - inter) > threshold:
                suppressed.add(j)
    return keep


def random_boxes(count: int, seed: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    corner = torch.rand(count, 2, generator=generator, dtype=dtype) * 20
    size = torch.rand(count, 2, generator=generator, dtype=dtype) * 10
    scores = torch.rand(count, generator=generator, dtype=dtype)
    return torch.cat([corner, corner + size], dim=1), scores


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.5, 0.7, 1.0])
@pytest.mark.parametrize("seed", range(4))
def test_keeps_what_the_pairwise_loop_keeps(
    seed: int, threshold: float, dtype: torch.dtype
) -> None:
    dets, scores = random_boxes(60, seed, dtype)
    kept = shim.nms_reference(dets, scores, threshold)
    assert kept.dtype == torch.long
    assert kept.tolist() == brute_force_nms(dets, scores, threshold)


def test_equal_scores_are_visited_in_index_order() -> None:
    # Three copies of one box with one score: the first index survives, the rest go.
    dets = torch.tensor([[0.0, 0.0, 1.0, 1.0]] * 3 + [[5.0, 5.0, 6.0, 6.0]])
    scores = torch.tensor([0.5, 0.5, 0.5, 0.1])
    assert shim.nms_reference(dets, scores, 0.5).tolist() == [0, 3]


def test_iou_equal_to_the_threshold_is_kept() -> None:
    # Overlap 1 of union 2 (IoU exactly 0.5): suppression needs IoU strictly above it.
    dets = torch.tensor([[0.0, 0.0, 2.0, 1.0], [1.0, 0.0, 2.0, 1.0]])
    scores = torch.tensor([0.9, 0.8])
    assert shim.nms_reference(dets, scores, 0.5).tolist() == [0, 1]
    assert shim.nms_reference(dets, scores, 0.49).tolist() == [0]


def test_zero_area_boxes_suppress_nothing() -> None:
    # IoU 0/0 is NaN, and NaN > threshold is false, in the C++ loop and here.
    dets = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]])
    scores = torch.tensor([0.2, 0.9])
    assert shim.nms_reference(dets, scores, 0.5).tolist() == [1, 0]


def test_no_boxes_give_an_empty_int64_tensor() -> None:
    kept = shim.nms_reference(torch.zeros(0, 4), torch.zeros(0), 0.5)
    assert kept.shape == (0,) and kept.dtype == torch.long
