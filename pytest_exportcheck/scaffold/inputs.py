"""The scaffold's command-line vocabulary: ``--input`` specs, case names, target paths.

Pure and torch-free, so the grammar is tested on its own and ``--help`` stays
instant. A parsed spec is the case format's own input value: the case loader
then validates it exactly as it validates a hand-written case.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import Any

from pytest_exportcheck.spec.load import case_schema

# An integer input with no range draws from [0, 2): a valid index for any
# embedding or lookup table, which is what integer inputs usually are.
DEFAULT_INTEGER_HIGH = 2
FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16", "float", "double", "half")
COMPLEX_DTYPES = ("complex64", "complex128")

INPUT_HELP = (
    "SHAPE[:DTYPE[:RANGE]] or =SCALAR. SHAPE: dims joined by x (2x8; 'scalar' or empty for a "
    "0-d tensor). DTYPE: default float32. RANGE: [LOW..]HIGH, randint bounds for integer "
    f"dtypes (default 0..{DEFAULT_INTEGER_HIGH}), rand bounds for floating ones. "
    "=SCALAR passes a Python value: =3, =0.5, =true, =none, =text."
)


class InputSpecError(ValueError):
    """An ``--input`` / ``--kwarg`` spec that does not parse; the message says how to fix it."""


def dtype_names() -> list[str]:
    """The dtypes the case format accepts (from the schema, so the two cannot drift)."""
    return list(case_schema()["$defs"]["dtype"]["enum"])


def parse_input_spec(text: str) -> Any:
    """``2x8:float32`` → ``{shape: [2, 8], dtype: float32}``; ``=3`` → ``3``.

    The result is the case format's input value, so the loader validates it
    like any hand-written one.
    """
    if text.startswith("="):
        return parse_scalar(text[1:])
    parts = text.strip().split(":")
    if len(parts) > 3:
        raise InputSpecError(
            f"{text!r}: too many ':' (expected SHAPE[:DTYPE[:RANGE]], e.g. 2x8:int64:0..16)"
        )
    shape_text, dtype, range_text = (*parts, "", "")[:3]
    spec: dict[str, Any] = {"shape": parse_shape(shape_text, text)}
    dtype = dtype.strip() or "float32"
    known = dtype_names()
    if dtype not in known:
        hint = difflib.get_close_matches(dtype, known, n=1)
        did_you_mean = f" (did you mean {hint[0]!r}?)" if hint else ""
        raise InputSpecError(
            f"{text!r}: unknown dtype {dtype!r}{did_you_mean}; known: {', '.join(known)}"
        )
    spec["dtype"] = dtype
    floating = dtype in FLOAT_DTYPES or dtype in COMPLEX_DTYPES
    if range_text.strip():
        low, high = parse_range(range_text.strip(), text, floating=floating)
        if dtype == "bool":
            raise InputSpecError(f"{text!r}: a bool tensor takes no range (it draws 0 or 1)")
        if floating:
            spec.update(init="rand", low=low, high=high)
        else:
            spec.update({"low": low} if low else {})
            spec["high"] = high
    elif not floating and dtype != "bool":
        spec["high"] = DEFAULT_INTEGER_HIGH
    return spec


def parse_shape(shape_text: str, text: str) -> list[int]:
    shape_text = shape_text.strip().lower()
    if shape_text in ("", "scalar"):
        return []
    dims = []
    for part in shape_text.split("x"):
        if not part.strip().isdigit():
            raise InputSpecError(
                f"{text!r}: dimension {part!r} is not a non-negative integer "
                "(a shape is dims joined by x: 2x8, 4, 2x3x32x32; 'scalar' for 0-d)"
            )
        dims.append(int(part))
    return dims


def parse_range(range_text: str, text: str, *, floating: bool) -> tuple[Any, Any]:
    """``16`` → (0, 16); ``-4..4`` → (-4, 4); floats for floating dtypes."""
    low_text, dots, high_text = range_text.partition("..")
    if not dots:
        low_text, high_text = "0", range_text
    number = float if floating else int
    try:
        low, high = number(low_text), number(high_text)
    except ValueError:
        kind = "numbers" if floating else "integers"
        raise InputSpecError(
            f"{text!r}: range {range_text!r} must be HIGH or LOW..HIGH with {kind}"
        ) from None
    if low >= high:
        raise InputSpecError(f"{text!r}: range {range_text!r} is empty (LOW must be below HIGH)")
    return low, high


def parse_scalar(text: str) -> Any:
    """A non-tensor input: int, float, bool, None, else the string itself."""
    lowered = text.strip().lower()
    if lowered in ("none", "null", "~"):
        return None
    if lowered in ("true", "false"):
        return lowered == "true"
    for number in (int, float):
        try:
            return number(text)
        except ValueError:
            pass
    return text


def parse_kwarg_spec(text: str) -> tuple[str, Any]:
    """``mask=2x5:bool`` → ``("mask", {shape: [2, 5], dtype: bool})``."""
    name, equals, spec = text.partition("=")
    if not equals or not name.isidentifier():
        raise InputSpecError(f"{text!r}: expected NAME=SPEC, e.g. mask=2x5:bool or scale==0.5")
    return name, parse_input_spec(spec)


def snake_case(name: str) -> str:
    """``TinyLM`` → ``tiny_lm``, ``MyModel`` → ``my_model``: the default case name."""
    words = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    words = re.sub(r"([a-z])([A-Z])", r"\1_\2", words)
    snake = re.sub(r"\W+", "_", words).strip("_").lower()
    return snake if re.fullmatch(r"[A-Za-z_]\w*", snake) else f"case_{snake}"


def split_target(target: str) -> tuple[str, str]:
    where, colon, attr = target.rpartition(":")
    if not colon or not where or not attr:
        raise InputSpecError(
            f"target {target!r} must look like 'pkg.mod:Attr' or 'path/to/file.py:Attr'"
        )
    return where, attr


def target_reference(target: str, yaml_dir: Path, cwd: Path) -> str:
    """The target as the case file must spell it: a file target becomes relative to the YAML.

    On the command line ``models/net.py`` is relative to the current directory;
    in a case file it is relative to the case file's directory.
    """
    where, attr = split_target(target)
    if not where.endswith(".py"):
        return target
    model_file = (cwd / where).resolve()
    try:
        relative = os.path.relpath(model_file, yaml_dir.resolve())
    except ValueError:  # another drive (Windows): only an absolute path works
        relative = str(model_file)
    return f"{Path(relative).as_posix()}:{attr}"


DYNAMIC_HELP = (
    "PATH:DIM=NAME[MIN..MAX] places a dynamic dim (args[0]:0=batch[1..64]); a later "
    "placement of the same NAME may leave out the range; NAME=EXPR derives one "
    "(args[1]:1=seq2=2*seq); NAME auto / static / dynamic is a marker"
)
_DYNAMIC = re.compile(
    r"^(?P<path>(?:args|kwargs)\[.+\]):(?P<index>\d+)=(?P<name>[A-Za-z_]\w*)"
    r"(?:\[(?P<low>\d+)\.\.(?P<high>\d+)\]|=(?P<expr>[^=]+))?$"
)


def parse_dynamic_spec(text: str) -> tuple[str, int, str, dict[str, Any] | None]:
    """``args[0]:0=batch[1..64]`` → ``("args[0]", 0, "batch", {"min": 1, "max": 64})``;
    the last element is None where the dim is declared elsewhere (or is a marker)."""
    match = _DYNAMIC.match(text.strip())
    if match is None:
        raise InputSpecError(f"{text!r}: expected {DYNAMIC_HELP}")
    path, index, name = match["path"], int(match["index"]), match["name"]
    if match["low"] is not None:
        low, high = int(match["low"]), int(match["high"])
        if low > high:
            raise InputSpecError(f"{text!r}: min {low} is above max {high}")
        return path, index, name, {"min": low, "max": high}
    if match["expr"] is not None:
        return path, index, name, {"expr": match["expr"].strip()}
    return path, index, name, None


def dynamic_mapping(specs: list[tuple[str, int, str, dict[str, Any] | None]]) -> dict[str, Any]:
    """The case's ``dynamic:`` from ``--dynamic`` placements (validated by the loader)."""
    dims: dict[str, Any] = {}
    shapes: dict[str, dict[int, str]] = {}
    for path, index, name, declared in specs:
        if declared is not None:
            if name in dims and dims[name] != declared:
                raise InputSpecError(f"dim {name!r} is declared twice, differently")
            dims[name] = declared
        elif name not in ("auto", "static", "dynamic") and name not in dims:
            raise InputSpecError(
                f"{path}:{index}={name}: {name!r} needs its range where first placed "
                f"({path}:{index}={name}[MIN..MAX])"
            )
        shapes.setdefault(path, {})[index] = name
    return {"dims": dims, "shapes": shapes}
