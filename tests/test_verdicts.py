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


# --- katas 14 and 19: lse's dtype, float32 accumulators, what the ctx keeps ---

FLASH = registry.get("14_flash_attention")
BACKWARD = registry.get("19_attention_backward")


def implementation(kata: registry.Kata, path):
    import importlib

    from graders.core import loader
    from graders.core.implementation import Implementation

    grader = importlib.import_module(kata.grader_module)  # as the impl fixture hands it over
    return Implementation.of(kata, path, loader.load(path, kata),
                             exception_slugs=getattr(grader, "slug_for_exception", None))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_lse_is_float32_for_half_inputs_in_14_and_19(tmp_path, dtype):
    """The CUDA follow-ups' dtype rule, run here on the CPU's half types (torch 2.13 has
    them): the expected lse is float32 and the output in the half type; the references pass
    the follow-ups' very checks; a lse left in the half type fails and says why; kata 19's
    backward is handed a float32 lse."""
    from graders.attention_backward import checks as backward
    from graders.core.compare import lse_dtype
    from graders.flash_attention import checks as flash

    assert lse_dtype(dtype) == torch.float32
    assert lse_dtype(torch.float64) == torch.float64 and lse_dtype(torch.float32) == torch.float32
    q, k, v = flash.qkv(2, 2, 24, 40, 16, seed=400, dtype=dtype)
    out, lse = flash.expected_attention(q, k, v, False)
    assert (out.dtype, lse.dtype) == (dtype, torch.float32)
    out, lse = backward.expected_forward(q, k, v, False)
    assert (out.dtype, lse.dtype) == (dtype, torch.float32)

    from tests.mutation import STYLES_DIR

    # The reference and every correct style (some take the scores in the half type, some
    # in float32) pass the follow-ups' checks.
    for path in (FLASH.solution_path, *sorted((STYLES_DIR / FLASH.name).glob("*.py"))):
        correct = implementation(FLASH, path)
        flash.check_flash(correct, q, k, v, 16)
        flash.check_flash(correct, *flash.qkv(2, 2, 24, 24, 16, seed=410, dtype=dtype), 8,
                          causal=True)
    for path in (BACKWARD.solution_path, *sorted((STYLES_DIR / BACKWARD.name).glob("*.py"))):
        correct = implementation(BACKWARD, path)
        backward.check_forward(correct, q, k, v)
        backward.check_backward(correct, q, k, v, block_size=16)
        backward.check_function(correct, *backward.qkv(2, 2, 24, 24, 16, seed=410, dtype=dtype),
                                causal=True)
    handed = []
    spy = tmp_path / "spy.py"
    spy.write_text(BACKWARD.solution_path.read_text().replace(
        "    dtype = q.dtype\n    q, k, v, out, lse, grad_out",
        "    HANDED.append(lse.dtype)\n    dtype = q.dtype\n    q, k, v, out, lse, grad_out"))
    spied = implementation(BACKWARD, spy)
    spied.module.HANDED = handed
    backward.check_backward(spied, q, k, v, block_size=16)
    assert handed == [torch.float32]

    half_lse = edited(FLASH, tmp_path, [("    return output.to(out_dtype), lse  #",
                                         "    return output.to(out_dtype), lse.to(out_dtype)  #")])
    with pytest.raises(GradingFailure) as failure:
        flash.check_flash(implementation(FLASH, half_lse), q, k, v, 16)
    text = str(failure.value)
    assert f"expected dtype torch.float32, got {dtype}" in text and "FlashAttention" in text, text
    half_lse = edited(BACKWARD, tmp_path, [("    return out.to(dtype), lse\n",
                                            "    return out.to(dtype), lse.to(dtype)\n")])
    with pytest.raises(GradingFailure) as failure:
        backward.check_forward(implementation(BACKWARD, half_lse), q, k, v)
    text = str(failure.value)
    assert f"expected dtype torch.float32, got {dtype}" in text and "FlashAttention" in text, text


def test_flash_float32_accumulator_in_float64_is_told_precision_not_large_scores(tmp_path):
    """Kata 14's contract computes float64 inputs in float64 (no float32 allowance, unlike
    katas 13, 15 and 18): an online softmax whose running max, sum and accumulator are
    float32 fails — and the verdict says it is the precision of the arithmetic, not the
    ±1e4 scores the check is about."""
    path = edited(FLASH, tmp_path, [
        ('row_max = q.new_full((*q.shape[:-1], 1), float("-inf"))',
         'row_max = q.new_full((*q.shape[:-1], 1), float("-inf"), dtype=torch.float32)'),
        ("row_sum = q.new_zeros((*q.shape[:-1], 1))",
         "row_sum = q.new_zeros((*q.shape[:-1], 1), dtype=torch.float32)"),
        ("acc = q.new_zeros((*q.shape[:-1], v.size(-1)))",
         "acc = q.new_zeros((*q.shape[:-1], v.size(-1)), dtype=torch.float32)"),
        ("new_max = torch.maximum(row_max, scores.amax(dim=-1, keepdim=True))",
         "new_max = torch.maximum(row_max, scores.amax(dim=-1, keepdim=True).float())"),
        ("p = torch.exp(scores - new_max)", "p = torch.exp(scores - new_max.to(scores.dtype))"),
        ("row_sum = row_sum * correction + p.sum(dim=-1, keepdim=True)",
         "row_sum = row_sum * correction + p.sum(dim=-1, keepdim=True).float()"),
        ("acc = acc * correction + p @ v_block", "acc = acc * correction + (p @ v_block).float()"),
        ("return output.to(out_dtype), lse  #", "return output.to(out_dtype), lse.to(out_dtype)  #"),
    ])
    session = run_session(FLASH, "--impl", str(path))
    assert session.exit_code == 1, session.output
    reports = {"\n".join(report) for report in session.failure_reports()}
    large = next(r for r in reports if "scores of about +1e4" in r)
    assert "float32-accurate" in large and "this is precision, not the size of the scores" in large, large
    assert all("float32-accurate" in r for r in reports), reports  # the float64 follow-ups too
    assert session.slugs == set(), session.output


def test_saves_probabilities_counts_per_batch_and_head_and_names_the_shape(tmp_path):
    """lse kept as (b, h, n, 1) is n numbers per (batch, head): it passes (the style
    lse_column.py is graded in test_katas). The probabilities kept are named by their shape
    and their count per (batch, head), never a log-sum-exp's."""
    path = edited(BACKWARD, tmp_path, [(
        "        ctx.save_for_backward(q, k, v, out, lse)",
        "        ctx.save_for_backward(q, k, v, out, lse)\n"
        "        ctx.p = torch.softmax(q @ k.mT / math.sqrt(q.size(-1)), -1)")])
    session = run_session(BACKWARD, "--impl", str(path))
    assert session.slugs == {"saves-probabilities"}, session.output
    first = "\n".join(session.failure_reports()[0])
    assert "ctx.p, of shape (2, 2, 6, 9) (216 elements, 54 per (batch, head))" in first, first


def test_tiled_backward_with_view_on_a_transposed_grad_out_is_named(tmp_path):
    """A tiled backward that calls grad_out.view(...) (its untiled path never does) fails on
    the transposed grad_out the tiled check now hands it, named non-contiguous-view."""
    path = edited(BACKWARD, tmp_path, [(
        "            q_i, do_i = q[..., rows, :], grad_out[..., rows, :]",
        "            q_i = q[..., rows, :]\n"
        "            do_i = grad_out.view(*grad_out.shape[:-2], -1)[..., rows.start * q.size(-1):"
        "rows.stop * q.size(-1)].unflatten(-1, (-1, q.size(-1)))"
        " if block_size else grad_out[..., rows, :]")])
    session = run_session(BACKWARD, "--impl", str(path))
    assert session.exit_code == 1, session.output
    tiled = "\n".join(next(r for r in session.failure_reports() if "block_size=4" in r[0]))
    assert "[non-contiguous-view]" in tiled and "grad_out='non-contiguous'" in tiled, tiled


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
