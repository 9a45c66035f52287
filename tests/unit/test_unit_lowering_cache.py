"""The lowering cache (``artifact_cache.py``, ``fresh_kept.py``): an entry whose bytes are
not those that were kept is a miss, removed and told once; a kept fresh-process result
is read only while every file it depends on is as it was."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from pytest_exportcheck.lowering import artifact_cache
from pytest_exportcheck.lowering.artifact_cache import PackageCache
from pytest_exportcheck.lowering.fresh_kept import keep, read_kept
from pytest_exportcheck.lowering.fresh_process import FreshRun

KEY = "ab" * 32


def test_a_truncated_or_changed_entry_is_a_miss_removed_and_told_once(tmp_path: Path) -> None:
    cache = PackageCache(tmp_path)
    made = tmp_path / "made.pt2"
    made.write_bytes(b"package bytes" * 100)
    kept = cache.put(KEY, made)
    assert cache.get(KEY) == kept and kept.read_bytes() == made.read_bytes()
    kept.write_bytes(made.read_bytes()[:50])  # a copy cut short
    assert cache.get(KEY) is None and not kept.exists()
    assert cache.dropped == [kept.name]
    assert cache.get(KEY) is None and cache.dropped == [kept.name]  # told once
    assert cache.get(KEY, ".onnx") is None  # another kind under the same key: its own entry


def test_a_kept_result_is_read_while_its_files_are_unchanged(tmp_path: Path) -> None:
    cache = PackageCache(tmp_path / "cache")
    module = tmp_path / "registrations.py"
    module.write_text("X = 1\n")
    outputs = [([torch.ones(2)], "TreeSpec(...)")]
    keep(cache, KEY, outputs, [str(module)])
    read = read_kept(cache, KEY)
    assert read is not None and torch.equal(read[0][0][0], torch.ones(2))
    module.write_text("raise RuntimeError('broken')\n")  # a server would fail to import it
    assert read_kept(cache, KEY) is None
    assert cache.dropped == []  # stale, not damaged: nothing to tell
    assert cache.get(KEY, ".pt") is None  # removed: the next run's result replaces it


def test_a_kept_result_that_is_garbage_is_a_miss_and_told(tmp_path: Path) -> None:
    with artifact_cache.kept_under(tmp_path) as cache:
        garbage = tmp_path / "garbage.pt"
        torch.save({"outputs": [1, 2], "files": {}}, garbage)  # loads, but is no result
        kept = cache.put(KEY, garbage, ".pt")
        assert read_kept(cache, KEY) is None and not kept.exists()
        assert artifact_cache.take_dropped() == [kept.name]
        assert artifact_cache.take_dropped() == []


def test_a_file_a_load_imports_module_imports_is_part_of_the_kept_results_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # For real: a fresh process loads a saved program after importing a project file
    # that imports its sibling; the result is kept, and not read once the sibling changed.
    from pytest_exportcheck.lowering.fresh_process import run_in_fresh_process
    from pytest_exportcheck.model.program_files import save_program

    monkeypatch.chdir(tmp_path)
    (tmp_path / "registrations.py").write_text("import helper\n")
    (tmp_path / "helper.py").write_text("X = 1\n")
    torch.manual_seed(0)
    program = torch.export.export(torch.nn.Linear(4, 2), (torch.ones(1, 4),))
    package = tmp_path / "program.pt2"
    save_program(program, package)
    with artifact_cache.kept_under(tmp_path / "cache"):

        def fresh(directory: str) -> FreshRun:
            (tmp_path / directory).mkdir()
            return run_in_fresh_process(
                package, ((torch.ones(1, 4),), {}), loader="saved",
                imports=(str(tmp_path / "registrations.py"),), steps=1, seed=0,
                directory=tmp_path / directory, kept=True,
            )  # fmt: skip

        first, second = fresh("first"), fresh("second")
        assert first.outputs is not None and not first.from_cache
        assert second.from_cache
        (tmp_path / "helper.py").write_text("raise RuntimeError('helper broken')\n")
        broken = fresh("broken")
        assert not broken.from_cache and broken.outputs is None
        assert broken.error is not None and "RuntimeError: helper broken" in broken.error


def test_a_compile_that_adds_to_its_settings_leaves_the_next_programs_key_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # aoti_compile_and_package adds "aot_inductor.package": True to the inductor_configs
    # it is given (torch 2.13). Given the shared settings, the key of every program after
    # a process's first compile was another than the first's: a package kept by one run
    # was compiled again by the next wherever the order of items differed.
    import torch._inductor

    from pytest_exportcheck.lowering.aoti import AOTInductor
    from pytest_exportcheck.lowering.target import SAME_RANDOM_NUMBERS

    compiled: list[dict[str, object]] = []

    def compile_like_torch(program: object, package_path: str, inductor_configs: dict) -> str:
        inductor_configs["aot_inductor.package"] = True
        compiled.append(inductor_configs)
        Path(package_path).write_bytes(b"package")
        return package_path

    monkeypatch.setattr(torch._inductor, "aoti_compile_and_package", compile_like_torch)
    monkeypatch.setattr(torch._inductor, "aoti_load_package", lambda path: path)
    torch.manual_seed(0)
    program = torch.export.export(torch.nn.Linear(4, 2), (torch.ones(1, 4),))
    with artifact_cache.kept_under(tmp_path / "cache", inductor=False):
        first = AOTInductor().lower(program, tmp_path)
        second = AOTInductor().lower(program, tmp_path)
    assert (first.from_cache, second.from_cache) == (False, True)
    assert len(compiled) == 1 and dict(SAME_RANDOM_NUMBERS) == {"fallback_random": True}
