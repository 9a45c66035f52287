"""What a run that lowers keeps between runs, under pytest's cache: an AOTInductor
package or ONNX model is loaded, not lowered again, where the program is the same;
what the fresh process gave is kept beside it; ``--cache-clear`` empties it all, and
Inductor's cache variable is the run's only while it runs."""

from __future__ import annotations

import os

import pytest
from casekit import write_cases
from lowerkit import FAKE_COMPILE, INDUCTOR_CACHE, LOADS_AS_MLP, MLP, counting_conftest
from lowerkit import torch_left_as_found as torch_left_as_found  # autouse


def test_an_unchanged_program_is_loaded_from_the_cache_not_compiled_again(
    project: pytest.Pytester,
) -> None:
    write_cases(project, MLP)
    project.makeconftest(
        FAKE_COMPILE.replace(
            "    with open(package_path",
            '    with open("compiles.txt", "a") as compiles:\n'
            '        compiles.write("compiled\\n")\n'
            "    import os\n"
            '    with open("inductor_cache.txt", "w") as where:\n'
            '        where.write(os.environ.get("TORCHINDUCTOR_CACHE_DIR", ""))\n'
            "    with open(package_path",
        )
        + LOADS_AS_MLP
    )
    compiles = project.path / "compiles.txt"
    cached = "*what an earlier run lowered from the same program, loaded from the cache*"
    packages = project.path / ".pytest_cache" / "d" / "exportcheck-lowering" / "packages"

    # The fresh process cannot load the fake package: each run fails on that, and says
    # how the package was had. A failing fresh process is not kept: it runs again.
    project.runpytest("--exportcheck").assert_outcomes(passed=1, failed=1)
    assert compiles.read_text() == "compiled\n"
    assert [path.name.split(".", 1)[1] for path in packages.iterdir()] == ["pt2"]
    # Inductor's caches are the run's while it runs, and the variable is taken back after.
    inductor = (project.path / "inductor_cache.txt").read_text()
    assert inductor == str(packages.parent / "inductor")
    assert INDUCTOR_CACHE not in os.environ

    again = project.runpytest("--exportcheck")
    again.assert_outcomes(passed=1, failed=1)
    again.stdout.fnmatch_lines([cached])
    assert "the fresh process's result as an earlier run's gave it" not in again.stdout.str()
    assert compiles.read_text() == "compiled\n"

    project.runpytest("--exportcheck", "--cache-clear").assert_outcomes(passed=1, failed=1)
    assert compiles.read_text() == "compiled\ncompiled\n"


def test_an_unchanged_program_is_not_exported_to_onnx_again(project: pytest.Pytester) -> None:
    # For real (the exporter takes seconds): the conftest counts its calls.
    pytest.importorskip("onnxruntime", reason="onnx is an optional lowering target")
    pytest.importorskip("onnxscript", reason="onnx is an optional lowering target")
    write_cases(project, MLP.replace("lower: [aoti]", "lower: [onnx]"))
    project.makeconftest(counting_conftest("torch.onnx", "export", "exports.txt"))
    exports = project.path / "exports.txt"
    project.runpytest("--exportcheck").assert_outcomes(passed=2)
    project.runpytest("--exportcheck").assert_outcomes(passed=2)
    assert exports.read_text() == "called\n"
    project.runpytest("--exportcheck", "--cache-clear").assert_outcomes(passed=2)
    assert exports.read_text() == "called\ncalled\n"


INPUT_MUTATION = """
cases:
  doubles_in_place:
    description: forward doubles its input in place, as ep.module() must too
    model: {target: mutation.py:DoublesInPlace}
    inputs: {args: [{shape: [2, 4]}]}
    checks: [parity]
    lower: [executorch]
"""


def test_an_executorch_program_from_the_cache_still_writes_its_input_back(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Which inputs the program mutates is kept beside the .pte: the cached program
    # writes the doubled input back as the lowered one did, and is not lowered again.
    pytest.importorskip(
        "executorch.extension.pybindings.portable_lib",
        reason="executorch is an optional lowering target",
    )
    exir = pytest.importorskip("executorch.exir")
    monkeypatch.setattr(exir, "to_edge", exir.to_edge)  # the conftest counts its calls
    (project.path / "cases" / "mutation.py").write_text(
        "import torch\n\n"
        "class DoublesInPlace(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        x.mul_(2)\n"
        "        return x + 1\n"
    )
    write_cases(project, INPUT_MUTATION)
    project.makeconftest(counting_conftest("executorch.exir", "to_edge", "lowerings.txt"))
    lowerings = project.path / "lowerings.txt"
    project.runpytest("--exportcheck").assert_outcomes(passed=2)
    project.runpytest("--exportcheck").assert_outcomes(passed=2)
    assert lowerings.read_text() == "called\n"
    kept = project.path / ".pytest_cache" / "d" / "exportcheck-lowering" / "packages"
    assert sorted(path.suffix for path in kept.glob("*.json")) == [".json"]


# A module the fresh process imports (a server's registrations), which writes a line
# each time it is imported: a run that reads a kept result imports nothing.
REGISTRATIONS = """
with open("imports.txt", "a") as log:
    log.write("imported\\n")
"""
SAVED = MLP.replace("lower: [aoti]", "lower: [saved]")
PASSED_FRESH = "*the fresh process's result as an earlier run's gave it*"


def test_a_kept_fresh_result_is_not_read_once_a_load_imports_module_changed(
    project: pytest.Pytester,
) -> None:
    # For real (a saved program loads in a fresh process in a second): the module is
    # named by its module name, found from the working directory as a server would.
    write_cases(
        project,
        SAVED.replace("lower: [saved]", "lower: [saved]\n    load_imports: [registrations]"),
    )
    module = project.path / "registrations.py"
    module.write_text(REGISTRATIONS)
    imports = project.path / "imports.txt"
    project.runpytest("--exportcheck").assert_outcomes(passed=2)
    project.runpytest("--exportcheck").assert_outcomes(passed=2)
    assert imports.read_text() == "imported\n"  # the second run read what the first kept

    # Broken: a server importing it fails, and so does the next run, cache kept, as
    # --cache-clear's does.
    module.write_text("raise RuntimeError('registrations broken')\n")
    broken = project.runpytest("--exportcheck")
    broken.assert_outcomes(passed=1, failed=1)
    failure = [
        "- [[]load[]] lowered to saved, loaded in a fresh process (torch, registrations): an "
        "import before the load raised, where this process did not:",
        "  importing registrations (load_imports): RuntimeError: registrations broken",
    ]
    broken.stdout.fnmatch_lines(failure)
    cleared = project.runpytest("--exportcheck", "--cache-clear")
    cleared.assert_outcomes(passed=1, failed=1)
    cleared.stdout.fnmatch_lines(failure)


def test_a_damaged_cache_entry_is_made_again_and_said_once(project: pytest.Pytester) -> None:
    # A package cut short (a full disk, a copy) and a fresh result of garbage: neither is
    # the model's failure nor the plugin's; each is made again, and the run says so once.
    write_cases(project, SAVED)
    project.runpytest("--exportcheck").assert_outcomes(passed=2)
    packages = project.path / ".pytest_cache" / "d" / "exportcheck-lowering" / "packages"
    (package,) = packages.glob("*.pt2")
    package.write_bytes(package.read_bytes()[:1000])
    (result,) = packages.glob("*.fresh-*.pt")
    result.write_bytes(b"garbage")
    again = project.runpytest("--exportcheck")
    again.assert_outcomes(passed=2)
    again.stdout.fnmatch_lines(
        [
            "*ExportCheckWarning: cases/main.yaml:2: the lowering cache's package and fresh "
            "process's result for this item did not hold the bytes that were kept (truncated "
            "or changed): removed, and made again*"
        ]
    )
    assert "BadZipFile" not in again.stdout.str()
    third = project.runpytest("--exportcheck")
    third.assert_outcomes(passed=2)
    assert "ExportCheckWarning" not in third.stdout.str()  # made again, and kept whole
