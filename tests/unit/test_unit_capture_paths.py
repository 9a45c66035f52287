"""Every capture path normalizes to the same mapping, verified against the eager model.

One nested model — an embedding tied to the LM head, a block registered under
two names, nested blocks — captured on every path: each path names and orders
its placeholders its own way, and after normalization they all lift the same
tensors (by alias group) and take the same user inputs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from casekit import MODELS, capture_params

from pytest_exportcheck.capture import PATHS, capture
from pytest_exportcheck.capture.dynamo import _legacy_spelling, _source_spelling
from pytest_exportcheck.capture.record import STATE_KINDS, CaptureRecord, tensor_at
from pytest_exportcheck.checks.signature import check_signature, tensor_identity
from pytest_exportcheck.containment.failures import CaptureError
from pytest_exportcheck.model.subject import Subject
from pytest_exportcheck.spec import load_case_file
from pytest_exportcheck.spec.compat import dynamo_graph_capture

HAS_DYNAMO = dynamo_graph_capture() is not None

CASE = """
cases:
  nested:
    description: nested, shared, tied
    model: {target: models.py:NestedTiedShared}
    inputs: {args: [{shape: [2, 8]}]}
    loss_output: 1
  nested_unshared:
    description: nested and tied; the block under its second name is a block of its own
    model: {target: models.py:NestedTiedShared, kwargs: {share: false}}
    inputs: {args: [{shape: [2, 8]}]}
    loss_output: 1
"""

GRAPH_PATHS = [
    p for p in ("export", "export-strict", "dynamo", "dynamo-legacy") if p != "dynamo" or HAS_DYNAMO
]
ALL_PATHS = [*GRAPH_PATHS, "aot-joint"]


@pytest.fixture(scope="module")
def subjects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Subject]:
    root: Path = tmp_path_factory.mktemp("paths")
    (root / "models.py").write_text(MODELS)
    (root / "cases.yaml").write_text(CASE)
    return {entry.name: Subject(entry.case, "cpu") for entry in load_case_file(root / "cases.yaml")}


@pytest.fixture(scope="module")
def records(subjects: dict[str, Subject]) -> dict[str, CaptureRecord]:
    """The shared-and-tied model on every path that can capture it."""
    return {name: capture(name, subjects["nested"]) for name in GRAPH_PATHS}


@pytest.fixture(scope="module")
def unshared(subjects: dict[str, Subject]) -> dict[str, CaptureRecord]:
    paths = [p for p in ALL_PATHS if p != "dynamo" or HAS_DYNAMO]
    return {name: capture(name, subjects["nested_unshared"]) for name in paths}


def normalized(record: CaptureRecord) -> tuple[set[tuple[str, tuple[str, ...]]], list[str]]:
    """Lifted state as (kind, alias group) and user inputs as paths: names left behind."""
    groups = record.subject.tensor_groups
    state = {
        (p.kind, groups[p.target])
        for p in record.placeholders
        if p.kind in STATE_KINDS and p.target is not None
    }
    inputs = [p.target or "?" for p in record.placeholders if p.kind == "user_input"]
    return state, inputs


def test_every_path_is_registered() -> None:
    assert sorted(PATHS) == ["aot-joint", "dynamo", "dynamo-legacy", "export", "export-strict"]


@pytest.mark.parametrize("path", capture_params(*ALL_PATHS))
def test_each_path_names_its_placeholders_its_own_way(
    unshared: dict[str, CaptureRecord], path: str
) -> None:
    record = unshared[path]
    names: dict[str, str] = {}
    for p in record.placeholders:
        if p.kind == "parameter":  # keyed by alias group: the first placeholder of a tie
            names.setdefault(record.subject.tensor_groups[p.target][0], p.name)
    expected = {
        "export": "p_emb_weight",
        # torch 2.6 strict export names the tie's first placeholder after `head`
        "export-strict": ("p_emb_weight", "p_head_weight"),
        "dynamo": "L_self_modules_emb_parameters_weight_",
        # `L__self___emb.weight` where legacy export keeps nn.Linear as call_module (<= 2.9)
        "dynamo-legacy": ("L__self___emb_weight", "L__self___emb.weight"),
        "aot-joint": "arg0_1",  # parameters in named_parameters() order
    }
    want = expected[path]
    assert names["emb.weight"] in (want if isinstance(want, tuple) else (want,))


def test_the_mapping_is_identical_across_paths_after_normalization(
    records: dict[str, CaptureRecord],
) -> None:
    reference = normalized(records["export"])
    # emb (= head), two encoder blocks and the shared block: 4 tensors each.
    assert len(reference[0]) == 13
    assert reference[1] == ["args[0]"]
    for path, record in records.items():
        assert normalized(record) == reference, path


def test_the_joint_graph_cannot_capture_a_submodule_shared_under_two_names(
    subjects: dict[str, Subject],
) -> None:
    with pytest.raises(CaptureError, match="did not receive a gradient"):
        capture("aot-joint", subjects["nested"])


def test_with_the_block_unshared_the_joint_graph_maps_like_the_others(
    unshared: dict[str, CaptureRecord],
) -> None:
    reference = normalized(unshared["export"])
    assert len(reference[0]) == 17
    for path, record in unshared.items():
        assert normalized(record) == reference, path


def test_paths_differ_in_how_many_names_a_tied_tensor_gets(
    records: dict[str, CaptureRecord],
) -> None:
    # The difference normalization absorbs: non-strict and the joint graph lift
    # each name of a tied or shared tensor; strict and Dynamo lift it once.
    def names_of(path: str, fqn: str) -> list[str]:
        group = records[path].subject.tensor_groups[fqn]
        return [p.target for p in records[path].placeholders if p.target in group]

    assert names_of("export", "emb.weight") == ["emb.weight", "head.weight"]
    # torch 2.9's strict export lifts it under both names, both targeting emb.weight.
    assert len(names_of("export-strict", "emb.weight")) in (1, 2)
    if HAS_DYNAMO:
        assert len(names_of("dynamo", "emb.weight")) == 1
    # Legacy export that keeps nn.Linear as call_module (<= 2.9) shows it in both calls.
    assert len(names_of("dynamo-legacy", "emb.weight")) in (1, 2)


@pytest.mark.parametrize("path", capture_params(*ALL_PATHS))
def test_every_fed_tensor_is_the_captured_models_tensor_at_its_target(
    records: dict[str, CaptureRecord], unshared: dict[str, CaptureRecord], path: str
) -> None:
    record = records[path] if path in records else unshared[path]
    assert record.captured_model is not None
    for p in record.placeholders:
        if p.kind in STATE_KINDS:
            fed = record.fed_tensor(p)
            assert fed is not None, p
            assert tensor_identity(fed) == tensor_identity(
                tensor_at(record.captured_model, p.target)
            ), p


@pytest.mark.parametrize("path", capture_params(*ALL_PATHS))
def test_the_signature_check_passes_on_every_path(
    records: dict[str, CaptureRecord], unshared: dict[str, CaptureRecord], path: str
) -> None:
    record = records[path] if path in records else unshared[path]
    assert check_signature(record.subject.case, record) == []


def test_dynamo_source_spellings() -> None:
    assert (
        _source_spelling("self", "blocks.0.lin.weight", "parameter")
        == "L_self_modules_blocks_modules_0_modules_lin_parameters_weight_"
    )
    assert _source_spelling("self", "bn.running_mean", "buffer") == (
        "L_self_modules_bn_buffers_running_mean_"
    )
    assert _source_spelling("self", "scale", "constant") == "L_self_scale"
    assert _legacy_spelling("self", "blocks.0.lin.weight", "parameter") == (
        "L__self___blocks_0_lin_weight"
    )


def test_the_joint_graph_gradients_match_eager_autograd(
    unshared: dict[str, CaptureRecord],
) -> None:
    record = unshared["aot-joint"]
    subject = record.subject
    model = subject.model_copy()
    args, kwargs = subject.inputs_copy()
    model(*args, **kwargs)[1].backward()
    graph = record.gradients(*subject.inputs_copy())  # type: ignore[attr-defined]
    # The tie: the joint graph gives each name its share; eager accumulates one.
    torch.testing.assert_close(graph["emb.weight"] + graph["head.weight"], model.emb.weight.grad)
    torch.testing.assert_close(graph["encoder.0.lin.weight"], model.encoder[0].lin.weight.grad)
