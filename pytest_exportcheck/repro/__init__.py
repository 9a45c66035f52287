"""Plain-torch reproductions of a finding: a standalone script per failed item, and its run.

A reproduction imports torch and the user's own model and input code only (never this
plugin, never pytest), builds the model and inputs as the item did (``source.py``),
makes the same capture and programs (``programs.py``), performs the one comparison the
finding is about in torch's own terms (``kinds.py`` picks the kind; each kind's
``main()`` is a module of its own: ``shapes_kind.py``, ``signature_kind.py``,
``hierarchy_*.py``, ``mode_kind.py``, ``moved_kind.py``, ``loaded_kind.py``,
``lowered_kind.py`` with ``lowered_sizes.py``), and exits 1 printing the finding
when it reproduces, 0 printing "not reproduced" when not. A model given from Python
(``check_model``, the fixture) is loaded from the pickle saved beside its script
(``given.py``). ``script.py`` puts one
together with its header and writes it; ``confirm.py`` runs it where torch alone is
imported (a fork of ``containment/fork_server.py``), bounded in time and memory, and
reads its outcome.

Pure text and processes: no torch import here. May import ``spec/``, ``containment/``
(limits, exit statuses), ``recordings/`` (atomic writes) and ``items/item_names.py``
(how a node id names an item; pure, as ``parallel/`` reads it too).
"""
