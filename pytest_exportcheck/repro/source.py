"""The case's model and inputs as plain Python source, built as the plugin builds them.

The plugin builds a model under ``seed_everything(case.seed)`` (torch, ``random``,
numpy): ``target(*args, **kwargs)`` with nested ``_target_`` values constructed in
order, then ``.eval()`` / ``.train()`` and, for ``init: fan_in``, the parameters
redrawn (``model/build.py``); its inputs under ``seed_everything(input_seed(seed))``,
each YAML tensor drawn as ``make_tensor`` draws it, or from the case's input factory.
Every call is made on clones of the inputs after seeding again
(``model/runs.py``). The text below does the same, step for step, so a script's
tensors are the item's bit for bit.
"""

from __future__ import annotations

import math
from keyword import iskeyword
from pathlib import Path
from typing import Any

from pytest_exportcheck.spec import Case

# The dtype names a case may write, as torch's attribute names (model/build.py's DTYPES).
DTYPE_NAMES = {
    "float32": "float32", "float": "float32", "float64": "float64", "double": "float64",
    "float16": "float16", "half": "float16", "bfloat16": "bfloat16",
    "int64": "int64", "long": "int64", "int32": "int32", "int": "int32",
    "int16": "int16", "int8": "int8", "uint8": "uint8", "bool": "bool",
    "complex64": "complex64", "complex128": "complex128",
}  # fmt: skip
FLOATING = ("float", "bfloat", "complex")

HELPERS = '''
def input_path(path):
    """``args[0]``, ``kwargs['mask']``: how a case names an input."""
    head, *rest = path
    text = "args" if getattr(head, "idx", None) == 0 else "kwargs"
    for key in rest:
        if hasattr(key, "idx"):
            text += f"[{key.idx}]"
        elif hasattr(key, "key"):
            text += f"[{key.key!r}]"
        else:
            text += f".{getattr(key, 'name', key)}"
    return text


def seed_everything(seed):
    """torch, random and numpy, as the plugin seeds them before each build and call."""
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy
    except ImportError:
        return
    numpy.random.seed(seed)


def load_file(path):
    """A model file the case names by its path."""
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def built():
    """The model and inputs; on another device than the CPU, made under it and moved
    there, as the item makes them."""
    if DEVICE == "cpu":
        return build_model(), build_inputs()
    with torch.device(DEVICE):
        model, inputs = build_model(), build_inputs()
    moved = pytree.tree_map(lambda t: t.to(DEVICE) if isinstance(t, torch.Tensor) else t, inputs)
    return model.to(DEVICE), moved


def cloned(tree):
    """Fresh copies of every tensor, as each call gets them."""
    def clone(leaf):
        if isinstance(leaf, torch.Tensor):
            return leaf.detach().clone().requires_grad_(leaf.requires_grad)
        return leaf
    return pytree.tree_map(clone, tree)


def detached(tree):
    return pytree.tree_map(lambda t: t.detach() if isinstance(t, torch.Tensor) else t, tree)


def calls(module, inputs, steps, *, eager):
    """``steps`` calls, each on fresh clones of the inputs after seeding; eager with
    autograd on (export traces that way), programs without. Each step keeps the
    output, the module's parameters and buffers, and the inputs as the call left them."""
    results = []
    for _ in range(steps):
        args, kwargs = cloned(inputs)
        seed_everything(SEED)
        with torch.set_grad_enabled(eager):
            output = detached(module(*args, **kwargs))
        state = {}
        if isinstance(module, torch.nn.Module):
            named = [*module.named_parameters(), *module.named_buffers()]
            state = {name: t.detach().clone() for name, t in named}
        results.append((output, state, detached((args, kwargs))))
    return results
'''


class UnwritableTarget(ValueError):
    """A target whose names are not Python identifiers: no script can name it."""


class Imports:
    """The imports a script's targets need, and the expression naming each target."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._names: dict[str, str] = {}  # where → the name it is bound to in the script

    def target(self, target: str, base_dir: Path) -> str:
        """``file.py:A.B`` → ``file_module.A.B``; ``pkg.mod:A.B`` → ``A.B``, imported."""
        where, _, attr_path = target.rpartition(":")
        # A file is loaded by its path (any spelling); a module and the attributes are code.
        module = "" if where.endswith(".py") else where
        names = [*attr_path.split("."), *(module.split(".") if module else [])]
        if not all(_plain_name(part) for part in names):
            raise UnwritableTarget(f"target {target!r} is not a dotted Python name")
        first, _, rest = attr_path.partition(".")
        if where.endswith(".py"):
            path = str((base_dir / where).resolve())
            name = self._bind(path, _identifier(Path(where).stem) + "_file")
            if not any(path in line for line in self.lines):
                self.lines.append(f"{name} = load_file({path!r})")
            return f"{name}.{attr_path}"
        name = self._bind(f"{where}:{first}", first)
        line = f"from {where} import {first}" + (f" as {name}" if name != first else "")
        if line not in self.lines:
            self.lines.append(line)
        return f"{name}.{rest}" if rest else name

    def _bind(self, key: str, wanted: str) -> str:
        if key not in self._names:
            taken = set(self._names.values())
            name, count = wanted, 1
            while name in taken:
                count += 1
                name = f"{wanted}_{count}"
            self._names[key] = name
        return self._names[key]


def model_source(case: Case, imports: Imports) -> str:
    """The body of ``build_model()``: seeded, constructed, its mode set, redrawn."""
    spec = case.model
    factory = imports.target(spec.target, case.base_dir)
    arguments = [constructed(a, case, imports) for a in spec.args]
    arguments += [keyword(k, constructed(v, case, imports)) for k, v in spec.kwargs.items()]
    lines = [
        "seed_everything(SEED)",
        f"model = {factory}({', '.join(arguments)})",
        f"model.{spec.mode}()" if spec.mode == "train" else "model.eval()",
    ]
    if spec.init == "fan_in":
        lines += FAN_IN.strip().splitlines()
    return "\n".join([*lines, "return model"])


FAN_IN = """
# init: fan_in - every floating parameter redrawn from the seeded stream
with torch.no_grad():
    for name, parameter in model.named_parameters():
        if not parameter.is_floating_point():
            continue
        if parameter.dim() >= 2:
            parameter.normal_(0.0, (2.0 / max(parameter[0].numel(), 1)) ** 0.5)
        elif name.rsplit(".", 1)[-1] == "weight":
            parameter.normal_(1.0, 0.1)
        else:
            parameter.normal_(0.0, 0.1)
"""


def inputs_source(case: Case, imports: Imports) -> str:
    """The body of ``build_inputs()``: the inputs' own seeded stream, then each input."""
    spec = case.inputs
    lines = ["seed_everything(INPUT_SEED)"]
    if "factory" in spec:
        factory = imports.target(spec["factory"], case.base_dir)
        kwargs = ", ".join(keyword(k, literal(v)) for k, v in dict(spec.get("kwargs", {})).items())
        lines.append(f"args, kwargs = {factory}({kwargs})")
        return "\n".join([*lines, "return tuple(args), dict(kwargs)"])
    args = [input_source(v) for v in spec.get("args", [])]
    kwargs = [f"{k!r}: {input_source(v)}" for k, v in spec.get("kwargs", {}).items()]
    lines.append(f"args = ({', '.join(args)}{',' if len(args) == 1 else ''})")
    lines.append(f"kwargs = {{{', '.join(kwargs)}}}")
    return "\n".join([*lines, "return args, kwargs"])


def input_source(value: Any) -> str:
    """One YAML input value (``build.input_value``) as source."""
    if isinstance(value, list):
        return "[" + ", ".join(input_source(v) for v in value) + "]"
    if not isinstance(value, dict):
        return literal(value)
    if "shape" in value:
        return tensor_source(value)
    if "data" in value:
        dtype = f", dtype=torch.{DTYPE_NAMES[value['dtype']]}" if "dtype" in value else ""
        return f"torch.tensor({literal(value['data'])}{dtype})"
    if "tuple" in value:
        items = [input_source(v) for v in value["tuple"]]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    mapping = value.get("dict", value)
    return "{" + ", ".join(f"{k!r}: {input_source(v)}" for k, v in mapping.items()) + "}"


def tensor_source(spec: dict[str, Any]) -> str:
    """``make_tensor``'s draw, call for call (the same arithmetic, the same stream)."""
    shape = literal(tuple(spec["shape"]))
    name = DTYPE_NAMES[spec.get("dtype", "float32")]
    dtype = f"dtype=torch.{name}"
    init = spec.get("init", "randn" if name.startswith(FLOATING) else "randint")
    if init == "randn":
        text = f"torch.randn({shape}, {dtype})"
    elif init == "rand":
        low, high = literal(spec.get("low", 0.0)), literal(spec.get("high", 1.0))
        text = f"(torch.rand({shape}, {dtype}) * ({high} - {low}) + {low})"
    elif init == "randint":
        high = spec.get("high", 2) if name == "bool" else spec["high"]
        text = f"torch.randint({int(spec.get('low', 0))}, {int(high)}, {shape}, {dtype})"
    elif init in ("zeros", "ones"):
        text = f"torch.{init}({shape}, {dtype})"
    elif init == "arange":
        text = f"torch.arange({math.prod(spec['shape'])}).to(torch.{name}).reshape({shape})"
    else:  # full
        text = f"torch.full({shape}, {literal(spec['value'])}, {dtype})"
    return f"{text}.requires_grad_()" if spec.get("requires_grad") else text


def constructed(value: Any, case: Case, imports: Imports) -> str:
    """A model argument (``build.instantiate``): a ``_target_`` mapping becomes its call."""
    if isinstance(value, dict):
        if "_target_" in value:
            factory = imports.target(value["_target_"], case.base_dir)
            parts = [constructed(a, case, imports) for a in value.get("_args_", [])]
            parts += [
                keyword(k, constructed(v, case, imports))
                for k, v in value.items()
                if k not in ("_target_", "_args_")
            ]
            return f"{factory}({', '.join(parts)})"
        items = [f"{k!r}: {constructed(v, case, imports)}" for k, v in value.items()]
        return "{" + ", ".join(items) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(constructed(v, case, imports) for v in value) + "]"
    return literal(value)


def literal(value: Any) -> str:
    """A YAML scalar or container as a Python literal (``inf`` and ``nan`` included)."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    if isinstance(value, (list, tuple)):
        items = [literal(v) for v in value]
        if isinstance(value, tuple):
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return "[" + ", ".join(items) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


def keyword(name: Any, value: str) -> str:
    """``name=value`` in a call; ``**{'a-b': value}`` where the name is no identifier."""
    if isinstance(name, str) and _plain_name(name):
        return f"{name}={value}"
    return f"**{{{literal(name)}: {value}}}"


def _plain_name(text: str) -> bool:
    return text.isidentifier() and not iskeyword(text)


def _identifier(text: str) -> str:
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in text)
    return name if name and not name[0].isdigit() else f"m_{name}"
