"""Collection and the item loop, for pytest and the Python API alike.

Case file -> case node (``collect.py``) -> items (``check_items.py``, ``loaded_items.py``),
how one item runs (``item_run.py``),
every item of one case in-process (``case_run.py``), the per-process session with its
caches (``session.py``), item names, option values checked at configure time, the
hand-off of capture summaries between xdist workers, and a failure's plain-torch
reproduction written and run (``reproductions.py``).

May import every folder below it: ``checks/``, ``capture/``, ``model/``, ``containment/``,
``recordings/``, ``parallel/``, ``repro/``, ``spec/``.
"""
