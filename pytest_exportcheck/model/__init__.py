"""The eager side: building a case's model and inputs, and running it as the reference.

Targets and building (``targets.py``, ``build.py``), the subject (pristine model and
inputs on a device, ``subject.py``), private copies (``isolation.py``,
``copy_on_write.py``, ``frozen_values.py``, ``resharing.py``), stepped runs, forward
defaults, call counts, portability across devices, devices themselves, and whether
eager is fit to be the reference (``soundness.py``).

May import: ``containment/``, ``spec/`` and torch.
"""
