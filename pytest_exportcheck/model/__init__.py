"""The eager side: building a case's model and inputs, and running it as the reference.

Targets and building (``targets.py``, ``build.py``), the subject (pristine model and
inputs on a device, ``subject.py``), private copies (``isolation.py``,
``copy_on_write.py``, ``frozen_values.py``, ``resharing.py``) and whether a model's
own deep copy is one (``independence.py``), how deep outputs nest where a
``RecursionError`` needs naming (``nesting.py``), stepped runs, forward
defaults, call counts, portability across devices, devices themselves, and whether
eager is fit to be the reference (``soundness.py``). Also the one place the plugin
saves and loads programs (``program_files.py``: ``torch.export.save`` / ``load``
with torch's log records kept from every handler, ``torch_logs.py``), which the
captures, the lowering targets and the saved programs across versions share.

May import: ``containment/``, ``spec/`` and torch.
"""
