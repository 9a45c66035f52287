"""How many times eager calls each submodule: what ``unflatten``'s call graph must match.

Counted with forward hooks on a model of its own, per module *object*, so a
submodule shared under two names is one count reported under both::

    model.a = model.b = shared          forward calls shared twice
    → {"a": 2, "b": 2}
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import torch

from pytest_exportcheck.model.isolation import seeded


@dataclass(frozen=True)
class CallCounts:
    """Forward calls per module *object*, keyed by every FQN the object has.

    A submodule shared under two names reports one count twice. ``calls`` is
    ``None`` (with ``unavailable`` saying why) where forward hooks break the
    model's eager forward, e.g. submodules inside ``torch.cond`` branches.
    """

    calls: dict[str, int] | None
    unavailable: str | None = None
    # FQNs of modules every call of which returned one of its inputs, the object
    # itself: a no-op in this mode (Dropout, StochasticDepth, Identity in eval),
    # which export records no call of.
    passthrough: frozenset[str] = frozenset()


def count_calls(
    model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], seed: int
) -> CallCounts:
    """One seeded eager call of ``model`` (which it may change) with a hook on every module."""
    objects_called: Counter[int] = Counter()
    returned_input: Counter[int] = Counter()

    def count(module: torch.nn.Module, inputs: tuple[Any, ...], output: Any) -> None:
        objects_called[id(module)] += 1
        if any(output is value for value in inputs):
            returned_input[id(module)] += 1

    handles = [module.register_forward_hook(count) for module in model.modules()]
    try:
        with seeded(seed), torch.enable_grad():
            model(*args, **kwargs)
    except Exception as exc:
        reason = f"forward hooks make this model's eager forward raise {type(exc).__name__}"
        return CallCounts(None, reason)
    finally:
        for handle in handles:
            handle.remove()
    named = [(n, m) for n, m in model.named_modules(remove_duplicate=False) if n]
    return CallCounts(
        {name: objects_called[id(module)] for name, module in named},
        passthrough=frozenset(
            name
            for name, module in named
            if 0 < objects_called[id(module)] == returned_input[id(module)]
        ),
    )
