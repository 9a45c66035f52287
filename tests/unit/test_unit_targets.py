"""resolve_target: 'file.py:Attr' (relative to the case file) or 'pkg.mod:attr'."""

import pickle
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_exportcheck.model.targets import TargetError, resolve_callable, resolve_target

# Importable targets never look at the base dir.
UNUSED_BASE_DIR = Path("/nonexistent-base-dir")

MODEL_FILE = """
import torch

SCALE = 3


class Model(torch.nn.Module):
    class Config:
        size = 4

    def forward(self, x):
        return x * SCALE


def make(n):
    return n + 1
"""


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


@pytest.fixture
def model_dir(tmp_path):
    write(tmp_path / "models" / "net.py", MODEL_FILE)
    return tmp_path


# --- file targets -------------------------------------------------------------------------------


def test_file_target_is_resolved_relative_to_the_base_dir(model_dir):
    model_class = resolve_target("models/net.py:Model", model_dir)

    assert model_class.__name__ == "Model"
    assert model_class.__module__.startswith("_exportcheck_models.net_")


def test_file_target_may_name_a_nested_attribute(model_dir):
    assert resolve_target("models/net.py:Model.Config", model_dir).size == 4


def test_file_target_may_name_a_function(model_dir):
    assert resolve_callable("models/net.py:make", model_dir)(1) == 2


def test_absolute_file_target_ignores_the_base_dir(model_dir, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    target = f"{model_dir / 'models' / 'net.py'}:make"

    assert resolve_callable(target, elsewhere)(41) == 42


def test_the_same_file_imported_twice_is_the_same_module(model_dir):
    first = resolve_target("models/net.py:Model", model_dir)
    second = resolve_target("models/../models/net.py:Model", model_dir)
    third = resolve_target("net.py:Model", model_dir / "models")

    assert first is second is third
    assert sys.modules[first.__module__].Model is first


def test_files_with_the_same_name_in_different_dirs_are_different_modules(tmp_path):
    write(tmp_path / "a" / "m.py", "VALUE = 'a'\n")
    write(tmp_path / "b" / "m.py", "VALUE = 'b'\n")

    assert resolve_target("a/m.py:VALUE", tmp_path) == "a"
    assert resolve_target("b/m.py:VALUE", tmp_path) == "b"


def test_file_target_does_not_put_its_directory_on_sys_path(model_dir):
    resolve_target("models/net.py:Model", model_dir)

    assert str(model_dir / "models") not in sys.path
    assert "net" not in sys.modules


def test_classes_from_file_targets_are_picklable(model_dir):
    model = resolve_target("models/net.py:Model", model_dir)()

    restored = pickle.loads(pickle.dumps(model))

    assert type(restored) is type(model)


# --- importable targets -------------------------------------------------------------------------


def test_importable_target_resolves_a_module_attribute():
    import torch

    assert resolve_target("torch.nn:Linear", UNUSED_BASE_DIR) is torch.nn.Linear


def test_importable_target_may_name_a_nested_attribute():
    import collections

    assert resolve_target("collections:OrderedDict.fromkeys", UNUSED_BASE_DIR) == (
        collections.OrderedDict.fromkeys
    )


# --- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["no_colon", ":Attr", "file.py:"])
def test_malformed_target_says_how_a_target_looks(target, tmp_path):
    with pytest.raises(TargetError) as info:
        resolve_target(target, tmp_path)

    assert str(info.value) == (f"target {target!r} must look like 'file.py:Attr' or 'pkg.mod:attr'")


def test_missing_file_names_the_resolved_path(tmp_path):
    with pytest.raises(TargetError) as info:
        resolve_target("models/nope.py:Model", tmp_path)

    assert str(info.value) == f"model file {tmp_path / 'models' / 'nope.py'} does not exist"


def test_missing_module_names_the_module_and_the_import_error():
    with pytest.raises(TargetError) as info:
        resolve_target("exportcheck_no_such_module.sub:thing", UNUSED_BASE_DIR)

    message = str(info.value)
    assert message.startswith(
        "cannot import 'exportcheck_no_such_module.sub': ModuleNotFoundError:"
    )
    assert "No module named 'exportcheck_no_such_module'" in message


def test_missing_attribute_of_a_file_names_the_attribute_and_the_likely_one(model_dir):
    with pytest.raises(TargetError) as info:
        resolve_target("models/net.py:Modle", model_dir)

    assert str(info.value) == (
        "target 'models/net.py:Modle': 'models/net.py' has no attribute 'Modle'; "
        "did you mean 'Model'?"
    )


def test_a_wrong_case_is_a_likely_one_too(model_dir):
    with pytest.raises(TargetError, match=r"has no attribute 'model'; did you mean 'Model'\?$"):
        resolve_target("models/net.py:model", model_dir)


def test_nothing_alike_suggests_nothing(model_dir):
    with pytest.raises(TargetError, match=r"has no attribute 'Transformer'$"):
        resolve_target("models/net.py:Transformer", model_dir)


def test_missing_nested_attribute_names_the_part_that_is_missing(model_dir):
    with pytest.raises(TargetError, match=r"'Model' has no attribute 'Nope'$"):
        resolve_target("models/net.py:Model.Nope", model_dir)


def test_missing_attribute_of_a_module_names_the_module():
    with pytest.raises(TargetError) as info:
        resolve_target("json:nope", UNUSED_BASE_DIR)

    assert str(info.value) == "target 'json:nope': 'json' has no attribute 'nope'"


def test_non_callable_target_is_refused_by_resolve_callable(model_dir):
    assert resolve_target("models/net.py:SCALE", model_dir) == 3
    with pytest.raises(TargetError) as info:
        resolve_callable("models/net.py:SCALE", model_dir)

    assert str(info.value) == "target 'models/net.py:SCALE' is a int, not callable"


def test_model_file_that_raises_on_import_names_the_exception(tmp_path):
    path = write(tmp_path / "broken.py", "import torch\nWIDTH = 1 / 0\n")

    with pytest.raises(TargetError) as info:
        resolve_target("broken.py:WIDTH", tmp_path)

    assert str(info.value) == f"importing {path} raised ZeroDivisionError: division by zero"
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_model_file_with_a_syntax_error_names_the_exception(tmp_path):
    write(tmp_path / "bad_syntax.py", "def broken(:\n")

    with pytest.raises(TargetError, match="raised SyntaxError"):
        resolve_target("bad_syntax.py:broken", tmp_path)


def test_a_failed_import_is_not_cached(tmp_path):
    path = write(tmp_path / "flaky.py", "raise RuntimeError('not yet')\n")
    with pytest.raises(TargetError, match="RuntimeError: not yet"):
        resolve_target("flaky.py:VALUE", tmp_path)

    write(path, "VALUE = 'fixed'\n")

    assert resolve_target("flaky.py:VALUE", tmp_path) == "fixed"


def test_model_file_calling_sys_exit_is_the_files_error(tmp_path):
    # Not pytest's own exit: the run goes on, and the case says what its file did.
    write(tmp_path / "exits.py", "import sys\nsys.exit(3)\n")

    with pytest.raises(TargetError, match=r"exits\.py raised SystemExit: 3"):
        resolve_target("exits.py:x", tmp_path)


def test_importable_module_that_raises_on_import_names_the_exception(tmp_path, monkeypatch):
    write(tmp_path / "exportcheck_unit_boom.py", "raise ValueError('bad config')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "exportcheck_unit_boom", raising=False)

    with pytest.raises(TargetError, match="ValueError: bad config"):
        resolve_target("exportcheck_unit_boom:thing", tmp_path)


def test_a_file_a_test_already_imported_is_reused_not_run_again(tmp_path, monkeypatch):
    counter = f"exportcheck_runs_{tmp_path.name}"
    write(
        tmp_path / "usermodels.py",
        f"import sys\nsys.modules.setdefault({counter!r}, [])\n"
        f"sys.modules[{counter!r}].append(1)\nclass Net:\n    pass\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import usermodels  # what a conftest or a test of the user's does

    try:
        net = resolve_target("usermodels.py:Net", tmp_path)
        assert net is usermodels.Net  # isinstance against the user's class holds
        assert sys.modules[counter] == [1]  # executed once
    finally:
        del sys.modules["usermodels"], sys.modules[counter]


def test_a_file_importable_by_name_is_imported_under_that_name(tmp_path, monkeypatch):
    # With the rootdir on sys.path (pytest's `pythonpath = .`), a later
    # `import pkg.usernet` of the user's must find the module the case used.
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "usernet.py", "class Net:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        net = resolve_target("usernet.py:Net", tmp_path / "pkg")
        import pkg.usernet

        assert net is pkg.usernet.Net
    finally:
        sys.modules.pop("pkg.usernet", None)
        sys.modules.pop("pkg", None)
