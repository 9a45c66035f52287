"""The shapes and signature reproductions: findings read back into sizes and claims, the
inputs at those sizes drawn as the shapes check draws them, and the reasons a finding
gets no script."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from pytest_exportcheck.repro import shapes_kind, signature_kind
from pytest_exportcheck.repro.kinds import kind_for
from pytest_exportcheck.repro.script import Finding, script_text
from pytest_exportcheck.spec import load_case_file

CASES = {c.case.name: c.case for c in load_case_file(Path("cases/dynamic.yaml")) if c.case}


@pytest.mark.parametrize(
    ("finding", "sizes", "claim"),
    [
        (
            "at batch=1, seq=2 (min): ep.module(), decomposed refused a size inside the "
            "declared range: AssertionError: Guard failed",
            {"batch": 1, "seq": 2},
            shapes_kind.REFUSED,
        ),
        (
            "at batch=3, seq=17 (sizes[0]): eager raised ValueError: no, but ep.module() "
            "computed a result",
            {"batch": 3, "seq": 17},
            shapes_kind.EAGER_RAISED,
        ),
        (
            "at batch=17, seq=6 (above batch's max 16): ep.module() accepted a size outside "
            "the declared range [1, 16] and computed a result",
            {"batch": 17, "seq": 6},
            shapes_kind.ACCEPTED,
        ),
        (
            "at batch=16, seq=32 (max, shrunk to 2^20 elements per input): output: 3 / 8 "
            "elements outside tolerance; eager 1, ep.module() 2",
            {"batch": 16, "seq": 32},
            shapes_kind.DIFFERS,
        ),
    ],
)
def test_a_finding_at_sizes_is_read_back_into_its_sizes_and_claim(
    finding: str, sizes: dict, claim: str
) -> None:
    parsed = shapes_kind.parse(CASES["masked_encoder"], finding)
    assert isinstance(parsed, shapes_kind.AtSizes), parsed
    assert (parsed.sizes, parsed.claim) == (sizes, claim)
    assert "ep.module()" in parsed.programs and "unflatten(ep)" not in parsed.programs


@pytest.mark.parametrize(
    "finding",
    [
        "at batch=2, seq=6 (inside), over 3 steps: after step 1: running_mean differs",
        "at batch=2, seq=6 (inside): the inputs cannot be made at this size: no",
        "at nope=2 (inside): ep.module() refused a size inside the declared range: x",
        "no_such_program could not be made, so no size ran it: RuntimeError: x",
    ],
)
def test_a_finding_no_script_runs_yet_says_so(finding: str) -> None:
    case = CASES["masked_encoder"]
    assert isinstance(shapes_kind.parse(case, finding), str)
    kind, why = kind_for(case, "export", "shapes", "shapes", (finding,))
    assert kind is None and why.startswith("the shapes finding '"), why


def test_what_export_recorded_of_a_declared_dim_is_read_back() -> None:
    case = CASES["masked_encoder"]
    narrowed = (
        "declared dim batch (args[0] dim 0) is [1, 16], but export narrowed it to [2, 16] "
        "(ep.range_constraints): the program refuses sizes the case allows"
    )
    parsed = shapes_kind.parse(case, narrowed)
    assert parsed == shapes_kind.Recorded(narrowed, "args[0]", 0, "narrowed", (1, 16))
    static = "declared dim seq (args[1] dim 1) was specialized to 6: export made it static"
    assert shapes_kind.parse(case, static) == shapes_kind.Recorded(static, "args[1]", 1, "static")


def test_the_inputs_at_a_findings_sizes_are_the_shapes_checks() -> None:
    """The script's inputs at ``batch=3, seq=17`` are, bit for bit, those the shapes
    check ran there (``shape_runs.inputs_at``)."""
    from pytest_exportcheck.checks.shape_runs import inputs_at

    case = CASES["masked_encoder"]
    finding = "at batch=3, seq=17 (sizes[0]): ep.module() refused a size inside the range: x"
    text = script_text(
        Finding(
            nodeid="n", case=case, capture="export", check="shapes", device="cpu",
            kind="shapes", message="m", findings=(finding,),
        )
    )  # fmt: skip
    namespace: dict = {"__name__": "not_main"}
    exec(compile(text, "repro.py", "exec"), namespace)
    (entry,) = namespace["SIZED"]
    got = entry["inputs"]()
    want = inputs_at(case, case.dynamic, {"batch": 3, "seq": 17}, "cpu")
    assert [t.shape for t in got[0]] == [torch.Size([3, 17])] * 2
    assert all(torch.equal(a, b) for a, b in zip(got[0], want[0], strict=True))
    assert entry["claim"] == shapes_kind.REFUSED and namespace["RECORDED"] == []


def test_user_text_in_a_finding_stays_data() -> None:
    case = CASES["masked_encoder"]
    finding = 'at batch=2, seq=6 (inside): output: eager """\'; import owned; ep.module() 1'
    text = script_text(
        Finding(
            nodeid="n", case=case, capture="export", check="shapes", device="cpu",
            kind="shapes", message="m", findings=(finding,),
        )
    )  # fmt: skip
    compile(text, "repro.py", "exec")
    for line in text.splitlines():
        if "owned" in line:  # a comment, or the repr of the finding
            assert line.startswith("#") or line.startswith("    dict(finding="), line


def test_the_findings_without_a_script_say_why() -> None:
    case = CASES["masked_encoder"]
    kind, why = kind_for(case, "export+dynamo", "consistency", "consistency", ("row",))
    assert kind is None and why.startswith("consistency compares the plugin's normalized")
    kind, why = kind_for(case, "export", "shapes", "shapes", ())
    assert kind is None and "names no sizes" in why
    scope = "p_w: parameter -> w: the graph reads it only inside module(s) 'a'"
    assert signature_kind.unwritten((scope,)) == (
        f"the signature finding {scope[:80]!r} is not written yet"
    )
    expected = "placeholders differ from expect.placeholders (cases/a.yaml:3):\n  expected"
    assert kind_for(case, "export-strict", "signature", "signature", (expected,)) == (
        "signature",
        "",
    )
    assert kind_for(case, "dynamo-legacy", "signature", "signature", (expected,))[0] is None


def test_a_program_the_check_could_not_make_is_made_again_by_its_script() -> None:
    """A program that could not be made ran at no size: its script makes it the same
    way, and shows what making it raised (hf_gpt2_dynamic's saved program, field corpus)."""
    case = CASES["masked_encoder"]
    finding = (
        "saved and loaded could not be made, so no size ran it: SerializationError: "
        "torch.export.save raised: SerializeError: Failed serializing node flat_apply"
    )
    parsed = shapes_kind.parse(case, finding)
    assert parsed == shapes_kind.Unmade(finding, "saved and loaded")
    assert shapes_kind.unwritten(case, (finding,)) is None
    # A program the case does not run is no such finding.
    assert isinstance(shapes_kind.parse(case, finding.replace("saved and", "never")), str)
    text = script_text(
        Finding("n", case, "export", "shapes", "cpu", "shapes", "m", findings=(finding,))
    )
    assert f"UNMADE = [\n    dict(finding={finding!r}, program='saved and loaded'),\n]" in text
    compile(text, "script", "exec")


@pytest.mark.parametrize("capture", ["dynamo", "dynamo-legacy"])
def test_a_dynamo_graphs_findings_at_sizes_run_its_graph_module(capture: str) -> None:
    case = CASES["batch_one_min1"]
    at_sizes = (
        "at batch=1 (min): output: 4 / 4 elements outside tolerance; eager -2.68914, graph module 0"
    )
    assert kind_for(case, capture, "shapes", "shapes", (at_sizes,)) == ("shapes", "")
    text = script_text(
        Finding("n", case, capture, "shapes", "cpu", "shapes", "m", findings=(at_sizes,))
    )
    assert '("graph module", lambda ep, inputs: graph_module(ep))' in text
    assert "run_decompositions" not in text  # no export program: the graph is the program
    compile(text, "script", "exec")
    # A range Dynamo narrowed is its ShapeEnv's: no range_constraints to read it from.
    narrowed = "declared dim batch (args[0] dim 0) is [1, 8], but dynamo narrowed it to [2, 8]"
    kind, why = kind_for(case, capture, "shapes", "shapes", (at_sizes, narrowed))
    assert kind is None and why.endswith(f"of a {capture} capture is not written yet"), why
    # Parity runs that graph too, over the case's steps.
    assert kind_for(case, capture, "parity", "parity") == ("parity", "")
    # A finding of the graph fed eager state alone: that way of running is not written.
    fed = "step 2: output: 8 / 8 elements outside tolerance; eager 1, graph fed eager state 2"
    kind, why = kind_for(case, capture, "parity", "parity", (fed,))
    assert kind is None and "graph fed eager state is not written yet" in why, why
