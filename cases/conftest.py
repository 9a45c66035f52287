"""The corpus imports one of its model files itself, as users' tests import theirs.

``models/verdicts.py`` registers a custom op when it runs, so a second execution in
this process raises: the cases in ``verdicts.yaml`` pass only if the plugin uses the
module imported here instead of executing the file again.
"""

import importlib.util
import sys
from pathlib import Path

_PATH = Path(__file__).parent / "models" / "verdicts.py"
if "corpus_verdicts" not in sys.modules:
    _spec = importlib.util.spec_from_file_location("corpus_verdicts", _PATH)
    assert _spec is not None and _spec.loader is not None
    _module = importlib.util.module_from_spec(_spec)
    sys.modules["corpus_verdicts"] = _module
    _spec.loader.exec_module(_module)
