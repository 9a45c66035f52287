"""Plain torch, no plugin: the chain failures the bundled corpus showed under
``--exportcheck-programs`` (docs/programs.md), each reproduced as the case makes it.

    python benchmarks/confirm_chains.py      # under each torch to confirm
"""

from __future__ import annotations

import io
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.export import Dim

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cases"))
warnings.simplefilter("ignore")


def attempt(label: str, function: Callable[[], Any]) -> None:
    try:
        print(label, "gives", function())
    except Exception as exc:
        print(label, "raises", type(exc).__name__, str(exc).splitlines()[0][:150])


def saved_and_loaded(program: Any) -> Any:
    buffer = io.BytesIO()
    torch.export.save(program, buffer)
    buffer.seek(0)
    return torch.export.load(buffer)


def retraced(program: Any, args: tuple[Any, ...], dims: Any = None) -> Any:
    return torch.export.export(program.module(), args, dynamic_shapes=dims, strict=False)


def main() -> None:
    from models.dynamic import PairsView
    from models.state import EMATracker
    from torch._export.db.examples.dynamic_shape_slicing import DynamicShapeSlicing

    print(torch.__version__)
    # ExportDB dynamic_shape_slicing: strict specializes rows; its retrace refuses the dims.
    x = torch.randn(3, 2)
    dims = {"x": {0: Dim("rows", min=3, max=16), 1: Dim("cols", min=2, max=16)}}
    strict = torch.export.export(DynamicShapeSlicing(), (x,), dynamic_shapes=dims, strict=True)
    attempt("slicing, strict, retraced with the dims", lambda: bool(retraced(strict, (x,), dims)))
    # PairsView with seq = 2*pairs: strict accepts pairs=1, its retrace refuses it.
    pairs = Dim("pairs", min=1, max=8)
    x = torch.randn(2, 6)
    dims = {"x": {1: 2 * pairs}}
    strict = torch.export.export(PairsView(), (x,), dynamic_shapes=dims, strict=True)
    one = torch.randn(2, 2)
    attempt("pairs_view_derived, strict, at pairs=1", lambda: tuple(strict.module()(one).shape))
    again = retraced(strict, (x,), dims)
    attempt("pairs_view_derived, retraced, at pairs=1", lambda: tuple(again.module()(one).shape))
    # EMATracker: a retrace keeps wrap_with_set_grad_enabled; does its save load?
    x = torch.randn(3, 4)
    program = torch.export.export(EMATracker(4, 0.9), (x,))
    attempt("ema_buffer, saved and loaded", lambda: bool(saved_and_loaded(program)))
    attempt("ema_buffer, retrace>save", lambda: bool(saved_and_loaded(retraced(program, (x,)))))
    # A batch_first LSTM (inside a module, as lstm_tagger's): the decomposed program,
    # saved and loaded, and its h_n.
    lstm = torch.nn.Sequential(torch.nn.LSTM(4, 5, batch_first=True)).eval()
    x = torch.randn(2, 3, 4)
    program = torch.export.export(lstm, (x,))
    decomposed = saved_and_loaded(program.run_decompositions())
    attempt("lstm, eager h_n", lambda: tuple(lstm(x)[1][0].shape))
    attempt("lstm, decompose>save h_n", lambda: tuple(decomposed.module()(x)[1][0].shape))


if __name__ == "__main__":
    main()
