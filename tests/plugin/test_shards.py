"""A run split across CI jobs with pytest-split merges into the report one run gives."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from pytest_exportcheck.reports import merge
from pytest_exportcheck.spec.compat import torch_minor

CORPUS = Path(__file__).parents[2] / "cases"
SAME = ("outcome", "stage", "message", "reason", "case", "check", "capture", "device")

pytest.importorskip("pytest_split", reason="pytest-split is a test dependency")


# Two of basics.yaml's five cases (50 of its 125 items): what sharding and merging do
# is the same for any items; each case costs its captures once more per run.
KEPT = ("mlp", "dropout_eval")


@pytest.fixture
def bundled(pytester: pytest.Pytester) -> pytest.Pytester:
    """The bundled basics.yaml's cases :data:`KEPT`, with their recording and models, in
    a project of its own."""
    cases = pytester.mkdir("cases")
    text = yaml.safe_load((CORPUS / "basics.yaml").read_text())
    text["cases"] = {name: text["cases"][name] for name in KEPT}
    (cases / "basics.yaml").write_text(yaml.safe_dump(text, sort_keys=False))
    recording = json.loads((CORPUS / "basics.recorded.json").read_text())
    for observed in recording["torch"].values():
        for name in set(observed) - set(KEPT):
            del observed[name]
    (cases / "basics.recorded.json").write_text(json.dumps(recording, indent=1))
    shutil.copytree(CORPUS / "models", cases / "models", ignore=shutil.ignore_patterns("__py*"))
    return pytester


def report_items(path: Path) -> dict[str, tuple[object, ...]]:
    doc = json.loads(path.read_text())
    return {item["nodeid"]: tuple(item[key] for key in SAME) for item in doc["items"]}


def test_three_shards_merge_into_the_unsplit_runs_report_item_by_item(
    bundled: pytest.Pytester,
) -> None:
    common = ["--exportcheck", "-p", "no:cacheprovider", "-p", "no:xdist"]
    whole = bundled.runpytest(*common, "--exportcheck-report", "whole.json")
    assert whole.ret == 0
    shards = []
    for group in (1, 2, 3):
        shard = f"shard-{group}.json"
        split = ["--splits", "3", "--group", str(group)]
        assert bundled.runpytest(*common, *split, "--exportcheck-report", shard).ret == 0
        shards.append(bundled.path / shard)
    sizes = [len(report_items(path)) for path in shards]
    assert all(sizes) and sum(sizes) == len(report_items(bundled.path / "whole.json"))
    assert merge.main(shards, bundled.path / "merged.json") == 0
    assert report_items(bundled.path / "merged.json") == report_items(bundled.path / "whole.json")
    assert (bundled.path / "merged.md").read_text().startswith("#")
    # The shards' observations together rewrite the recording as the whole run holds it.
    recording = bundled.path / "cases" / "basics.recorded.json"
    recorded = json.loads(recording.read_text())["torch"]
    recording.unlink()
    merged = json.loads((bundled.path / "merged.json").read_text())
    merge.update_recordings(merged, bundled.path)
    minor = torch_minor()
    assert json.loads(recording.read_text())["torch"] == {minor: recorded[minor]}


def write_report(path: Path, **run: object) -> Path:
    item = {"nodeid": f"cases/a.yaml::mlp::parity[export-{path.stem}]", "outcome": "passed"}
    doc = {"format": 1, "run": {"torch": "2.13.0", "cases": "abc", **run}, "items": [item]}
    path.write_text(json.dumps(doc))
    return path


def test_shards_of_different_torch_versions_are_refused(tmp_path: Path) -> None:
    first = write_report(tmp_path / "cpu.json")
    second = write_report(tmp_path / "meta.json", torch="2.12.1")
    with pytest.raises(merge.MergeError, match=r"different torch versions .*cpu.json: 2.13.0"):
        merge.merge([first, second])


def test_shards_of_different_case_files_are_refused(tmp_path: Path) -> None:
    first = write_report(tmp_path / "cpu.json")
    second = write_report(tmp_path / "meta.json", cases="def")
    with pytest.raises(merge.MergeError, match=r"different case files \(run.cases differs\)"):
        merge.merge([first, second])


def test_overlapping_shards_are_refused(tmp_path: Path) -> None:
    first = write_report(tmp_path / "cpu.json")
    with pytest.raises(merge.MergeError, match=r"is in both .*cpu.json and .*cpu.json: the shards"):
        merge.merge([first, first])


@pytest.mark.quick
def test_the_merged_status_fails_when_a_shard_failed(tmp_path: Path) -> None:
    passed = write_report(tmp_path / "cpu.json", exitstatus=0)
    failed = write_report(tmp_path / "meta.json", exitstatus=1)
    doc = json.loads(failed.read_text())
    doc["items"][0]["outcome"] = "failed"
    failed.write_text(json.dumps(doc))
    assert merge.main([passed, failed], tmp_path / "merged.json") == 1
    assert json.loads((tmp_path / "merged.json").read_text())["totals"]["failed"] == 1


def test_in_a_github_job_the_merge_appends_its_report_to_the_job_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_exportcheck.__main__ import main

    shards = [write_report(tmp_path / "cpu.json"), write_report(tmp_path / "meta.json")]
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    args = ["merge", *map(str, shards), "-o", str(tmp_path / "merged.json")]
    assert main(args) == 0
    assert summary.read_text() == (tmp_path / "merged.md").read_text() + "\n"
    assert f"job summary: appended to {summary}" in capsys.readouterr().out
    summary.unlink()
    assert main([*args, "--github", "off"]) == 0
    assert not summary.exists()
