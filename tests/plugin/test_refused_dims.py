"""Why torch refused a dynamic dim, said per dim with torch's fix: in the scaffold's output,
in the xfail it writes, and in the item's failure; torch's own log lines are kept out of
all three (counted, and shown on request).

One model, a GRU seq2seq stepped over ``range(src.shape[1])`` and ``range(tgt.shape[1])``
in Python: every torch specializes both lengths, in both export modes. It is scaffolded
once, as a user runs the command (a fresh interpreter: torch's log handler writes to the
process's stderr, which an in-process run would not see), and the case it writes is run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import childkit
import pytest
import yaml

SEQ2SEQ = '''
import torch
from torch import nn


class GruSeq2Seq(nn.Module):
    """Embedding, GRU cells stepped over src then over tgt (teacher forcing), a linear head."""

    def __init__(self, vocab: int = 16, hidden: int = 8) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.enc = nn.GRUCell(hidden, hidden)
        self.dec = nn.GRUCell(hidden, hidden)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        h = torch.zeros(src.shape[0], self.enc.hidden_size)
        for t in range(src.shape[1]):
            h = self.enc(self.emb(src[:, t]), h)
        steps = []
        for t in range(tgt.shape[1]):
            h = self.dec(self.emb(tgt[:, t]), h)
            steps.append(self.head(h))
        return torch.stack(steps, 1)
'''

# Torch's reason, in its wording before 2.8 ("inferred to be a constant") and after.
SRC = "src_len: *constant (7)*; torch suggests src_len = 7"
TGT = "tgt_len: *constant (5)*; torch suggests tgt_len = 5"


@pytest.fixture(scope="module")
def scaffolded(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """The scaffold's stderr and the case it wrote."""
    root = tmp_path_factory.mktemp("seq2seq")
    (root / "seq2seq.py").write_text(SEQ2SEQ)
    done = childkit.run(
        [
            sys.executable, "-m", "pytest_exportcheck", "new", "seq2seq.py:GruSeq2Seq",
            "--input", "2x7:int64:16", "--input", "2x5:int64:16",
            "--dynamic", "args[0]:1=src_len[2..32]", "--dynamic", "args[1]:1=tgt_len[2..32]",
            "--capture", "export", "--capture", "export-strict", "-o", "seq2seq.yaml",
        ],
        cwd=root, capture_output=True, text=True, timeout=600, warm=True,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # written; no capture succeeded
    return done.stderr, (root / "seq2seq.yaml").read_text()


def test_the_scaffold_says_why_per_dim_and_prints_no_torch_log(
    scaffolded: tuple[str, str], pytester: pytest.Pytester
) -> None:
    err, _ = scaffolded
    shown = pytest.LineMatcher(err.splitlines())
    for capture in ("non-strict", "strict"):
        shown.fnmatch_lines(
            [
                "exportcheck new: warning: [[]capture: constraint violation[]] "
                f"torch.export.export ({capture}) raised: *Constraints violated (src_len, tgt_len)!*",
                f"  - {SRC}",
                f"  - {TGT}",
            ]
        )
    # torch logs each refused guard as an ERROR with Dynamo's traceback: not here.
    shown.no_fnmatch_line("*torch?_guards*")
    shown.no_fnmatch_line("*Traceback*")
    assert len(err.splitlines()) <= 16, err


def test_the_written_xfail_gives_each_dims_reason_and_fix_on_one_line(
    scaffolded: tuple[str, str],
) -> None:
    _, text = scaffolded
    xfails = yaml.safe_load(text)["cases"]["gru_seq2seq"]["xfail"]
    assert [x["captures"] for x in xfails] == [["export"], ["export-strict"]]
    for xfail in xfails:
        pytest.LineMatcher([xfail["reason"]]).fnmatch_lines(
            [f"scaffold: [[]capture: constraint violation[]] {SRC} | {TGT}"]
        )
        assert (xfail["stage"], xfail["match"]) == ("capture", "Constraints violated")
    reasons = [line for line in text.splitlines() if "reason: 'scaffold: [capture:" in line]
    assert len(reasons) == 2  # one line each, as written


def test_the_items_failure_says_why_per_dim_without_torchs_log(
    scaffolded: tuple[str, str], pytester: pytest.Pytester
) -> None:
    _, text = scaffolded
    case = yaml.safe_load(text)
    # Strict export's failure as the terminal shows it; non-strict's under an xfail that
    # matches torch's own words, which the failure no longer prints but still holds.
    case["cases"]["gru_seq2seq"]["xfail"] = [
        {"reason": "r", "captures": ["export"], "stage": "capture", "match": "maybe_mark_dynamic"}
    ]
    (pytester.path / "seq2seq.py").write_text(SEQ2SEQ)
    (pytester.path / "seq2seq.yaml").write_text(yaml.safe_dump(case, sort_keys=False))
    result = pytester.runpytest(
        "--exportcheck", "seq2seq.yaml", "-p", "no:xdist", "-k", "signature",
        "--exportcheck-report", "r.json",
    )  # fmt: skip
    result.assert_outcomes(failed=1, xfailed=1)
    # Strict export names the line that specialized each dim; the log it wrote is counted.
    result.stdout.fnmatch_lines(
        [
            "seq2seq.yaml:*: case gru_seq2seq, export-strict on cpu",
            f"- {SRC.replace('; ', ', at seq2seq.py:* in forward (for t in range(src.shape[[]1[]]):); ')}",
            f"- {TGT.replace('; ', ', at seq2seq.py:* in forward (for t in range(tgt.shape[[]1[]]):); ')}",
            "in the case: leave src_len, tgt_len out of dynamic: (static)",
        ]
    )
    for noise in ("*torch?_guards*", "*Captured log call*", "*Captured stderr call*"):
        result.stdout.no_fnmatch_line(noise)
    report = json.loads(Path(pytester.path / "r.json").read_text())
    texts = {item["capture"]: item["text"] for item in report["items"]}
    for capture in ("export", "export-strict"):
        pytest.LineMatcher(texts[capture].splitlines()).fnmatch_lines([f"- {SRC}*", f"- {TGT}*"])
