"""Verdicts a learner can trust: focused self-tests for wrong answers that no slug names.

Named mistakes are pinned by their mutants (tests/mutants/NN_name.py, graded in
tests/test_katas.py) and printing by tests/test_hostile.py; this file pins the rest: a
kata 01 module that gets fully masked rows wrong, a backward pass that raises, the value
preview of a mismatch, and a right number of the wrong type.
"""

from __future__ import annotations

import pytest
import torch

from graders.core import registry
from graders.core.compare import expect_close
from graders.core.report import GradingFailure
from graders.core.integers import expect_int
from tests.grading_session import run_session

ATTENTION = registry.get("01_attention")


def edited(kata: registry.Kata, tmp_path, edits: list[tuple[str, str]]):
    """The kata's reference solution with each ``(old, new)`` applied (``old`` found once)."""
    text = kata.solution_path.read_text()
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = tmp_path / f"my_{kata.file}"
    path.write_text(text)
    return path


def test_module_zeroing_fully_masked_rows_fails(tmp_path):
    """A fully masked query's output is out_proj's bias (out_proj of a zero context), not 0."""
    path = edited(ATTENTION, tmp_path, [(
        "        output = self.out_proj(attended)",
        "        output = self.out_proj(attended).masked_fill(\n"
        "            weights.sum(-1, keepdim=True) == 0, 0.0)")])
    session = run_session(ATTENTION, "--impl", str(path))
    assert session.exit_code == 1, session.output
    assert session.failed == 1, session.output
    report = "\n".join(session.failure_reports()[0])
    assert "test_single_head_fully_masked_rows" in session.output
    assert "out_proj's bias" in report, report


def test_backward_error_is_a_verdict(tmp_path):
    """An in-place edit of the softmax's output breaks backward(): the learner reads what
    happened and what to write instead, not a traceback through grader code."""
    path = edited(ATTENTION, tmp_path, [(
        "    weights = torch.softmax(scores, dim=-1).masked_fill(all_blocked, 0.0)",
        "    weights = torch.softmax(scores, dim=-1)\n"
        "    weights.masked_fill_(all_blocked, 0.0)")])
    session = run_session(ATTENTION, "--impl", str(path))
    assert session.exit_code == 1, session.output
    first = "\n".join(session.failure_reports()[0])
    assert "edited a tensor in place" in first and "out-of-place" in first, first
    assert "Traceback" not in session.output
    assert "graders/" not in session.output and "inputs.py" not in session.output
    assert session.slugs == set(), session.output


def test_value_preview_starts_at_the_first_difference():
    """Equal leading values are skipped: the previews show where the tensors differ."""
    expected = torch.arange(12, dtype=torch.float64).reshape(3, 4) / 10
    got = expected.clone()
    got[2, 1] += 1.0
    with pytest.raises(GradingFailure) as failure:
        expect_close(got, expected, "the output", "x (3, 4)")
    lines = str(failure.value).splitlines()
    expected_line = next(line for line in lines if line.strip().startswith("expected"))
    got_line = next(line for line in lines if line.strip().startswith("got"))
    assert "[..., 0.8, 0.9, 1, 1.1]" in expected_line, lines
    assert "[..., 0.8, 1.9, 1, 1.1]" in got_line, lines
    assert "index (2, 1)" in str(failure.value)


def test_right_value_wrong_type_is_said_so():
    """Kata 07: 31248.0 for 31248 is a type slip, not a wrong number."""
    with pytest.raises(GradingFailure) as failure:
        expect_int(31248.0, 31248, "mha_flops", "seq_len=3")
    text = str(failure.value)
    assert "right value, wrong type" in text and "31248.0" in text, text
    assert "e+04" not in text


def test_causal_mask_made_on_the_cpu_whatever_the_device_fails(tmp_path):
    """Kata 04: causal_mask(size, device) that ignores ``device`` fails on a CPU-only machine
    too (asked for the meta device); no slug names it."""
    masks = registry.get("04_masks")
    path = edited(masks, tmp_path, [(
        '    full = torch.full((size, size), float("-inf"), device=device)',
        '    full = torch.full((size, size), float("-inf"))')])
    session = run_session(masks, "--impl", str(path))
    assert session.exit_code == 1, session.output
    assert session.failed == 1, session.output
    report = "\n".join(session.failure_reports()[0])
    assert "expected device meta, got cpu" in report, report
    assert session.slugs == set(), session.output


def test_decoder_layer_without_dropout3_fails(tmp_path):
    """Kata 08: a feed-forward output never sent through dropout3 fails in training mode
    with dropout near 1 (every residual branch must be dropped); no slug names it."""
    decoder = registry.get("08_decoder_layer")
    path = edited(decoder, tmp_path, [(
        "        return self.dropout3(self.linear2(hidden))",
        "        return self.linear2(hidden)")])
    session = run_session(decoder, "--impl", str(path))
    assert session.exit_code == 1, session.output
    assert session.failed == 1, session.output
    assert "test_dropout_only_in_training" in session.output
    report = "\n".join(session.failure_reports()[0])
    assert "every residual branch dropped" in report and "dropout3 after" in report, report
    assert session.slugs == set(), session.output


@pytest.mark.parametrize("edit, named", [
    (("        return self.dropout1(attended)", "        return attended"),
     "dropout1 is never applied: the output of self_attn"),
    (("        return self.dropout2(self.linear2(hidden))", "        return self.linear2(hidden)"),
     "dropout2 is never applied: the output of linear2"),
    (("        hidden = self.dropout(self.activation(self.linear1(x)))",
      "        hidden = self.activation(self.linear1(x))"),
     "dropout is never applied: the activation's output"),
    (("d_model, nhead, dropout=dropout, batch_first=batch_first",
      "d_model, nhead, batch_first=batch_first"),
     "the attention weights in self_attn are never dropped"),
], ids=["dropout1", "dropout2", "dropout", "attention-dropout"])
def test_encoder_layer_without_one_dropout_fails(tmp_path, edit, named):
    """Kata 06: a layer that never applies one of its dropouts (dropout1 after self_attn,
    dropout2 after linear2, dropout after the activation, the attention weights' dropout)
    fails in training mode, and the verdict says which one; no slug names it."""
    encoder = registry.get("06_encoder_layer")
    path = edited(encoder, tmp_path, [edit])
    session = run_session(encoder, "--impl", str(path))
    assert session.exit_code == 1, session.output
    assert session.failed == 1, session.output
    assert "test_dropout_only_in_training" in session.output
    report = "\n".join(session.failure_reports()[0])
    assert named in report, report
    assert session.slugs == set(), session.output


def test_rope_preview_starts_at_the_first_difference():
    """Kata 12 compares by angle (its own tolerance), and its previews too start where the
    rotated values first differ, not at index 0 (learner trial, message 4)."""
    from graders.rope.checks import expect_rotated

    expected = torch.arange(16, dtype=torch.float64).reshape(1, 1, 2, 8) / 10
    got = expected.clone().float()
    got[0, 0, 1, 1] += 1.0
    angle = torch.zeros_like(expected)
    with pytest.raises(GradingFailure) as failure:
        expect_rotated(got, expected, angle, expected.abs(), torch.float32, "cpu",
                       "the rotated x", "x (1, 1, 2, 8)")
    lines = str(failure.value).splitlines()
    expected_line = next(line for line in lines if line.strip().startswith("expected"))
    got_line = next(line for line in lines if line.strip().startswith("got"))
    assert "[..., 0.8, 0.9, 1, 1.1, ...]" in expected_line, lines
    assert "[..., 0.8, 1.9, 1, 1.1, ...]" in got_line, lines


def test_vit_error_location_is_the_learners_file(tmp_path):
    """Kata 10: when learner code raises, the verdict points at the learner's file, never at
    the grader's guard.py: a DropPath.__init__ without scale_by_keep (the TypeError is raised
    where the call enters the learner's code: no frame of the file runs) is shown at its
    definition; an error inside a helper of the file at the helper's line, the deepest."""
    vit = registry.get("10_vit")
    path = edited(vit, tmp_path, [
        ("    def __init__(self, drop_prob: float = 0.0, scale_by_keep: bool = True):",
         "    def __init__(self, drop_prob: float = 0.0):"),
        ("        self.scale_by_keep = scale_by_keep\n", "        self.scale_by_keep = True\n"),
        ("        attn = (q * self.scale) @ k.transpose(-2, -1)   # (B, h, N, N)\n",
         "        attn = _scores(q * self.scale, k)\n"),
        ("class Mlp(nn.Module):\n",
         "def _scores(q, k):\n    return q @ k  # the transpose forgotten\n\n\nclass Mlp(nn.Module):\n"),
    ])
    session = run_session(vit, "--impl", str(path))
    assert session.exit_code == 1, session.output
    assert "guard.py" not in session.output and "graders/" not in session.output, session.output
    reports = {tuple(report[:1]): "\n".join(report) for report in session.failure_reports()}
    text = "\n".join(reports.values())
    assert "TypeError: DropPath.__init__() got an unexpected keyword argument" in text, text
    assert "at my_vit.py:" in text and ": def __init__(self, drop_prob: float = 0.0):" in text, text
    assert "return q @ k  # the transpose forgotten" in text, text


def test_error_location_at_the_call_boundary_for_every_kata(tmp_path):
    """The location comes from the engine (graders.core.guard.call), shared by every kata:
    a module whose forward does not take the arguments given, a function called with an
    argument it does not take, a class without the keyword; each shown where the learner
    defined it, never in torch's or the grader's files."""
    from graders.core import guard

    learner = tmp_path / "mine.py"
    learner.write_text(
        "import torch\n"
        "\n"
        "\n"
        "class Layer(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x\n"
        "\n"
        "\n"
        "def attend(q):\n"
        "    return q\n"
        "\n"
        "\n"
        "class Plain:\n"
        "    def __init__(self, a):\n"
        "        self.a = a\n")
    namespace: dict = {}
    exec(compile(learner.read_text(), str(learner), "exec"), namespace)
    cases = [
        (namespace["Layer"](), (torch.zeros(1), torch.zeros(1)), {}, "mine.py:5: def forward(self, x):"),
        (namespace["attend"], (), {"q": 1, "k": 2}, "mine.py:9: def attend(q):"),
        (namespace["Plain"], (1,), {"b": 2}, "mine.py:14: def __init__(self, a):"),
    ]
    for fn, args, kwargs, where in cases:
        with pytest.raises(GradingFailure) as failure:
            guard.call(fn, *args, what="f", on="x", learner_file=learner, **kwargs)
        text = str(failure.value)
        assert "TypeError" in text and f"at {where}" in text, text
        assert "guard.py" not in text and "module.py" not in text, text
