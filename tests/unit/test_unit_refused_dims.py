"""Torch's refusal of dynamic dims, read per dim: the reason and torch's suggested fix.

The 2.13 texts are recorded (``str(exc)`` of ``torch.export.export`` on torch 2.13.0+cpu,
the models named above each); the others are built from torch's own format strings, as
quoted above each, since no other torch is installed where these tests were written.
"""

from __future__ import annotations

import pytest

from pytest_exportcheck.capture.refused_dims import dim_line, parse_refusal

_CLOSING = (
    "\n\nThe error above occurred when calling torch.export.export. If you would like to "
    "view some more information about this error, and get a list of all other errors that "
    "may occur in your export call, you can replace your `export()` call with "
    "`draft_export()`."
)
_MARKED = (
    "You marked {dim} as dynamic but your code specialized it to be a constant ({val}). If "
    "you're using mark_dynamic, either remove it or use maybe_mark_dynamic. If you're using "
    "Dim.DYNAMIC, replace it with either Dim.STATIC or Dim.AUTO."
)

# 2.13, non-strict: a seq2seq whose GRU cells are stepped over range(src.shape[1]) and
# range(tgt.shape[1]), exported at src_len 7, tgt_len 5 with Dim(min=2, max=32) each.
SEQ2SEQ_NON_STRICT = (
    'Constraints violated (src_len, tgt_len)! For more information, run with TORCH_LOGS="+dynamic".\n'
    f"  - {_MARKED.format(dim='src_len', val=7)}\n"
    f"  - {_MARKED.format(dim='tgt_len', val=5)}\n"
    "Suggested fixes:\n  src_len = 7\n  tgt_len = 5" + _CLOSING
)

# 2.13, strict: the same model; each reason carries the stack where Dynamo specialized it
# (the file paths shortened).
_STACK = (
    "\n\nUser stack:\n"
    '  File "/venv/lib/python3.11/site-packages/torch/_dynamo/functional_export.py", line 232, '
    "in forward\n"
    "    res = self._export_root(*args, **kwargs)\n"
    "          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    '  File "/work/cases/seq2seq.py", line {line}, in forward\n'
    "    for t in range({arg}.shape[1]):\n"
    "             ^^^^^^^^^^^^^^^^^^^^\n"
)
SEQ2SEQ_STRICT = (
    'Constraints violated (src_len, tgt_len)! For more information, run with TORCH_LOGS="+dynamic".\n'
    f"  - {_MARKED.format(dim='src_len', val=7)}{_STACK.format(line=17, arg='src')}\n"
    f"  - {_MARKED.format(dim='tgt_len', val=5)}{_STACK.format(line=20, arg='tgt')}\n"
    "Suggested fixes:\n  src_len = 7\n  tgt_len = 5" + _CLOSING
)

# 2.13: `if x.shape[1] > 4` under seq = Dim("seq", min=2, max=16), exported at 8.
NARROWED = (
    'Constraints violated (seq)! For more information, run with TORCH_LOGS="+dynamic".\n'
    "  - Not all values of seq = L['x'].size()[1] in the specified range seq <= 16 satisfy "
    "the generated guard 5 <= L['x'].size()[1] and L['x'].size()[1] <= 16\n"
    "Suggested fixes:\n  seq = Dim('seq', min=5, max=16)" + _CLOSING
)

# 2.13: x.view(-1, 2, x.shape[1]) under dx = Dim("dx", min=4, max=64), exported at 6
# (six guards; two kept here).
DERIVED = (
    'Constraints violated (dx)! For more information, run with TORCH_LOGS="+dynamic".\n'
    "  - Not all values of dx = L['x'].size()[0] in the specified range 4 <= dx <= 64 "
    "satisfy the generated guard ((3*L['x'].size()[0]) % 6) == 0.\n"
    "  - Not all values of dx = L['x'].size()[0] in the specified range 4 <= dx <= 64 "
    "satisfy the generated guard (L['x'].size()[0] // 2) != L['x'].size()[0].\n"
    "Suggested fixes:\n  _dx = Dim('_dx', max=32)\n  dx = 2*_dx" + _CLOSING
)

# 2.13: x + y with x dim 0 Dim("a") and y dim 0 Dim("b").
EQUAL = (
    'Constraints violated (b)! For more information, run with TORCH_LOGS="+dynamic".\n'
    "  - The values of b = L['y'].size()[0] and a = L['x'].size()[0] must always be equal.\n"
    "Suggested fixes:\n  b = a" + _CLOSING
)

# Before 2.8 (2.6 and 2.7 said it so, measured on the corpus' dynamic_shape_slicing, see
# cases/dynamic.yaml), symbolic_shapes.py's format string for a specialized dim was
#   f"Not all values of {var_with_range} are valid because {self.debug_name(source)} "
#   f"was inferred to be a constant ({val})."
INFERRED_CONSTANT = (
    'Constraints violated (batch)! For more information, run with TORCH_LOGS="+dynamic".\n'
    "  - Not all values of batch = L['args'][1]['input_ids'].size()[0] in the specified range "
    "batch <= 1024 are valid because batch was inferred to be a constant (2).\n"
    "  - Not all values of batch = L['args'][1]['attention_mask'].size()[0] in the specified "
    "range batch <= 1024 are valid because batch was inferred to be a constant (2).\n"
    "\nSuggested fixes:\n  batch = 2"
)

# DimConstraints.prettify_results (2.6-2.14), where solving forced a dim to a value:
#   f"Specializations unexpectedly required ({', '.join(sorted(debug_names))})! "
#   'For more information, run with TORCH_LOGS="+dynamic".\n'
#   f"  - solving the guards generated for {s} resulted in a specialized value of {val}.\n"
# with s = f"{debug name} = {source name}" (forced_specializations()).
FORCED = (
    'Specializations unexpectedly required (dx)! For more information, run with TORCH_LOGS="+dynamic".\n'
    "  - solving the guards generated for dx = L['x'].size()[0] resulted in a specialized "
    "value of 6.\n"
    "\nSuggested fixes:\n  dx = 6"
)

# torch.compile's mark_dynamic (no Dim name: the source is the name), before 2.8:
#   f"Not all values of {var_with_range} are valid because {name} was inferred to be a
#   constant ({val})." with var_with_range = RelaxedUnspecConstraint(L['x'].size()[0]).
MARK_DYNAMIC = (
    "Constraints violated (L['x'].size()[0])! For more information, run with "
    'TORCH_LOGS="+dynamic".\n'
    "  - Not all values of RelaxedUnspecConstraint(L['x'].size()[0]) are valid because "
    "L['x'].size()[0] was inferred to be a constant (16)."
)


def lines(text: str) -> list[str]:
    refusal = parse_refusal(text)
    assert refusal is not None
    return [dim_line(refusal, reason) for reason in refusal.reasons]


def test_a_dim_the_code_specialized_says_so_with_torchs_fix() -> None:
    assert lines(SEQ2SEQ_NON_STRICT) == [
        "src_len: your code specialized it to be a constant (7); torch suggests src_len = 7",
        "tgt_len: your code specialized it to be a constant (5); torch suggests tgt_len = 5",
    ]


def test_strict_exports_stack_is_read_per_dim() -> None:
    refusal = parse_refusal(SEQ2SEQ_STRICT)
    assert refusal is not None and refusal.dims == ("src_len", "tgt_len")
    assert lines(SEQ2SEQ_STRICT) == lines(SEQ2SEQ_NON_STRICT)  # the stack is not the reason
    src, tgt = refusal.reasons
    assert [(f.filename, f.lineno) for f in src.stack][-1] == ("/work/cases/seq2seq.py", 17)
    assert tgt.stack[-1].source == "for t in range(tgt.shape[1]):"
    where = "cases/seq2seq.py:20 in forward"
    assert dim_line(refusal, tgt, where=where) == (
        "tgt_len: your code specialized it to be a constant (5), at cases/seq2seq.py:20 in "
        "forward; torch suggests tgt_len = 5"
    )


def test_a_narrowing_guard_is_named_without_the_inputs_spelling() -> None:
    assert lines(NARROWED) == [
        "seq: not all values of seq in the specified range seq <= 16 satisfy the generated "
        "guard 5 <= L['x'].size()[1] and L['x'].size()[1] <= 16; torch suggests "
        "seq = Dim('seq', min=5, max=16)"
    ]


def test_more_guards_on_one_dim_are_counted_and_a_root_torch_introduces_goes_with_it() -> None:
    refusal = parse_refusal(DERIVED)
    assert refusal is not None
    assert refusal.fixes == ("_dx = Dim('_dx', max=32)", "dx = 2*_dx")
    assert refusal.unclaimed_fixes() == []
    assert lines(DERIVED) == [
        "dx: not all values of dx in the specified range 4 <= dx <= 64 satisfy the generated "
        "guard ((3*L['x'].size()[0]) % 6) == 0 (and 1 more guard on it); torch suggests "
        "_dx = Dim('_dx', max=32), dx = 2*_dx"
    ]


def test_two_dims_torch_finds_equal() -> None:
    assert lines(EQUAL) == ["b: the values of b and a must always be equal; torch suggests b = a"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            INFERRED_CONSTANT,
            "batch: not all values of batch in the specified range batch <= 1024 are valid "
            "because batch was inferred to be a constant (2) (and 1 more guard on it); torch "
            "suggests batch = 2",
        ),
        (
            FORCED,
            "dx: solving the guards generated for dx resulted in a specialized value of 6; "
            "torch suggests dx = 6",
        ),
        (
            MARK_DYNAMIC,
            "L['x'].size()[0]: not all values of RelaxedUnspecConstraint(L['x'].size()[0]) are "
            "valid because L['x'].size()[0] was inferred to be a constant (16)",
        ),
    ],
    ids=["before-2.8", "forced", "mark-dynamic"],
)
def test_other_torch_wordings(text: str, expected: str) -> None:
    assert lines(text) == [expected]


def test_a_quoted_refusal_is_found_under_the_plugins_headline() -> None:
    quoted = "torch.export.export (non-strict) raised: UserError: " + SEQ2SEQ_NON_STRICT
    assert lines(quoted) == lines(SEQ2SEQ_NON_STRICT)


@pytest.mark.parametrize(
    "text",
    [
        "Dynamic control flow is not supported at the moment.",
        'Constraints violated (seq)! For more information, run with TORCH_LOGS="+dynamic".',
    ],
    ids=["not-a-refusal", "no-reason-line"],
)
def test_what_it_cannot_read_is_left_as_torch_said_it(text: str) -> None:
    assert parse_refusal(text) is None
