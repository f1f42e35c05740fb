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


# --- kata 17: CS224n's beam search (issue 23 §7) ---

BEAM = registry.get("17_beam_search")

CS224N_BEAM_SEARCH = '''
import torch


def beam_search(step_fn, bos_idx, eos_idx, beam_size, max_len, length_penalty=1.0):
    """CS224n's loop: flatten, one topk, flat // V and flat % V; float32 running scores
    (torch.float), and only finished hypotheses returned (the best live one if none)."""
    hypotheses = [[bos_idx]]
    hyp_scores = torch.zeros(1, dtype=torch.float)
    completed = []
    t = 0
    while len(completed) < beam_size and t < max_len - 1:
        t += 1
        log_p_t = step_fn(torch.tensor(hypotheses))
        vocab = log_p_t.size(1)
        live_hyp_num = beam_size - len(completed)
        flat = (hyp_scores.unsqueeze(1).expand_as(log_p_t) + log_p_t).view(-1)
        top_scores, top_pos = torch.topk(flat, k=min(live_hyp_num, flat.numel()))
        new_hypotheses, new_scores = [], []
        for prev, word, score in zip((top_pos // vocab).tolist(), (top_pos % vocab).tolist(),
                                     top_scores.tolist()):
            sentence = hypotheses[prev] + [word]
            if word == eos_idx:
                completed.append((sentence, score))
            else:
                new_hypotheses.append(sentence)
                new_scores.append(score)
        if len(completed) == beam_size or not new_hypotheses:
            break
        hypotheses = new_hypotheses
        hyp_scores = torch.tensor(new_scores, dtype=torch.float)
    if not completed:
        completed.append((hypotheses[0], hyp_scores[0].item()))
    ranked = [(h, s / (len(h) - 1) ** length_penalty) for h, s in completed]
    return sorted(ranked, key=lambda item: item[1], reverse=True)
'''


def test_cs224n_beam_search_is_told_its_real_differences(tmp_path):
    """A correct flatten-then-topk search that keeps float32 scores is told that its scores
    are rounded, with enough digits to see it, and no slug; with float64 scores, that it
    drops the hypotheses live at max_len, again with no slug (never [topk-per-beam])."""
    path = tmp_path / "cs224n_beam_search.py"
    path.write_text(CS224N_BEAM_SEARCH)
    session = run_session(BEAM, "--impl", str(path))
    assert session.exit_code == 1 and session.slugs == set(), session.output
    report = session.failure_reports()[0]
    text = "\n".join(report)
    assert "the README's example" in session.output and "rounding" in text, text
    assert "float64 here" in text, text
    expected = next(line for line in report if line.strip().startswith("expected"))
    got = next(line for line in report if line.strip().startswith("got"))
    assert expected.split(":", 1)[1] != got.split(":", 1)[1], (expected, got)

    path.write_text(CS224N_BEAM_SEARCH.replace("dtype=torch.float)", "dtype=torch.float64)"))
    session = run_session(BEAM, "--impl", str(path))
    assert session.exit_code == 1 and session.slugs == set(), session.output
    text = "\n".join(session.failure_reports()[0])
    assert "still live when the sequences reached max_len" in text, text
    assert "rounding" not in text, text


def test_beam_scores_print_enough_digits_to_differ():
    """Two scores that differ in the 9th digit print differently."""
    from graders.beam_search.checks import describe_result, digits_to_tell_apart

    expected = [((0, 3, 1), -0.5394048307), ((0, 2, 1), -0.8714846525)]
    got = [((0, 3, 1), -0.5394048448), ((0, 2, 1), -0.8714846535)]
    digits = digits_to_tell_apart(got, expected)
    assert describe_result(got, digits=digits) != describe_result(expected, digits=digits)
    assert digits_to_tell_apart(expected, expected) == 6
