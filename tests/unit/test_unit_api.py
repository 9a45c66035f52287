"""check_model called directly: the caller's objects stay untouched, the report says what ran."""

from __future__ import annotations

import sys
from pathlib import Path

import childkit
import pytest
import torch
from torch import nn

from pytest_exportcheck import ExportCheckFailed, InvalidCase, Report, check_model
from pytest_exportcheck.spec import SpecError

HERE = Path(__file__)


class NormalizeInPlace(nn.Module):
    """BatchNorm in train mode (its running stats change per call), a counter buffer,
    and an input shifted in place by forward."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)
        self.register_buffer("count", torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.add_(1)
        self.count.add_(1)
        return self.bn(self.lin(x)) * self.count


class Mlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


class PythonCounter(nn.Module):
    """Python-side state: export bakes the first call's value in; eager keeps counting."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.lin(x) * self.calls


class Raising(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise ValueError("forward is broken on purpose")


def this_line() -> int:
    return sys._getframe(1).f_lineno


def test_the_callers_model_and_inputs_are_untouched() -> None:
    model = NormalizeInPlace().train()
    x = torch.randn(8, 4)
    state = {name: t.detach().clone() for name, t in model.state_dict(keep_vars=True).items()}
    versions = {name: t._version for name, t in model.state_dict(keep_vars=True).items()}
    tensors = dict(model.state_dict(keep_vars=True))
    x_before, x_version = x.clone(), x._version

    expected = ["bn.num_batches_tracked", "bn.running_mean", "bn.running_var", "count"]
    report = check_model(
        model, (x,), captures=["export", "export-strict"], expect={"mutated_buffers": expected},
    )  # fmt: skip

    assert report.failed == [] and "mutation[export-strict-cpu]" in report.passed
    assert model.training and model.bn.training
    after = model.state_dict(keep_vars=True)
    for name, before in state.items():
        assert after[name] is tensors[name], name  # the same objects ...
        assert after[name]._version == versions[name], name  # ... never written
        assert torch.equal(after[name].detach(), before), name
    assert x._version == x_version and torch.equal(x, x_before)


def test_the_report_lists_what_ran_and_what_was_skipped_and_why() -> None:
    report = check_model(Mlp(), (torch.randn(2, 4),), captures=["export", "dynamo-legacy"])

    assert isinstance(report, Report)
    assert [item.name for item in report.items] == [
        "signature[export-cpu]",
        "hierarchy[export-cpu]",
        "mutation[export-cpu]",
        "parity[export-cpu]",
        "mode[export-cpu]",
        "signature[dynamo-legacy-cpu]",
        "hierarchy[dynamo-legacy-cpu]",
        "mutation[dynamo-legacy-cpu]",
        "parity[dynamo-legacy-cpu]",
        "mode[dynamo-legacy-cpu]",
        "consistency[cpu]",
    ]  # as YAML items: no `moved` off accelerators
    assert report.skipped == ["hierarchy[dynamo-legacy-cpu]"]
    assert report["hierarchy[dynamo-legacy-cpu]"].message.startswith(
        "not applicable: a Dynamo GraphModule is flat"
    )
    parity = report["parity[export-cpu]"]
    assert (parity.check, parity.capture, parity.device) == ("parity", "export", "cpu")
    assert parity.max_abs_err is not None and parity.max_abs_err < 1e-5
    assert report.case.captures == ("export", "dynamo-legacy")
    assert "recorded" not in report.case.checks


def test_moved_asked_for_on_cpu_is_a_skip_that_says_why() -> None:
    report = check_model(Mlp(), (torch.randn(2, 4),), checks=["moved"])
    assert (report.ran, report.skipped) == ([], ["moved[export-cpu]"])
    assert report["moved[export-cpu]"].message.startswith("not applicable: moved compares ")


def test_every_failing_item_is_in_one_assertion_error() -> None:
    line = this_line() + 2
    with pytest.raises(ExportCheckFailed) as raised:
        check_model(PythonCounter(), (torch.randn(2, 4),), captures=["export", "export-strict"],
                    checks=["mutation", "parity"], expect={"parity": {"steps": 2}})  # fmt: skip
    error = raised.value
    assert isinstance(error, AssertionError)
    assert error.report.failed == [
        "mutation[export-cpu]",
        "parity[export-cpu]",
        "mutation[export-strict-cpu]",
        "parity[export-strict-cpu]",
    ]
    message = str(error)
    assert message.splitlines()[0].startswith(
        "4 of 4 exportcheck item(s) failed for PythonCounter: [mutation] after step 2/3: "
    )
    for name in error.report.failed:
        assert f"--- {name} ---" in message
    assert f"test_unit_api.py:{line}: case PythonCounter, export-strict on cpu" in message


def test_findings_name_the_callers_line() -> None:
    line = this_line() + 2
    with pytest.raises(ExportCheckFailed) as raised:
        check_model(
            NormalizeInPlace(), (torch.randn(2, 4),), checks=["mutation"],
            expect={"mutated_buffers": ("count",)},
        )  # fmt: skip
    (item,) = [raised.value.report[name] for name in raised.value.report.failed]
    assert f"- expect.mutated_buffers (tests/unit/test_unit_api.py:{line}) is {{count}}" in (
        item.message.replace(str(HERE.parent.parent.parent) + "/", "")
    )


def test_an_eager_forward_that_raises_is_an_eager_failure() -> None:
    with pytest.raises(ExportCheckFailed) as raised:
        check_model(Raising(), (torch.randn(2, 4),), checks=["signature", "parity"])
    first, second = (raised.value.report[name] for name in raised.value.report.failed)
    assert first.headline.startswith("[eager] ")
    assert "the eager forward raised: ValueError: forward is broken on purpose" in first.message
    assert "(full report on signature[export-cpu])" in second.message


class CopiesToItself(Mlp):
    def __deepcopy__(self, memo):
        return self


def test_a_model_whose_deep_copy_is_itself_fails_and_is_left_untouched() -> None:
    # The runs would otherwise write the caller's own model (a .double(), a mode switch).
    model = CopiesToItself()
    weight = model.fc1.weight.detach().clone()
    with pytest.raises(ExportCheckFailed) as raised:
        check_model(model, (torch.randn(2, 4),), checks=["parity"])
    (item,) = [raised.value.report[name] for name in raised.value.report.failed]
    assert item.headline.startswith("[case] ")
    assert "copy.deepcopy(model) returned the model itself (CopiesToItself.__deepcopy__)" in (
        item.message
    )
    assert model.fc1.weight.dtype == torch.float32 and torch.equal(model.fc1.weight, weight)


def test_a_misspelt_key_is_an_invalid_case_at_the_callers_line() -> None:
    line = this_line() + 2
    with pytest.raises(InvalidCase) as raised:
        check_model(Mlp(), (torch.randn(2, 4),), expect={"parity": {"atoll": 1.0e-5}})
    error = raised.value
    assert isinstance(error, ValueError) and isinstance(error, SpecError)
    assert (Path(error.path).resolve(), error.line) == (HERE.resolve(), line)
    assert error.message.startswith(
        "unknown key 'atoll' in expect.parity (did you mean 'atol'?); allowed: "
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"captures": ["aot-joint"]}, "capture 'aot-joint' needs `loss_output`: *"),
        ({"captures": "exprt"}, "captures[[]0[]]: 'exprt' is not one of: export, export-strict, *"),
        ({"checks": ["recorded"]}, "checks: 'recorded' cannot run on a model given from Python: *"),
        ({"devices": ["gpu"]}, "devices: unknown device 'gpu': *"),
        ({"seed": 1.0}, "seed: 1.0 is not of type 'integer'"),
        (
            {"expect": {"placeholders": {"dynamo": []}}},
            "expect.placeholders names capture 'dynamo', which this case does not run *",
        ),
    ],
)
def test_invalid_arguments_read_as_the_yaml_errors(options: dict, message: str) -> None:
    import fnmatch

    with pytest.raises(InvalidCase) as raised:
        check_model(Mlp(), (torch.randn(2, 4),), **options)
    assert fnmatch.fnmatchcase(raised.value.message, message), raised.value.message


def test_the_given_subject_sets_what_a_built_subject_sets() -> None:
    # Subject.__init__ is replaced, not extended: a field it gains must be set here too.
    from pytest_exportcheck.api import make_case
    from pytest_exportcheck.api.given import GivenSubject
    from pytest_exportcheck.model.subject import Subject
    from pytest_exportcheck.spec import ModelSpec

    case, _ = make_case(Mlp(), path=HERE, line=1)
    built = Subject(
        case.__class__(**{**case.__dict__, "model": ModelSpec("torch.nn:Identity"),
                          "inputs": {"args": [{"shape": [2]}]}})
    )  # fmt: skip
    given = GivenSubject(case, "cpu", Mlp(), ((torch.randn(2, 4),), {}))
    assert set(vars(built)) <= set(vars(given))


def test_the_package_root_and_the_api_import_no_torch() -> None:
    code = (
        "import sys, pytest_exportcheck, pytest_exportcheck.api, pytest_exportcheck.plugin\n"
        "assert 'check_model' in dir(pytest_exportcheck)\n"
        "heavy = [m for m in ('torch', 'jsonschema') if m in sys.modules]\n"
        "assert heavy == [], heavy\n"
    )
    childkit.run([sys.executable, "-c", code], check=True, timeout=60)
    import pytest_exportcheck
    from pytest_exportcheck import api

    assert pytest_exportcheck.check_model is api.check_model
