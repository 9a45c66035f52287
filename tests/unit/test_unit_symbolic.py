"""Where a guard set a dim's bound: the user's frame, in either form torch keeps it."""

import traceback

import torch
from torch._guards import SLoc

from pytest_exportcheck.capture.symbolic import user_frame


def test_strict_exports_user_frame_is_text_with_the_code() -> None:
    sloc = SLoc(None, f"if x.shape[0] > 4:  # {__file__}:12 in forward")

    assert user_frame(sloc) == f"{__file__}:12 in forward (if x.shape[0] > 4:)"


def test_a_path_torch_cut_short_becomes_the_file_name() -> None:
    # torch drops the prefix a path shares with its own install, and can cut into a
    # directory name: /tmp/cases/net.py reads "mp/cases/net.py".
    sloc = SLoc(None, "if x.shape[0] > 4:  # mp/cases/net.py:12 in forward")

    assert user_frame(sloc) == "net.py:12 in forward (if x.shape[0] > 4:)"


def test_non_strict_exports_user_frame_is_the_frame_summary() -> None:
    frame = traceback.FrameSummary("/home/me/models/net.py", 12, "forward", line="if x > 4:")

    assert user_frame(SLoc(frame, None)) == "net.py:12 in forward (if x > 4:)"


def test_a_bound_torch_set_itself_has_no_user_frame() -> None:
    inside_torch = traceback.FrameSummary(torch.__file__, 1, "fakify", line="")
    zero_one = "user code shown is first use of this value--the guard itself is not due user code"

    assert user_frame(SLoc(inside_torch, None)) is None
    assert user_frame(SLoc(zero_one, None)) is None
    assert user_frame(None) is None
