"""What the READMEs and lessons claim about PyTorch, checked by running PyTorch; and the
repository's own documents (the contract, the README's kata table) kept honest.

Each claim below was once wrong in the teaching material (issue 13), so each is pinned
here, next to the words that state it, to keep the two from drifting apart again.
"""

from __future__ import annotations

import importlib.util
import math
import re
import subprocess
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from graders.core.registry import KATAS, REPO_ROOT, get


def text_of(relative: str) -> str:
    return (REPO_ROOT / relative).read_text()


def flat(text: str) -> str:
    """Prose with its line breaks, comment marks and runs of spaces made single spaces."""
    return " ".join(text.replace("\n#", "\n").split())


def solution(kata_id: str):
    kata = get(kata_id)
    spec = importlib.util.spec_from_file_location(f"_claims_reference_{kata.id}", kata.solution_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def flops(module, *args, grad: bool, **kwargs) -> dict[str, int]:
    """What FlopCounterMode counts for one call, by operator (an empty dict: nothing)."""
    with torch.set_grad_enabled(grad), FlopCounterMode(display=False) as counter:
        module(*args, **kwargs)
    return {str(op): count for op, count in counter.get_flop_counts().get("Global", {}).items()}


# --- kata 01: fully masked rows, .mT ---

def test_where_after_softmax_gives_nan_gradients_with_a_float_mask_only():
    """Kata 01's README and lesson: torch.where(all_blocked, 0, weights) fixes the forward
    pass; with a float -inf mask the query and every key get NaN gradients, with a bool mask
    they do not; neutralising the row before the softmax is right both ways."""
    readme = text_of("katas/01_attention/README.md")
    assert "torch.where(all_blocked, 0.0, weights)" in readme and "every key" in readme
    blocked = torch.zeros(3, 5, dtype=torch.bool)
    blocked[1] = True

    def gradients(mask, neutralise_first):
        query = torch.randn(3, 4, requires_grad=True)
        key = torch.randn(5, 4, requires_grad=True)
        scores = query @ key.mT / 2
        scores = scores.masked_fill(mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
        all_blocked = torch.isneginf(scores).all(-1, keepdim=True)
        if neutralise_first:
            weights = scores.masked_fill(all_blocked, 0.0).softmax(-1).masked_fill(all_blocked, 0.0)
        else:
            weights = torch.where(all_blocked, 0.0, scores.softmax(-1))
        assert not weights.isnan().any() and weights[1].eq(0).all()
        (weights * torch.randn(3, 5)).sum().backward()
        return query.grad, key.grad

    float_mask = torch.zeros(3, 5).masked_fill(blocked, float("-inf"))
    query_grad, key_grad = gradients(float_mask, neutralise_first=False)
    assert query_grad[1].isnan().all() and key_grad.isnan().any(-1).all()
    for mask, neutralise_first in ((blocked, False), (blocked, True), (float_mask, True)):
        assert all(g.isfinite().all() for g in gradients(mask, neutralise_first))


def test_multihead_attention_gives_nan_on_fully_masked_rows():
    """Kata 01's README: equal to nn.MultiheadAttention except on fully masked rows, where
    it gives NaN with its default need_weights=True, and zeros (out_proj's bias) without."""
    readme = text_of("katas/01_attention/README.md")
    assert "except on fully masked rows" in readme and "default `need_weights=True`" in readme
    attention = nn.MultiheadAttention(8, 1, batch_first=True)
    x = torch.randn(1, 3, 8)
    mask = torch.zeros(3, 3, dtype=torch.bool)
    mask[1] = True
    output, _ = attention(x, x, x, attn_mask=mask)
    assert output[0, 1].isnan().all() and not output[0, 0].isnan().any()
    output, _ = attention(x, x, x, attn_mask=mask, need_weights=False)
    torch.testing.assert_close(output[0, 1], attention.out_proj.bias)


def test_dot_T_on_three_axes_is_deprecated_and_mT_is_not():
    lesson = text_of("notebooks/lessons/01_attention.py")
    assert "key.mT" in lesson and "deprecates" in lesson
    batched = torch.randn(2, 5, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert batched.mT.shape == (2, 4, 5)
        with pytest.raises((UserWarning, RuntimeError)):
            batched.T  # noqa: B018


def test_softmax_overflows_unless_the_maximum_is_subtracted():
    assert "about 88 in float32" in text_of("notebooks/lessons/01_attention.py")
    assert torch.tensor(88.0).exp().isfinite() and torch.tensor(89.0).exp().isinf()
    big = torch.tensor([1000.0, 999.0, 990.0])
    assert (big.exp() / big.exp().sum()).isnan().all()
    stable = (big - big.max()).exp() / (big - big.max()).exp().sum()
    torch.testing.assert_close(stable, big.softmax(-1))


# --- kata 04: -1e9 and float16, the fallback picture ---

def test_minus_1e9_masked_fill_on_float16_raises_while_a_cast_gives_minus_inf():
    for text in (text_of("katas/04_masks/README.md"), text_of("notebooks/lessons/04_masks.py")):
        assert "torch.finfo" in text and "raises" in text
        assert "overflows to −∞ anyway" not in text
    half = torch.zeros(3, dtype=torch.float16)
    with pytest.raises(RuntimeError):
        half.masked_fill(torch.tensor([True, False, False]), -1e9)
    assert torch.tensor(-1e9).half().item() == float("-inf")
    filled = half.masked_fill(torch.tensor([True, False, False]), torch.finfo(torch.float16).min)
    assert filled[0].item() == -65504.0


def test_lesson_04_fallback_picture_blocks_the_padding():
    """The fallback picture used to give PyTorch's merge_masks a bool padding mask next to a
    float causal mask: PyTorch then adds True as +1.0 and blocks nothing."""
    assert "padding_as_float" in text_of("notebooks/lessons/04_masks.py")
    causal = nn.Transformer.generate_square_subsequent_mask(4)
    padding = torch.arange(4)[None, :] >= torch.tensor([4, 2])[:, None]  # (b, m)
    attention = nn.MultiheadAttention(8, num_heads=2, batch_first=True)
    as_bool, _ = attention.merge_masks(causal, padding, torch.zeros(2, 4, 8))
    assert as_bool[1, 0, 3, 2].item() == 1.0, "PyTorch adds a bool padding mask as +1"
    padding_as_float = torch.zeros(2, 4).masked_fill(padding, float("-inf"))
    merged, _ = attention.merge_masks(causal, padding_as_float, torch.zeros(2, 4, 8))
    blocked = merged.reshape(4, 4, 4).isinf()
    assert blocked[2:, :, 2:].all(), "batch 1's padded keys are blocked for every query"
    assert torch.equal(blocked[0], causal.isinf()) and torch.equal(blocked[1], causal.isinf())


# --- kata 05: frequencies, precision, broadcasting, RoPE, sqrt(d_model) ---

def test_last_frequency_is_base_to_the_minus_d_minus_2_over_d():
    lesson = text_of("notebooks/lessons/05_positional_encoding.py")
    assert "almost 1/base" not in lesson and "0.001" in lesson and "1.04·10⁻⁴" in lesson
    for d_model, expected in ((8, 0.001), (512, 1.04e-4)):
        last = 10000.0 ** (-2 * (d_model // 2 - 1) / d_model)
        assert last == pytest.approx(expected, rel=0.01)
        table = solution("05").sinusoidal_positional_encoding(2, d_model).double()
        assert math.asin(table[1, d_model - 2].item()) == pytest.approx(last, rel=1e-3)


def test_float32_table_error_at_position_5000_is_a_few_1e_4():
    assert "a few 1e-4 at position 5000" in text_of("katas/05_positional_encoding/README.md")
    positions = torch.arange(5000, dtype=torch.float64)[:, None]
    two_i = torch.arange(0, 512, 2, dtype=torch.float64)
    exact = (positions / 10000.0 ** (two_i / 512)).sin()
    float32 = (positions.float() / 10000.0 ** (two_i.float() / 512)).sin().double()
    error = (float32 - exact).abs().max().item()
    assert 1e-4 <= error < 1e-3


def test_seq_first_batch_of_one_broadcasts_silently():
    assert "batch = 1" in text_of("notebooks/lessons/05_positional_encoding.py")
    assert (torch.zeros(5, 1, 8) + torch.zeros(5, 8)).shape == (5, 5, 8)
    with pytest.raises(RuntimeError):
        torch.zeros(5, 2, 8) + torch.zeros(5, 8)


def test_rope_rotates_each_by_its_own_position():
    readme = text_of("katas/05_positional_encoding/README.md")
    assert "by the same angles" not in readme and "its *own*" in readme and "never the values" in readme
    theta = 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)

    def rotate(v, position):  # pairs (2i, 2i+1)
        pairs = v.view(4, 2)
        cos, sin = torch.cos(position * theta), torch.sin(position * theta)
        return torch.stack([pairs[:, 0] * cos - pairs[:, 1] * sin,
                            pairs[:, 0] * sin + pairs[:, 1] * cos], -1).flatten()

    q, k = torch.randn(8, dtype=torch.float64), torch.randn(8, dtype=torch.float64)
    assert torch.allclose(rotate(q, 9) @ rotate(k, 4), rotate(q, 1005) @ rotate(k, 1000))
    same_angles = rotate(q, 9) @ rotate(k, 9)  # rotating both by the same angle: no position at all
    assert torch.allclose(same_angles, q @ k)


def test_scaled_embeddings_match_the_table_in_size():
    embedding = nn.Embedding(1000, 512)
    nn.init.normal_(embedding.weight, std=512 ** -0.5)
    assert (embedding.weight * math.sqrt(512)).std().item() == pytest.approx(1.0, abs=0.02)
    table = solution("05").sinusoidal_positional_encoding(1000, 512)
    assert 0.6 < table.std().item() < 0.75
    assert "some 15 times smaller" in text_of("notebooks/lessons/05_positional_encoding.py")
    assert 14 < table.std().item() / embedding.weight.std().item() < 16.5


# --- kata 06: the tuple, LayerNorm vs BatchNorm ---

def test_self_attn_returns_a_tuple():
    assert "key_padding_mask=src_key_padding_mask)[0])" in text_of("katas/06_encoder_layer/README.md")
    attention = nn.MultiheadAttention(8, 2)
    x = torch.randn(3, 2, 8)
    result = attention(x, x, x, need_weights=False)
    assert isinstance(result, tuple) and result[1] is None


# --- kata 07: what FlopCounterMode counts ---

def test_flop_counter_counts_the_seq_first_layout_in_eval_no_grad():
    """Kata 07's README: nothing is counted in eval mode under no_grad only with batch-first
    inputs (the fused fast path); with (l, b, d) the projections are still counted, and on
    the CPU need_weights=False hides the attention matmuls."""
    readme = text_of("katas/07_flops/README.md")
    assert "with `batch_first=True`" in readme and "CUDA flash" in readme
    assert "(graded as follow-up checks)" not in readme
    torch.manual_seed(0)
    seq_first = nn.MultiheadAttention(16, 2).eval()
    batch_first = nn.MultiheadAttention(16, 2, batch_first=True).eval()
    batch_first.load_state_dict(seq_first.state_dict())
    x = torch.randn(12, 4, 16)  # (l, b, d)
    l, b, d = x.shape
    projections = 4 * 2 * l * b * d * d
    tokens = x.transpose(0, 1).contiguous()  # (b, l, d); the fast path wants query is key is value
    for need_weights in (False, True):
        assert flops(batch_first, tokens, tokens, tokens, grad=False, need_weights=need_weights) == {}
    assert flops(seq_first, x, x, x, grad=False, need_weights=False) == {"aten.addmm": projections}
    assert sum(flops(seq_first, x, x, x, grad=False, need_weights=True).values()) == (
        projections + 2 * 2 * l * l * b * d)
    assert flops(seq_first.train(), x, x, x, grad=True, need_weights=False) == {"aten.addmm": projections}


def test_flop_counter_counts_cuda_attention_kernels_but_not_the_cpu_one():
    """Kata 07's README: the missed attention matmuls are a CPU matter. The CPU fused kernel
    has no FLOP formula; the CUDA flash, memory-efficient and cuDNN kernels have one (checked
    in the counter's registry, so that no GPU is needed)."""
    from torch.utils.flop_counter import flop_registry

    aten = torch.ops.aten
    for kernel in (aten._scaled_dot_product_flash_attention,
                   aten._scaled_dot_product_efficient_attention,
                   aten._scaled_dot_product_cudnn_attention):
        assert kernel in flop_registry, kernel
    assert aten._scaled_dot_product_flash_attention_for_cpu not in flop_registry
    q = torch.randn(1, 2, 8, 4)
    with FlopCounterMode(display=False) as counter:
        torch.nn.functional.scaled_dot_product_attention(q, q, q)
    assert counter.get_total_flops() == 0


def test_training_cost_rules_of_thumb():
    """Kata 07's lesson: backward = 2 x forward, about 6 N FLOPs per token, about 12 d^2
    parameters per layer."""
    with torch.device("meta"):
        layer = nn.TransformerEncoderLayer(512, 8, dim_feedforward=2048)
        x = torch.empty(64, 4, 512, requires_grad=True)
        with FlopCounterMode(display=False) as forward:
            out = layer(x)
        with FlopCounterMode(display=False) as backward:
            out.sum().backward()
    parameters = sum(p.numel() for p in layer.parameters())
    assert backward.get_total_flops() == 2 * forward.get_total_flops()
    per_token = (forward.get_total_flops() + backward.get_total_flops()) / (64 * 4)
    assert 6.0 <= per_token / parameters <= 6.5
    assert parameters == pytest.approx(12 * 512**2, rel=0.01)


# --- the staple follow-ups the lessons answer (issue 17) ---

def test_lesson_09_shifted_labels_ignore_index_and_label_smoothing():
    """Labels are tgt[:, 1:]; ignore_index averages over the real labels only; label
    smoothing aims at 1 - eps on the right token plus eps / V on every token."""
    lesson = text_of("notebooks/lessons/09_transformer.py")
    assert "`tgt[:, 1:]`" in lesson and "ignore_index=pad" in lesson and "label_smoothing=0.1" in lesson
    torch.manual_seed(0)
    logits, labels = torch.randn(8, 12), torch.tensor([9, 4, 5, 2, 7, 2, 0, 0])  # pad = 0
    real = labels != 0
    ignored = nn.CrossEntropyLoss(ignore_index=0)(logits, labels)
    assert torch.allclose(ignored, nn.functional.cross_entropy(logits[real], labels[real]))
    target = torch.full((8, 12), 0.1 / 12).scatter_add(1, labels[:, None], torch.full((8, 1), 0.9))
    smoothed = nn.functional.cross_entropy(logits, labels, label_smoothing=0.1)
    assert torch.allclose(smoothed, -(target * logits.log_softmax(-1)).sum(-1).mean())


def test_lesson_10_vit_without_positions_is_permutation_equivariant():
    assert "permutation-equivariant" in text_of("notebooks/lessons/10_vit.py")
    torch.manual_seed(0)
    block = nn.TransformerEncoderLayer(16, 2, 64, 0.0, "gelu", 1e-6, batch_first=True, norm_first=True)
    tokens, shuffle = torch.randn(2, 24, 16), torch.randperm(24)
    positions = 0.02 * torch.randn(1, 24, 16)
    with torch.no_grad():
        assert torch.allclose(block(tokens)[:, shuffle], block(tokens[:, shuffle]), atol=1e-5)
        assert not torch.allclose(block(tokens + positions)[:, shuffle],
                                  block(tokens[:, shuffle] + positions), atol=1e-5)
    grid = torch.randn(1, 768, 14, 14)
    resized = nn.functional.interpolate(grid, size=(24, 24), mode="bicubic", align_corners=False)
    assert resized.flatten(2).shape == (1, 768, 576)


def test_lesson_11_decode_is_memory_bound_and_prefill_compute_bound():
    lesson = text_of("notebooks/lessons/11_kv_cache.py")
    assert "1,979 TFLOP/s" in lesson and "3.35 TB/s" in lesson and "about 1 FLOP per byte" in lesson
    ridge, d = 1979e12 / 2 / 3.35e12, 4096

    def intensity(tokens):  # (tokens, d) @ (d, d) in bfloat16: weight, input and output moved
        return 2 * tokens * d * d / (2 * (d * d + 2 * tokens * d))

    assert round(ridge) == 295 and round(intensity(1), 1) == 1.0
    assert intensity(64) < ridge < intensity(4096)
    assert 4 * 4096 * d / (2 * 2 * 4096 * d) == 1.0  # attention over the cache: any batch


def test_lesson_12_long_context_scalings():
    """Position interpolation keeps every angle in the trained range; NTK-aware scaling
    keeps pair 0 and slows the last pair by exactly s."""
    lesson = text_of("notebooks/lessons/12_rope.py")
    assert "base · s^(d/(d−2))" in lesson and "500,000" in lesson and "past_len + arange(t)" in lesson
    d, s = 128, 8
    i = torch.arange(d // 2, dtype=torch.float64)
    w, w_ntk = 10000.0 ** (-2 * i / d), (10000.0 * s ** (d / (d - 2))) ** (-2 * i / d)
    assert w_ntk[0] == w[0] == 1.0 and torch.isclose(w[-1] / w_ntk[-1], torch.tensor(8.0, dtype=torch.float64))
    assert ((w / w_ntk)[1:-1] < s).all() and ((w / w_ntk)[1:] > 1).all()
    assert int((2 * math.pi / w > 4096).sum()) == 18  # the pairs that never finish a turn in 4096


def test_lesson_14_flash_attention_tiles_io_and_backward():
    lesson = text_of("notebooks/lessons/14_flash_attention.py")
    assert "B_c = ⌈M / 4d⌉" in lesson and "Θ(N² d² / M)" in lesson and "exp(S − lse)" in lesson
    sram, d = 192 * 1024 // 2, 64
    block_c = math.ceil(sram / (4 * d))
    block_r = min(block_c, d)
    assert (block_c, block_r) == (384, 64)
    assert 2 * block_r * d + 2 * block_c * d + block_r * block_c <= sram
    for n in (1024, 4096, 16384):
        standard = 4 * n * d + 4 * n * n
        fa1 = 2 * n * d + math.ceil(n / block_c) * n * (3 * d + 4)
        assert 6 < standard / fa1 < 8
    torch.manual_seed(0)
    q, k, v = (torch.randn(32, 8, dtype=torch.float64, requires_grad=True) for _ in range(3))
    scores = q @ k.mT / 8 ** 0.5
    out = scores.softmax(-1) @ v
    grad_out = torch.randn(32, 8, dtype=torch.float64)
    out.backward(grad_out)
    with torch.no_grad():
        p = torch.exp(q @ k.mT / 8 ** 0.5 - torch.logsumexp(scores, -1, keepdim=True))
        ds = p * (grad_out @ v.mT - (grad_out * out).sum(-1, keepdim=True))
        assert torch.allclose(p.mT @ grad_out, v.grad)
        assert torch.allclose(ds @ k / 8 ** 0.5, q.grad) and torch.allclose(ds.mT @ q / 8 ** 0.5, k.grad)


def test_lesson_15_llama_block_claims_by_running_them():
    """Kata 15's README, lesson and quiz (teaching review 2026-11-28, F6-F8, N2-N4, Q):
    Hugging Face's RMSNorm order, where bfloat16 loses its digits, bfloat16's spacing near
    16000, Meta's MLP widths, which Llamas are grouped, and the follow-ups' numbers."""
    from graders.frontends import quiz as quiz_module

    readme = flat(text_of("katas/15_llama_block/README.md"))
    lesson = flat(text_of("notebooks/lessons/15_llama_block.py"))
    questions = quiz_module.questions("15")
    # F8: Llama 2 7B/13B are multi-head; Qwen2 has q/k/v biases; Mistral adds the window
    assert "Llama 2 and 3, Mistral and Qwen2 are stacks" not in readme
    assert "Llama 2's 7B and 13B give every query head its own" in readme
    assert "Qwen2's adds biases" in readme and "sliding window (kata 18)" in readme
    # F6: cast back first, then the weight; the other order differs in about a quarter
    reference = solution("15")
    assert "casts back *first*" in readme and "a quarter of the entries" in readme
    assert "self.weight * normed.to(x.dtype)" in text_of("solutions/15_llama_block/llama_block.py")
    for seed in range(3):
        torch.manual_seed(seed)
        xb = torch.randn(256, 4096).bfloat16()
        wb = (1 + 0.1 * torch.randn(4096)).bfloat16()
        wide = xb.float()
        normed = wide * torch.rsqrt(wide.pow(2).mean(-1, keepdim=True) + 1e-6)
        hf_order = wb * normed.to(torch.bfloat16)
        one_cast = (normed * wb.float()).to(torch.bfloat16)
        assert 0.2 < (hf_order != one_cast).float().mean().item() < 0.3
        assert ((hf_order.float() - one_cast.float()).abs() <= 2 ** -7 * hf_order.float().abs()).all()
        norm = reference.RMSNorm(4096).bfloat16()
        with torch.no_grad():
            norm.weight.copy_(wb)
        assert torch.equal(norm(xb), hf_order)
        # F7: the reduction accumulates in float32; roundings cost up to 2^-8; a bf16 sum far more
        exact = xb.double().pow(2).mean(-1)
        pytorch = xb.pow(2).mean(-1)
        assert torch.equal(pytorch, xb.pow(2).float().mean(-1).bfloat16())
        assert ((pytorch.double() - exact).abs() / exact).max() <= 2 ** -8 * 1.02
        running = torch.zeros(256, dtype=torch.bfloat16)
        for column in xb.pow(2).unbind(-1):
            running = running + column
        assert ((running.double() / 4096 - exact).abs() / exact).max() > 0.3
    assert torch.finfo(torch.bfloat16).eps == 2 ** -7  # 8 significant bits, 7 stored
    assert "2⁻⁸ ≈ 0.4 %" in lesson and "accumulate in float32" in lesson
    reasoning = questions[6].reasoning
    assert "8 significant bits (7 stored)" in reasoning and "accumulate in float32" in reasoning
    assert "8 bits of mantissa" not in reasoning and "only then multiplies by the weight" in reasoning
    assert torch.isinf(torch.tensor(257.0, dtype=torch.float16) ** 2) and 256.0 ** 2 > 65504
    # N3: bfloat16 holds even numbers on [256, 512), multiples of 64 near 16000
    assert "multiples of 64, so 16001 and 16030 are both 16000" in lesson
    for value, rounded in ((301.0, 300.0), (16001.0, 16000.0), (16030.0, 16000.0), (16040.0, 16064.0)):
        assert torch.tensor(value, dtype=torch.bfloat16).item() == rounded
    # N4: Meta's widths, ffn_dim_multiplier and multiple_of
    def ffn_width(dim, multiple_of=256, multiplier=None):
        hidden = int(2 * 4 * dim / 3)
        if multiplier is not None:
            hidden = int(multiplier * hidden)
        return multiple_of * -(-hidden // multiple_of)
    assert [ffn_width(4096), ffn_width(5120), ffn_width(8192, 4096, 1.3),
            ffn_width(4096, 1024, 1.3)] == [11008, 13824, 28672, 14336]
    assert int(1.3 * 10922) == 14198 and "14198" in questions[1].reasoning
    assert "3.5 · 4096)" not in questions[1].reasoning
    # N2: Hugging Face's sdpa path pairs the kv heads itself only without a mask
    assert "only when no attention mask is passed" in lesson
    # Q3: cost per token and rope_theta's slowest pair
    weights = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096) + 128256 * 4096
    with torch.device("meta"):
        block = reference.LlamaBlock(4096, 32, 8, 14336)
        assert weights == 32 * sum(p.numel() for p in block.parameters()) + 128256 * 4096
    assert round(2 * weights / 1e9, 1) == 15.0 and round(32 * 4 * 8192 * 4096 / 1e9, 1) == 4.3
    slowest = [2 * math.pi * base ** (126 / 128) for base in (10000.0, 500000.0)]
    assert 10_000 < slowest[0] < 100_000 and 1_000_000 < slowest[1] < 10_000_000
    assert "millions of positions, not tens of thousands" in lesson
    # Q1: column-parallel gate/up, row-parallel down: the partial outputs sum to the MLP
    gate, up, down, x = torch.randn(40, 16), torch.randn(40, 16), torch.randn(16, 40), torch.randn(3, 16)
    whole = (F.silu(x @ gate.T) * (x @ up.T)) @ down.T
    parts = [(F.silu(x @ g.T) * (x @ u.T)) @ d.T
             for g, u, d in zip(gate.chunk(4), up.chunk(4), down.chunk(4, dim=1))]
    torch.testing.assert_close(sum(parts), whole, rtol=1e-4, atol=1e-4)
    assert "two per block" in lesson and "keys are cached *after* RoPE" in lesson


def test_lesson_16_sampling_quiz_numbers_by_running_the_reference():
    """Every number of kata 16's quiz, by running the reference's filters and sampler."""
    from graders.frontends import quiz as quiz_module

    reference = solution("16")
    key = quiz_module.answer_key("16")
    questions = quiz_module.questions("16")
    logits = torch.tensor([2.0, 1.0, 0.0, -1.0])
    assert [round(p, 3) for p in torch.softmax(logits, -1).tolist()] == [0.644, 0.237, 0.087, 0.032]
    assert key[1] == int(torch.isfinite(reference.top_p_filter(logits, 0.7)).sum()) == 2
    assert int(torch.isfinite(reference.top_p_filter(logits, 0.6)).sum()) == 1
    tempered = torch.softmax(reference.apply_temperature(logits.double(), 0.5), -1)[0].item()
    assert key[2] == pytest.approx(tempered, rel=1e-9) and "0.865" in questions[1].reasoning
    assert round(tempered, 3) == 0.865
    # 3: the argmax, and the limit it implements
    assert key[3] == "B" and int(reference.sample(logits, temperature=0)) == 0
    assert torch.softmax(logits / 1e-3, -1)[0].item() == 1.0
    assert torch.isnan(torch.softmax(torch.tensor([2.0, 1.0, 0.0]) / 0, -1)).all()
    # 4: flat, 1000 tokens of 0.001: exactly 900 have < 0.9 before them
    from fractions import Fraction
    assert key[4] == sum(Fraction(i, 1000) < Fraction(9, 10) for i in range(1000)) == 900
    flat = torch.zeros(1000, dtype=torch.float64)
    assert int(torch.isfinite(reference.top_p_filter(flat, 0.9 - 1e-9)).sum()) == 900
    # 5: peaked, 0.95 and 999 tokens sharing 0.05
    tail = torch.linspace(1, 2, 999, dtype=torch.float64)  # distinct: top-k keeps ties
    peaked = torch.cat([torch.tensor([0.95], dtype=torch.float64), 0.05 * tail / tail.sum()]).log()
    assert int(torch.isfinite(reference.top_k_filter(peaked, 50)).sum()) == 50
    assert int(torch.isfinite(reference.top_p_filter(peaked, 0.9)).sum()) == 1
    assert questions[4].choices[ord(key[5]) - ord("A")] == "top-k 50, top-p 1"
    # 6: min-p 0.1 at T = 1.5 on 4 plausible logits and 50,000 around -5 (teaching review F2)
    from graders.sampling import meta

    torch.manual_seed(0)
    tail = torch.randn(50_000, dtype=torch.float64) - 5
    assert tail.max() < meta.MIN_P_TAIL_MAX
    long_tail = torch.cat((torch.tensor(meta.MIN_P_HEAD, dtype=torch.float64), tail))
    probs = torch.softmax(long_tail / 1.5, -1)
    assert key[6] == int((probs >= 0.1 * probs.max()).sum()) == 4
    nucleus = int(torch.isfinite(reference.top_p_filter(long_tail / 1.5, 0.9)).sum())
    assert nucleus > 10_000 and "tens of thousands" in questions[5].reasoning
    assert "before the temperature" in questions[5].reasoning
    assert "keeps high temperatures coherent" not in questions[5].reasoning


def test_lesson_16_sampling_claims_by_running_them():
    """Kata 16's README and lesson (teaching review 2026-11-28, F1, F2, A4, Q): the order of
    the steps by stack, min-p's case (a long tail), where top-p's boundary is pinned, and the
    follow-ups' numbers."""
    readme = flat(text_of("katas/16_sampling/README.md"))
    lesson = flat(text_of("notebooks/lessons/16_sampling.py"))
    reference = solution("16")
    # F1: not "every serving stack"
    assert "every serving stack does it the same way" not in readme
    assert "llama.cpp's default chain divides by the temperature last" in readme
    # A4: the README pins the boundary by "smallest set ... reaches p", not by the rule
    assert "more probable than `i`** is `< p`" not in readme
    assert "keeps the **smallest** set of most probable tokens whose total probability **reaches** `p` (is `>= p`)" in readme
    torch.manual_seed(1)
    for _ in range(20):
        logits = torch.randn(3, 9, dtype=torch.float64) * 2
        p = float(torch.rand(()) * 0.9 + 0.05)
        kept = torch.isfinite(reference.top_p_filter(logits, p))
        ranked, order = torch.softmax(logits, -1).sort(-1, descending=True)
        for row in range(3):
            size = int((ranked[row].cumsum(0) < p).sum()) + 1  # the smallest prefix reaching p
            assert set(order[row, :size].tolist()) == set(kept[row].nonzero().flatten().tolist())
    # F2: on a short row min-p keeps as many or more; on a long tail it keeps the 4
    def top_p_count(probs, p):
        ranked = probs.sort(descending=True).values
        return int(((ranked.cumsum(0) - ranked) < p).sum())

    def min_p_count(probs, min_p):
        return int((probs >= min_p * probs.max()).sum())

    row = torch.tensor([3.0, 2.5, 2.0, 1.0, 0.0, -1.0, -2.0, -3.0])
    for temperature in (1.0, 1.5, 3.0):
        probs = torch.softmax(row / temperature, -1)
        assert min_p_count(probs, 0.1) > top_p_count(probs, 0.9)
    assert "keeps as many tokens or more at every T ≥ 1" in lesson
    torch.manual_seed(0)
    long_tail = torch.cat((torch.tensor([5.0, 4.5, 4.0, 3.0]), torch.randn(50_000) - 5)).double()
    for temperature in (1.0, 1.5, 2.0):
        probs = torch.softmax(long_tail / temperature, -1)
        assert min_p_count(probs, 0.1) == 4 and top_p_count(probs, 0.9) > 20_000
    assert torch.softmax(long_tail, -1)[4:].sum() > 0.5  # at T = 1 the tail holds most of the mass
    assert "At T = 1 the tail already holds most of the mass" in lesson
    assert "runs min-p (and top-k, top-p) *before* the temperature" in lesson
    # Q1: CTRL divides positive logits and multiplies negative ones; OpenAI subtracts
    logits, counts = torch.tensor([2.0, -1.0, 0.5, 1.0]), torch.tensor([2, 1, 0, 0])
    ctrl = torch.where(counts > 0, torch.where(logits > 0, logits / 1.3, logits * 1.3), logits)
    assert (ctrl[:2] < logits[:2]).all() and torch.equal(ctrl[2:], logits[2:])
    # Q2: speculative sampling's output distribution is the target's, for any draft
    for seed in range(5):
        torch.manual_seed(seed)
        target = torch.softmax(torch.randn(6, dtype=torch.float64), -1)
        draft = torch.softmax(torch.randn(6, dtype=torch.float64), -1)
        accepted = draft * torch.clamp(target / draft, max=1.0)
        residual = torch.clamp(target - draft, min=0.0)
        torch.testing.assert_close(accepted + (1 - accepted.sum()) * residual / residual.sum(), target)
    # Q3: a top-k prefilter with the whole row's probabilities keeps top-p's tokens
    big = 3 * torch.randn(128_256, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    probs = torch.softmax(big, -1)
    head = probs.topk(16384).values
    assert head.sum() > 0.9 and int(((head.cumsum(0) - head) < 0.9).sum()) == top_p_count(probs, 0.9)
    renormalised = torch.softmax(big.topk(16384).values, -1)
    assert top_p_count(renormalised, 0.9) < top_p_count(probs, 0.9), "renormalising changes it"


# --- the catalogue's wording ---

def test_non_contiguous_view_explanation_is_precise():
    """PyTorch refuses a view after a transpose only when it merges dimensions that are not
    in memory order; splitting or keeping them works."""
    from graders.core.catalogue import MISTAKES

    assert "not laid out in that order" in MISTAKES["non-contiguous-view"].explanation
    transposed = torch.randn(2, 3, 4).transpose(1, 2)  # (2, 4, 3), non-contiguous
    assert transposed.view(2, 4, 3, 1).shape == (2, 4, 3, 1)  # no merge: fine
    assert transposed.view(2, 2, 2, 3).shape == (2, 2, 2, 3)  # a split: fine
    with pytest.raises(RuntimeError):
        transposed.view(2, 12)  # merges the swapped axes


# --- the repository's own documents ---

def tracked_files() -> list:
    try:
        listed = subprocess.run(["git", "ls-files"], cwd=REPO_ROOT, capture_output=True,
                                text=True, check=True).stdout.splitlines()
        return [REPO_ROOT / name for name in listed]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: every file
        skip = {".git", ".venv", "venv", ".kata", "__pycache__", ".pytest_cache", "site-packages"}
        return [path for path in REPO_ROOT.rglob("*")
                if path.is_file() and not skip & set(path.relative_to(REPO_ROOT).parts)]


def test_nothing_points_outside_the_repository():
    """The contract lives in CONTRACT.md; no file may send a reader to a sibling folder that
    a clone does not have."""
    outside = ("../" + "shared", "KATAS" + ".md", "/work" + "/")
    offenders = []
    for path in tracked_files():
        if not path.is_file():
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        offenders += [f"{path.relative_to(REPO_ROOT)}: {word}" for word in outside if word in text]
    assert not offenders, offenders
    readme = text_of("README.md")
    assert "[CONTRACT.md](CONTRACT.md)" in readme
    assert "CONTRACT.md" in text_of("graders/core/catalogue.py")


def test_contract_covers_every_kata_and_every_catalogued_slug_it_names():
    contract = text_of("CONTRACT.md")
    for number in range(1, 15):
        assert re.search(rf"^### {number:02d}_\w+ — `\w+\.py`", contract, re.M), number
    for kata in KATAS:
        assert f"### {kata.name} — `{kata.file}`" in contract, kata.name
        section = contract.split(f"### {kata.name} — ")[1].split("\n### ")[0].split("\n## ")[0]
        listed = re.search(r"^- Slugs?:(.*?)(?=^- |\Z)", section, re.M | re.S)
        assert listed, f"{kata.name}: the contract lists no slugs"
        slugs = set(re.findall(r"`([a-z0-9]+(?:-[a-z0-9]+)+)`", listed.group(1)))
        assert slugs and slugs <= set(kata.mistakes) | {"forbidden-builtin"}, (
            f"{kata.name}: the contract names slugs its grader does not recognise: "
            f"{sorted(slugs - set(kata.mistakes))}")


# The README's two speed tables (benchmarks/grader_speed.py, benchmarks/verdict_speed.py), by
# the first cells of their header row in each language.
SPEED_TABLES = {"README.md": ("| kata | grading (s) |", "| kata | fresh Python (s) |"),
                "README.zh-CN.md": ("| 练习 | 评分（s） |", "| 练习 | 全新 Python（s） |")}


@pytest.mark.parametrize("edition", sorted(SPEED_TABLES))
def test_readme_speed_tables_have_a_row_for_every_kata(edition):
    """A new kata is measured: grading next to import torch, and the room's verdict."""
    text = text_of(edition)
    for header in SPEED_TABLES[edition]:
        assert header in text, f"{edition}: no table headed {header!r}"
        table = text.split(header, 1)[1].split("\n\n", 1)[0]
        rows = set(re.findall(r"^\| (\d\d_\w+) \|", table, re.M))
        missing = [kata.name for kata in KATAS if kata.name not in rows]
        assert not missing, (f"{edition}: the table headed {header!r} has no row for "
                             f"{', '.join(missing)} (python benchmarks/grader_speed.py --kata NN; "
                             "python benchmarks/verdict_speed.py --kata NN)")


def test_readme_kata_table_shows_difficulty_and_mock_target_from_the_registry():
    readme = text_of("README.md")
    assert "| kata | you write | difficulty | mock target | file |" in readme
    rows = re.findall(r"^\| `(\d\d_\w+)` \| [^|]+ \| (\w+) \| (\d+) min \| `[^`]+` \|$", readme, re.M)
    assert sorted(name for name, _, _ in rows) == [k.name for k in KATAS], \
        "the README's tables list every kata of the registry"
    for name, difficulty, minutes in rows:
        kata = get(name)
        assert (difficulty, int(minutes)) == (kata.difficulty, kata.target_minutes), name
    assert "a few minutes" in readme.split("## The katas")[0], "the quick start says how long"


def test_lesson_19_backward_numbers_by_running_the_reference():
    """Kata 19's quiz: rows of dS sum to 0, D = rowsum(dO ∘ O) = rowsum(P ∘ dP), the
    backward's matmul FLOPs 2.5 times the forward's (FlopCounterMode on the reference), the
    causal tiles computed, lse's 4 MiB."""
    import importlib.util

    from torch.utils.flop_counter import FlopCounterMode

    from graders.attention_backward import meta
    from graders.frontends import quiz as quiz_module

    spec = importlib.util.spec_from_file_location(
        "reference_19", "solutions/19_attention_backward/attention_backward.py")
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 16, 8, dtype=torch.float64) for _ in range(3))
    out, lse = reference.attention_forward(q, k, v)
    grad_out = torch.randn_like(out)
    p = torch.softmax(q @ k.mT / 8 ** 0.5, -1)
    dp = grad_out @ v.mT
    d = (grad_out * out).sum(-1, keepdim=True)
    assert torch.allclose(d, (p * dp).sum(-1, keepdim=True))
    assert torch.allclose((p * (dp - d)).sum(-1), torch.zeros(1, 2, 16, dtype=torch.float64), atol=1e-12)
    with FlopCounterMode(display=False) as forward:
        reference.attention_forward(q, k, v)
    with FlopCounterMode(display=False) as backward:
        reference.attention_backward(q, k, v, out, lse, grad_out)
    ratio = backward.get_total_flops() / forward.get_total_flops()
    questions = quiz_module.questions("19")
    assert ratio == questions[3].answer == 2.5
    assert forward.get_total_flops() == meta.attention_matmul_flops(16, 16, 8) * 2  # 2 heads
    tiles = sum(1 for i in range(8) for j in range(8) if j <= i)
    assert (tiles, 8) == meta.causal_tiles(1024, 128) and questions[6].answer == 36
    with torch.device("meta"):
        assert torch.empty(32, 32768, dtype=torch.float32).nbytes == questions[4].answer * 2**20


def test_lesson_19_follow_ups_and_lse_in_float32_by_running_them():
    """Kata 19 after the 11-28 review: P is saved once (one storage, two shapes); lse rounded
    to bfloat16 makes P's rows sum to 1 ± 6 % (float16 ± 0.8 %), the quiz's 0.0625; the
    dlse term of dS; dK of a shared kv head is the sum over its query heads; Korthikanti's
    activation bytes for GPT-3 175B; the README leaves the formulas to the hints (A3) and
    says what FlashAttention keeps (N1); hint 1 counts three steps."""
    from graders.attention_backward import meta
    from graders.core.compare import lse_dtype
    from graders.frontends import quiz as quiz_module

    lesson = text_of("notebooks/lessons/19_attention_backward.py")
    readme = text_of("katas/19_attention_backward/README.md")
    questions = quiz_module.questions("19")
    # N1: the saved P is one storage seen with two shapes
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, n, 4, requires_grad=True) for n in (6, 9, 9))
    storages: dict[int, list] = {}

    def keep(tensor):
        storages.setdefault(tensor.untyped_storage().data_ptr(), []).append(tuple(tensor.shape))
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(keep, lambda tensor: tensor):
        torch.softmax(q @ k.mT / 2, -1) @ v
    assert [shapes for shapes in storages.values() if len(shapes) > 1] == [[(1, 2, 6, 9), (2, 6, 9)]]
    assert "P is kept **once**" in lesson and "saved by the softmax and again" not in lesson
    assert "O(n) extra memory (O and lse)" not in questions[0].reasoning
    assert "keeps only `q`, `k`, `v`, the\noutput `O`" in readme
    # A3 / L4: the formulas are the hints', not the README's; hint 1's three steps
    for formula in ("dS = P ∘ (dP - D)", "D = rowsum(dO ∘ O)`,", "dQ = s · dS K", "dV = Pᵀ dO"):
        assert formula not in readme, formula
    assert "dS = P ∘ (dP - D)" in meta.KATA.hints[1] and "three steps" in meta.KATA.hints[0]
    assert "`D_i = Σ_j P_ij dP_ij`. Show that it equals\n  `rowsum(dO ∘ O)`" in readme
    # F9: lse float32 for half inputs; the lesson's rounding numbers and the quiz's 0.0625
    assert lse_dtype(torch.bfloat16) == lse_dtype(torch.float16) == torch.float32
    assert questions[7].answer == meta.half_rounding(19.0, 8) == 0.0625
    assert meta.half_rounding(19.0, 11) == 0.0078125 and "± 6.5 %" in questions[7].reasoning
    assert abs(math.exp(0.0625) - 1.065) < 0.001 and abs(math.exp(0.0078125) - 1.008) < 0.001
    torch.manual_seed(0)
    with torch.no_grad():
        wide_q, wide_k = (torch.randn(1, 1, 256, 64) * 2.2 for _ in range(2))
        scores = (wide_q @ wide_k.mT / 8).masked_fill(torch.ones(256, 256, dtype=torch.bool).triu(1),
                                                      float("-inf"))
        lse = scores.logsumexp(-1, keepdim=True)
        spread = {dtype: (torch.exp(scores - lse.to(dtype).float()).sum(-1) - 1).abs().max().item()
                  for dtype in (torch.bfloat16, torch.float16)}
    assert 16 < lse.max().item() < 32
    assert 0.05 < spread[torch.bfloat16] <= math.exp(0.0625) - 1 and 0.005 < spread[torch.float16] < 0.0079
    assert "1 ± 6 %, in float16 to 1 ± 0.8 %. That is why" in lesson
    # Q1: dS gains dlse · P when the loss depends on lse
    qa, ka, va = (torch.randn(1, 2, 6, 4, dtype=torch.float64, requires_grad=True) for _ in range(3))
    sa = qa @ ka.mT / 2
    lse_a = sa.logsumexp(-1)
    out_a = torch.exp(sa - lse_a[..., None]) @ va
    d_out, d_lse = torch.randn_like(out_a), torch.randn_like(lse_a)
    dq = torch.autograd.grad((out_a * d_out).sum() + (lse_a * d_lse).sum(), qa)[0]
    with torch.no_grad():
        pa = torch.exp(sa - lse_a[..., None])
        ds = pa * (d_out @ va.mT - (d_out * out_a).sum(-1, keepdim=True) + d_lse[..., None])
    assert torch.allclose(ds @ ka / 2, dq) and "`dS = P ∘ (dP − D + dlse)`" in lesson
    # Q4: GQA, the shared head's dK is the sum over its query heads
    qg = torch.randn(1, 8, 6, 4, dtype=torch.float64)
    kg = torch.randn(1, 1, 9, 4, dtype=torch.float64, requires_grad=True)
    vg = torch.randn(1, 1, 9, 4, dtype=torch.float64)
    og = torch.softmax(qg @ kg.expand(1, 8, 9, 4).mT / 2, -1) @ vg.expand(1, 8, 9, 4)
    dog = torch.randn_like(og)
    dk_shared = torch.autograd.grad((og * dog).sum(), kg)[0]
    with torch.no_grad():
        pg = torch.softmax(qg @ kg.mT / 2, -1)
        per_head = (pg * (dog @ vg.mT - (dog * og).sum(-1, keepdim=True))).mT @ qg / 2
    assert torch.allclose(per_head.sum(1, keepdim=True), dk_shared) and "**sums** of the 8 heads'" in lesson
    # Q2, Q5: the mask's bytes; Korthikanti et al.'s activation bytes for GPT-3 175B
    assert 32768 * 32768 * 32 == 32 * 2**30 and "32 GiB per layer" in lesson and "Philox" in lesson
    linear, attention = 2048 * 12288 * 34, 5 * 96 * 2048 ** 2
    assert (round(linear / 2**20), attention // 2**20, round(100 * attention / (linear + attention))) == (816, 1920, 70)
    assert "Korthikanti et al. (2022)" in lesson and "`deterministic=True`" in lesson
    assert len(questions) == 8


# --- katas 17 and 18 (issue 23: teaching review F3, F4, F5, N5, N6, A1, A5, L3) ---

def test_lesson_17_greedy_loses_to_a_finished_beam_hypothesis():
    """The README's model: greedy ends at [bos, a, eos] (0.175); a beam of 2 finds the
    finished [bos, b, eos] (0.34, score log(0.34) / 2), by running the reference. The
    README, lesson and quiz show those numbers; CS224n is a basis, not the version; the
    "beam search curse" gives no fixed width; the specification is said to be one."""
    from graders.beam_search import checks as grader
    from graders.frontends import quiz as quiz_module

    reference = solution("17")
    table = grader.README_TABLE

    def step_fn(tokens):
        return torch.stack([table.row(tuple(row)) for row in tokens.tolist()])

    greedy = reference.beam_search(step_fn, 0, 1, 1, 4)
    beam = reference.beam_search(step_fn, 0, 1, 2, 4)
    assert [t for t, _s in greedy] == [[0, 2, 1]] and [t for t, _s in beam] == [[0, 3, 1], [0, 2, 1]]
    assert all(t[-1] == 1 for t, _s in beam), "both hypotheses finished"
    assert round(math.exp(greedy[0][1] * 2), 3) == 0.175 and round(math.exp(beam[0][1] * 2), 3) == 0.34
    readme, lesson = text_of("katas/17_beam_search/README.md"), text_of("notebooks/lessons/17_beam_search.py")
    row = "[0.04, 0.85, 0.05, 0.06]"
    assert row in readme and row in lesson and tuple(table.probabilities[3]) == (0.04, 0.85, 0.05, 0.06)
    assert repr(beam) in readme and repr(greedy) in readme
    assert "0.34" in readme and "0.175" in readme
    assert "0.34" in quiz_module.questions("17")[0].reasoning
    assert "based on the one in Stanford's CS224n" in readme
    assert "about 5" not in lesson and "Koehn" in lesson
    assert "are the specification" in readme


def test_lesson_18_windows_sinks_and_memory_numbers():
    """Mistral's convention (i - W … i, W + 1 keys: 32 × 4096 = 131,072 exact) against this
    kata's (W keys: 32 × 4095); the gathered keys 32 times the memory rule's limit at
    n = 32k; StreamingLLM's in-cache positions; the tiles a windowed kernel keeps; no
    "rounds" or "first release" claim; hint rung 2 on query blocks."""
    from graders.sliding_window import meta

    n, W = 12, 4
    mistral = torch.ones(n, n).tril(diagonal=0).triu(diagonal=-W).bool()  # one_file_ref.py
    ours = ~solution("18").sliding_window_mask(n, W)
    assert int(mistral[-1].sum()) == W + 1 and int(ours[-1].sum()) == W
    assert 32 * 4096 == 131_072 and meta.sliding_window_reach(32, 4096) == 131_040
    lesson = text_of("notebooks/lessons/18_sliding_window.py")
    readme = text_of("katas/18_sliding_window/README.md")
    quiz_texts = " ".join(q.reasoning for q in meta.QUESTIONS)
    for text in (lesson, readme, quiz_texts, " ".join(m.explanation for m in meta.MISTAKES)):
        assert "rounds" not in text and "first release" not in text
    assert "32 × 4096 = 131,072" in lesson and "i − W … i" in lesson
    gathered, limit = 32768 * (4096 + 4) * 128, 32768**2 // 2
    assert gathered == 17_196_646_400 and round(gathered / limit) == 32
    assert "demo-only" in readme and "17.2 · 10⁹" in readme and "32 times the limit" in readme
    # StreamingLLM: cache [0, 1, 2, 3, 6, 7, 8] decoding text position 9 -> 0 … 6 and 7
    cached = [0, 1, 2, 3, 6, 7, 8]
    assert list(range(len(cached))) == [0, 1, 2, 3, 4, 5, 6] and len(cached) == 7
    assert "`[0, 1, 2, 3, 6, 7, 8]`" in lesson and "before** RoPE" in lesson
    # tiles of 128 at n = 32k, window = 4k: 33 key tiles per query tile at most
    tiles = [sum(1 for kb in range(qb + 1) if qb * 128 - ((kb + 1) * 128 - 1) < 4096) for qb in range(256)]
    assert (sum(tiles), max(tiles), 256 * 257 // 2) == (7920, 33, 32896)
    rung2 = meta.KATA.hints[1]
    assert "blocks of window rows" in rung2 and "gather" not in rung2
