"""Plain torch, no plugin: what ``.train()`` / ``.eval()`` does to an exported program,
as the ``mode`` check reports it (docs/programs.md).

A BatchNorm + Dropout model exported in train mode: ``ep.module().eval()`` raises;
``unflatten(ep).eval()`` sets the flag and computes as before, in train mode.

    python benchmarks/confirm_mode.py
"""

import warnings

import torch

warnings.simplefilter("ignore")


class BnDrop(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.bn = torch.nn.BatchNorm1d(4)
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.bn(self.lin(x)))


def run(module: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    torch.manual_seed(1)
    return module(x)


print(torch.__version__)
torch.manual_seed(0)
model = BnDrop().train()
x = torch.randn(3, 4)
ep = torch.export.export(model, (x,))
try:
    ep.module().eval()
    print("ep.module().eval(): does not raise")
except Exception as exc:
    print(f"ep.module().eval(): raises {type(exc).__name__}: {exc}")
unflattened = torch.export.unflatten(ep)
unflattened.eval()
evaluated, trained = BnDrop(), BnDrop()
evaluated.load_state_dict(model.state_dict())
trained.load_state_dict(model.state_dict())
evaluated.eval()
got = run(unflattened, x)
print("unflatten(ep).eval(): training =", unflattened.training)
print("  computes as eager in eval mode:", torch.allclose(got, run(evaluated, x)))
print("  computes as eager in train mode:", torch.allclose(got, run(trained.train(), x)))
