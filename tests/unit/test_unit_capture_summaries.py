"""Captures' consistency summaries: what one worker hands on, another compares."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from casekit import load_case

from pytest_exportcheck.capture import capture
from pytest_exportcheck.checks.consistency import CaptureSummary, summarize
from pytest_exportcheck.checks.signature import check_signature
from pytest_exportcheck.containment.failures import CaptureError, Failed
from pytest_exportcheck.items.capture_summaries import LeftOut, SummaryHandoff, hand_on
from pytest_exportcheck.items.item_run import compare_captures
from pytest_exportcheck.model.subject import Subject
from pytest_exportcheck.spec import Case

CASE = """
cases:
  tied:
    description: head tied to the embedding
    model: {target: models.py:Tied}
    inputs: {args: [{shape: [2, 5], dtype: int64, low: 0, high: 16}]}
    captures: [export, export-strict]
"""
KEY = ("cases/a.yaml", "tied", "cpu")


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> Case:
    return load_case(tmp_path_factory.mktemp("summaries"), CASE)


class Captures:
    """A :class:`item_run.Source` of one subject; counts what it captures."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self._subject = Subject(case, "cpu")
        self.captured: list[str] = []

    def subject(self, device: str) -> Subject:
        return self._subject

    def capture(self, device: str, name: str) -> object:
        self.captured.append(name)
        return capture(name, self._subject)


def test_a_summary_survives_the_handoff(case: Case, tmp_path: Path) -> None:
    summary = summarize(case, Captures(case).capture("cpu", "export"))
    handoff = SummaryHandoff(tmp_path)
    assert handoff.write((*KEY, "export"), summary)

    read = SummaryHandoff(tmp_path).read((*KEY, "export"))  # another worker's handoff

    assert isinstance(read, CaptureSummary)
    assert read.lifted == summary.lifted
    assert read.user_inputs == summary.user_inputs
    assert torch.equal(read.output, summary.output)


def test_a_missing_or_foreign_summary_reads_as_none(tmp_path: Path) -> None:
    handoff = SummaryHandoff(tmp_path)
    assert handoff.read((*KEY, "export")) is None
    handoff.path((*KEY, "export")).write_bytes(b"half a file")
    assert handoff.read((*KEY, "export")) is None


def test_an_output_that_cannot_be_pickled_is_not_handed_on(tmp_path: Path) -> None:
    unpicklable = CaptureSummary({}, set(), [], False, output=lambda: None)
    handoff = SummaryHandoff(tmp_path)
    assert not handoff.write((*KEY, "export"), unpicklable)
    assert handoff.read((*KEY, "export")) is None
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind


def test_a_capture_that_failed_is_handed_on_as_left_out_in_the_item_s_words(
    case: Case, tmp_path: Path
) -> None:
    error = CaptureError("torch.export.export raised ValueError: boom")
    handoff = SummaryHandoff(tmp_path)
    hand_on(handoff, case, (*KEY, "export"), Failed(error, "main.yaml::tied::signature"))
    left_out = handoff.read((*KEY, "export"))
    assert isinstance(left_out, LeftOut)
    assert left_out.why == error.as_dependency("main.yaml::tied::signature").headline


def test_consistency_from_handed_on_summaries_captures_nothing_and_says_the_same(
    case: Case,
) -> None:
    here = Captures(case)
    expected = compare_captures(case, "cpu", here)
    assert here.captured == ["export", "export-strict"]
    summaries = {
        name: summarize(case, Captures(case).capture("cpu", name)) for name in case.captures
    }

    elsewhere = Captures(case)
    findings = compare_captures(case, "cpu", elsewhere, summaries.get)

    assert elsewhere.captured == []
    assert findings == expected
    assert "lifted: emb.weight" in findings[0]  # non-strict lifts each name of the tie


def test_a_summary_missing_is_captured_where_the_item_runs(case: Case) -> None:
    export = summarize(case, Captures(case).capture("cpu", "export"))
    here = Captures(case)
    findings = compare_captures(case, "cpu", here, {"export": export}.get)
    assert here.captured == ["export-strict"]
    assert findings == compare_captures(case, "cpu", Captures(case))


def test_a_left_out_capture_is_named_as_the_worker_that_met_it_said(case: Case) -> None:
    export = summarize(case, Captures(case).capture("cpu", "export"))
    handed = {"export": export, "export-strict": LeftOut("[capture: ValueError] boom")}
    with pytest.raises(Exception, match=r"fewer than two captures .*export-strict: \[capture"):
        compare_captures(case, "cpu", Captures(case), handed.get)


COUNTER = """
cases:
  counter:
    description: a counter buffer
    model: {target: models.py:Counter}
    inputs: {args: [{shape: [2, 4]}]}
    captures: [export, dynamo-legacy]
"""


def test_summarizing_leaves_the_capture_s_state_as_made(tmp_path: Path) -> None:
    """Under xdist the summary is made first; a Dynamo graph module runs on the record's
    own tensors, which the signature check then compares with eager's."""
    counter = load_case(tmp_path, COUNTER)
    record = capture("dynamo-legacy", Subject(counter, "cpu"))
    summarize(counter, record)
    assert check_signature(counter, record) == []
