"""A model given from Python (``check_model``): loaded from a file beside its script.

A YAML case's model is built from its ``target`` (``source.py``); a given model is a
live object, with weights no target describes. Its caller's objects, as given, are
pickled (``torch.save`` of ``{"model": ..., "args": ..., "kwargs": ...}``, by
``api/reproduce.py``) to ``<call>-<case>.pt`` beside the scripts (one file for all
of the case's scripts: ``script.saved_file``), and each script's
``build_model()`` / ``build_inputs()`` load them back with ``torch.load``, which imports
the user's own modules that define their classes: the script puts their directories
on ``sys.path``. Everything else in the script is a YAML item's (``script.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

# What a given model's inputs at other sizes would need: a drawing rule it has none of.
SHAPES_NOT_WRITTEN = (
    "the shapes finding of a model given from Python is not written yet (its inputs "
    "at other sizes are drawn from a case's input specs)"
)


class NotSaved(ValueError):
    """The given model or inputs cannot be written for a script to load, and why."""


@dataclass(frozen=True)
class Given:
    """A ``check_model`` call's model, as its scripts load it."""

    call: str  # names the call's scripts apart from another call's of the same case name
    paths: tuple[str, ...] = ()  # where the classes the pickle names import from


def model_source(saved: str) -> str:
    """The body of ``build_model()``: the model as the caller gave it, on the CPU."""
    return "\n".join(
        [
            "# the model as the caller gave check_model() it, pickled beside this script",
            f"return torch.load(given_file({saved!r}), weights_only=False, "
            'map_location="cpu")["model"]',
        ]
    )


def inputs_source(saved: str) -> str:
    """The body of ``build_inputs()``: the inputs as the caller gave them, on the CPU."""
    return "\n".join(
        [
            f'given = torch.load(given_file({saved!r}), weights_only=False, map_location="cpu")',
            'return tuple(given["args"]), dict(given["kwargs"])',
        ]
    )


HELPER = '''
def given_file(name):
    """A file beside this script."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
'''
