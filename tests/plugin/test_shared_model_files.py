"""A model file that the user's tests import too is executed once, and its classes are theirs."""

from __future__ import annotations

import uuid

import pytest

MODELS = """
import torch
from torch import nn

# A custom op registered at import: a second execution of this file raises
# "... registered multiple times".
torch.library.define("{namespace}::double", "(Tensor x) -> Tensor")


@torch.library.impl("{namespace}::double", "CompositeExplicitAutograd")
def _double(x):
    return x * 2


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x) * 2
"""

CASE = """
cases:
  net:
    description: a model file the tests import too
    model: {target: shared_models.py:Net}
    inputs: {args: [{shape: [2, 4]}]}
    captures: [export]
"""


@pytest.fixture
def shared(pytester: pytest.Pytester) -> pytest.Pytester:
    namespace = f"exportcheck_{uuid.uuid4().hex[:8]}"
    pytester.mkdir("cases")
    (pytester.path / "cases" / "shared_models.py").write_text(MODELS.format(namespace=namespace))
    (pytester.path / "cases" / "main.yaml").write_text(CASE)
    pytester.makeini("[pytest]\npythonpath = cases\n")
    return pytester


def test_a_file_a_test_module_imported_is_not_executed_again(shared: pytest.Pytester) -> None:
    shared.makepyfile(
        test_user="import shared_models\n\ndef test_user():\n    assert shared_models.Net\n"
    )
    result = shared.runpytest("--exportcheck", "cases", "test_user.py", "-p", "no:randomly")
    result.assert_outcomes(passed=6)


def test_a_test_importing_it_after_the_cases_ran_gets_the_same_classes(
    shared: pytest.Pytester,
) -> None:
    shared.makepyfile(
        test_user="""
        def test_user(request):
            import shared_models  # after the YAML items: their module, not a second copy
            from pytest_exportcheck.model.targets import resolve_target

            net = resolve_target("shared_models.py:Net", request.config.rootpath / "cases")
            assert net is shared_models.Net
        """
    )
    result = shared.runpytest("--exportcheck", "cases", "test_user.py", "-p", "no:randomly")
    result.assert_outcomes(passed=6)
