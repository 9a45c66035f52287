"""Each ExecuTorch failure of the bundled lowering run, again outside the check.

The case's model and inputs as the plugin builds them, its `export` capture, then
`executorch.exir.to_edge(ep).to_executorch()` and one `forward` through the portable
runtime, with no part of the check in between (benchmarks/README.md, "Lowering targets").

    PYTHONPATH=. python benchmarks/confirm_executorch.py   # from the repository root
"""

from pathlib import Path

from executorch.exir import to_edge
from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer
from torch.utils import _pytree as pytree

from pytest_exportcheck.capture import capture
from pytest_exportcheck.model.subject import Subject
from pytest_exportcheck.spec import load_case_file

wanted = {
    "dynamic.yaml": ["train_batchnorm", "positive_rows", "exportdb_scalar_output"],
    "layers.yaml": ["embedding_pool"],
    "state.yaml": ["batchnorm_train", "kv_cache"],
    "structure.yaml": ["shared_counting_block"],
    "training.yaml": ["batchnorm_train_loss"],
}
for file, names in wanted.items():
    for entry in load_case_file(Path("cases") / file):
        case = entry.case
        if case.name not in names:
            continue
        try:
            subject = Subject(case, "cpu")
            ep = capture("export", subject).program
            args, kwargs = subject.inputs_copy()
            stage = "lower"
            prog = to_edge(ep).to_executorch()
            stage = "run"
            mod = _load_for_executorch_from_buffer(prog.buffer)
            flat, _ = pytree.tree_flatten((args, kwargs))
            out = mod.forward(tuple(flat))
            print(f"{case.name}: ran, {len(out)} outputs")
        except Exception as exc:
            print(f"{case.name}: [{stage}] {type(exc).__name__}: {str(exc).splitlines()[0][:150]}")
