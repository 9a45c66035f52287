"""Plain torch, no plugin: the chain failures the bundled corpus showed under
``--exportcheck-programs`` (docs/programs.md), each reproduced where it was found.

    python benchmarks/confirm_chains.py      # under each torch to confirm
"""

import io
import sys
import warnings
from pathlib import Path

import torch
from torch.export import Dim
warnings.simplefilter("ignore")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cases"))
print(torch.__version__)

def attempt(label, fn):
    try:
        out = fn(); print(label, "OK", out if out is not None else "")
    except Exception as e:
        print(label, "RAISED", type(e).__name__, str(e).splitlines()[0][:150])

# 1. ExportDB dynamic_shape_slicing, strict, retraced with the same dims
from torch._export.db.examples.dynamic_shape_slicing import DynamicShapeSlicing
x = torch.randn(3, 2)
dims = {"x": {0: Dim("rows", min=3, max=16), 1: Dim("cols", min=2, max=16)}}
for strict in (True, False):
    try:
        ep = torch.export.export(DynamicShapeSlicing(), (x,), dynamic_shapes=dims, strict=strict)
    except Exception as e:
        print("slicing strict" if strict else "slicing non-strict", "capture raised", type(e).__name__); continue
    attempt(f"slicing strict={strict} retrace", lambda: torch.export.export(ep.module(), (x,), dynamic_shapes=dims, strict=False) and None)

# 2. PairsView strict, derived dim, retrace then pairs=1
from models.dynamic import PairsView
pairs = Dim("pairs", min=1, max=8)
x = torch.randn(2, 6)
d = {"x": {1: 2 * pairs}}
ep = torch.export.export(PairsView(), (x,), dynamic_shapes=d, strict=True)
attempt("pairs strict ep.module() at pairs=1", lambda: tuple(ep.module()(torch.randn(2, 2)).shape))
rt = torch.export.export(ep.module(), (x,), dynamic_shapes=d, strict=False)
attempt("pairs strict retrace at pairs=1", lambda: tuple(rt.module()(torch.randn(2, 2)).shape))

# 3. EMATracker retraced, saved, loaded
from models.state import EMATracker
m = EMATracker(4, 0.9); x = torch.randn(3, 4)
ep = torch.export.export(m, (x,))
rt = torch.export.export(ep.module(), (x,))
def save_load(p):
    b = io.BytesIO(); torch.export.save(p, b); b.seek(0); return torch.export.load(b)
attempt("ema save/load", lambda: save_load(ep) and None)
attempt("ema retrace save/load", lambda: save_load(rt) and None)

# 4. LSTM decompose>save, h_n shape
class Tagger(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.lstm = torch.nn.LSTM(4, 5, batch_first=True)
    def forward(s, x): return s.lstm(x)
x = torch.randn(2, 3, 4)
ep = torch.export.export(Tagger().eval(), (x,))
attempt("lstm decompose>save h_n", lambda: tuple(save_load(ep.run_decompositions()).module()(x)[1][0].shape))
attempt("lstm eager h_n", lambda: tuple(Tagger().eval()(x)[1][0].shape))
