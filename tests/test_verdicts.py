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


def test_every_in_place_verdict_of_kata_16_names_the_slug(tmp_path):
    """A top_k_filter that removes with masked_fill_ on the caller's logits: where k >= V it
    removes nothing, leaves every bit as it was and only moves the version counter, which the
    guard reports without a slug (issue 23, filter edge cases). Every verdict that says the
    logits were modified in place names [input-modified-in-place]."""
    sampling = registry.get("16_sampling")
    path = edited(sampling, tmp_path, [(
        "    if k >= logits.size(-1):\n"
        "        return logits.clone()\n"
        "    kth_largest = torch.topk(logits, k, dim=-1).values[..., -1:]  # (..., 1)\n"
        "    return logits.masked_fill(logits < kth_largest, NEG_INF)",
        "    kth_largest = torch.topk(logits, min(k, logits.size(-1)), dim=-1).values[..., -1:]\n"
        "    return logits.masked_fill_(logits < kth_largest, NEG_INF)")])
    session = run_session(sampling, "--impl", str(path))
    assert session.exit_code == 1, session.output
    reports = session.failure_reports()
    assert "test_filter_edge_cases" in session.output and len(reports) == session.failed >= 4
    for report in map("\n".join, reports):
        assert "[input-modified-in-place]" in report, report
    edge = next(r for r in map("\n".join, reports) if "k=6" in r)
    assert "happened to leave every value as it was" in edge, edge
