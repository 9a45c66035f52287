"""``check_model(repro=DIR)`` and the ``exportcheck`` fixture under ``--exportcheck-repro``.

A model given from Python has no target to rebuild it from: its failure's script loads
the caller's model and inputs, as given, from the ``.pt`` written beside it, and
``torch.load`` imports the user's own module that defines the class. One model, broken
on purpose (a count kept in a Python int: the program bakes it, parity fails at step
2), lives in a module file; its script shows the finding, then, the module fixed, not.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from reprokit import BAKED, run_scripts
from torch import nn

from pytest_exportcheck import ExportCheckFailed, check_model

BROKEN = "import torch\nfrom torch import nn\n\n" + BAKED
# The fix a user makes in the module: the pickled model (its `calls` too) loads unchanged.
FIXED = BROKEN.replace("return self.lin(x) * self.calls", "return self.lin(x)")
PARITY = {"checks": ["parity"], "expect": {"parity": {"steps": 2}}}


def pickle_of(script: Path) -> Path:
    """The one pickle of a call's case, beside each of its scripts."""
    call_and_case, _ = script.name.split("-Baked-")
    return script.with_name(f"{call_and_case}-Baked.pt")


@pytest.fixture
def source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``src/baked_api.py``, importable here as the user's own module is."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "baked_api.py").write_text(BROKEN)
    monkeypatch.syspath_prepend(tmp_path / "src")
    yield tmp_path / "src" / "baked_api.py"
    sys.modules.pop("baked_api", None)


def test_a_given_models_failure_is_reproduced_from_its_pickle(source: Path, tmp_path: Path) -> None:
    from baked_api import Baked

    model, x = Baked(), torch.randn(2, 4)
    with pytest.raises(ExportCheckFailed) as failed:
        check_model(model, args=(x,), repro=tmp_path / "repro", **PARITY)
    item = failed.value.report["parity[export-cpu]"]
    script = Path(item.repro or "")
    assert script.parent == tmp_path / "repro" and script.name.endswith(
        "-Baked-parity-export-cpu.py"
    ), script
    assert item.repro_outcome == "reproduced"
    assert f"; reproduced in plain torch: {script}" in item.headline
    assert item.message.endswith(f"reproduced in plain torch: {script}")
    assert f"reproduced in plain torch: {script}" in str(failed.value).splitlines()[0]
    assert json.loads(json.dumps(failed.value.report.to_json()))["items"][0]["repro"] == str(script)
    # Beside it, the caller's objects as given (never run: the count is still 0).
    saved = torch.load(pickle_of(script), weights_only=False)
    assert type(saved["model"]).__name__ == "Baked" and saved["model"].calls == 0
    assert torch.equal(saved["args"][0], x) and saved["kwargs"] == {}
    text = script.read_text()
    assert str(source.parent) in text  # where torch.load finds the class
    # The module fixed, in a copy: the same script and pickle, pointed at the fixed module.
    (tmp_path / "fixed" / "src").mkdir(parents=True)
    (tmp_path / "fixed" / "src" / source.name).write_text(FIXED)
    fixed = tmp_path / "fixed" / "fixed.py"
    fixed.write_text(text.replace(str(source.parent), str(tmp_path / "fixed" / "src")))
    fixed.with_name(pickle_of(script).name).write_bytes(pickle_of(script).read_bytes())
    ran = run_scripts(tmp_path, [script, fixed])
    status, printed = ran[script.name]
    assert status == 1 and "reproduced: ep.module(), step 2/2" in printed, printed
    status, printed = ran["fixed.py"]
    assert status == 0 and "not reproduced" in printed, printed


def test_a_model_pickle_cannot_hold_gets_no_script_and_says_why(tmp_path: Path) -> None:
    class Local(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.calls = 0

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.calls += 1
            return self.lin(x) * self.calls

    with pytest.raises(ExportCheckFailed) as failed:
        check_model(Local(), args=(torch.randn(2, 4),), repro=tmp_path / "repro", **PARITY)
    item = failed.value.report["parity[export-cpu]"]
    assert item.repro is None
    assert item.repro_outcome is not None and item.repro_outcome.startswith(
        "no plain reproduction yet: the model's class "
        "test_a_model_pickle_cannot_hold_gets_no_script_and_says_why.<locals>.Local cannot "
        "be pickled: it is defined in a function (AttributeError: Can't pickle local object"
    ), item.repro_outcome
    assert "reproduced in plain torch" not in item.message
    assert not (tmp_path / "repro").exists() or not list((tmp_path / "repro").iterdir())


def test_repro_run_false_only_writes_the_script(source: Path, tmp_path: Path) -> None:
    from baked_api import Baked

    with pytest.raises(ExportCheckFailed) as failed:
        check_model(
            Baked(), args=(torch.randn(2, 4),), repro=tmp_path / "r", repro_run=False,
            checks=["parity", "mutation"], expect={"parity": {"steps": 2}},
        )  # fmt: skip
    scripts = []
    for check in ("parity", "mutation"):
        item = failed.value.report[f"{check}[export-cpu]"]
        assert item.repro_outcome == "not run" and Path(item.repro or "").is_file()
        scripts.append(Path(item.repro or ""))
    # Both checks' scripts load one pickle: a large model is written once.
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == sorted(
        [pickle_of(scripts[0]).name, *(s.name for s in scripts)]
    )


TEST = """
import torch
from baked_fixture import Baked


def test_counter(exportcheck):
    exportcheck(Baked(), args=(torch.randn(2, 4),), checks=["parity"],
                expect={"parity": {"steps": 2}})
"""


def test_the_fixture_writes_scripts_under_the_runs_repro_dir(pytester: pytest.Pytester) -> None:
    (pytester.path / "baked_fixture.py").write_text(BROKEN)
    pytester.makepyfile(test_model=TEST)
    result = pytester.runpytest(
        "--exportcheck", "-p", "no:cacheprovider", "test_model.py",
        "--exportcheck-repro=repro", "--exportcheck-report=r.json",
    )  # fmt: skip
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*; reproduced in plain torch: *test_counter-*-Baked-parity*",
            "exportcheck reproductions: 1 scripts under *; of 1 failures, 1 reproduced in plain "
            "torch, 0 not reproduced outside the plugin*",
        ]
    )
    doc = json.loads((pytester.path / "r.json").read_text())
    (item,) = [i for i in doc["items"] if i["nodeid"].endswith("::Baked::parity[export-cpu]")]
    script = Path(item["repro"])
    assert script.parent == pytester.path / "repro", item
    assert script.name.startswith("test_counter-") and item["repro_outcome"] == "reproduced"
    assert pickle_of(script).is_file()
