"""Programs saved by one torch for a later torch to load (``--exportcheck-save-programs``,
``--exportcheck-load-programs``): the directory's layout, what is written, what is read.

``store.py`` writes and lists saved programs; ``summary.py`` reads what the loading
runs concluded, for the versions table. The check that loads one is
``checks/loaded.py``, its items ``items/loaded_items.py``.

May import: ``model/``, ``containment/``, ``recordings/``, ``spec/`` and torch (lazily).
"""
