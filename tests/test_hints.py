"""The hint ladders: three rungs each, and every near-code rung of katas 01-07 runs and is right.

A near-code rung (the third) is a few lines of Python written against names the learner
has at that point (``scores``, ``x``, ``self`` ...). Each test below gives the rung exactly
those names, runs it, and compares what it computed with PyTorch or the reference
solution, so a hint can neither go stale nor teach a bug (kata 01's rung used to zero the
fully blocked rows after the softmax only, which gives NaN gradients with float masks;
kata 04's built ``arange`` on the CPU; kata 02's used an undefined ``h``).
"""

from __future__ import annotations

import copy
import importlib.util
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from graders.core import registry
from graders.core.registry import HINT_LEVELS, KATAS

FOUNDATIONS = [k for k in KATAS if k.track == "foundations"]


def run_rung(kata_id: str, **names) -> dict:
    """Execute kata ``kata_id``'s near-code rung with ``names`` defined; return its namespace."""
    namespace = {"torch": torch, "F": F, "nn": nn, "math": math, "copy": copy, **names}
    exec(compile(registry.get(kata_id).hints[2], f"<hint {kata_id}/3>", "exec"), namespace)
    return namespace


def solution(kata_id: str):
    kata = registry.get(kata_id)
    spec = importlib.util.spec_from_file_location(f"_hint_reference_{kata.id}", kata.solution_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("kata", KATAS, ids=lambda k: k.name)
def test_every_kata_has_a_three_rung_ladder(kata):
    assert len(kata.hints) == len(HINT_LEVELS) == 3
    nudge, idea, near_code = kata.hints
    assert nudge and idea and near_code
    assert len(nudge) < len(idea), "the nudge says less than the key idea"


@pytest.mark.parametrize("kata", FOUNDATIONS, ids=lambda k: k.name)
def test_the_key_idea_is_not_yet_code(kata):
    """Rung 2 explains; code comes at rung 3 (kata 02's rung 2 used to be the answer)."""
    idea = kata.hints[1]
    assert "\n" not in idea, "rung 2 is prose, not a block of code"
    if kata.id == "02":
        assert "view(" not in idea and "transpose(" not in idea, "rung 2 must not be the answer"


@pytest.mark.parametrize("kata", FOUNDATIONS, ids=lambda k: k.name)
def test_near_code_rung_compiles(kata):
    compile(kata.hints[2], f"<hint {kata.id}/3>", "exec")


# --- each near-code rung, run on real inputs ---

@pytest.mark.parametrize("mask_kind", ["bool", "float"])
def test_kata01_rung_gives_zero_rows_and_finite_gradients(mask_kind):
    torch.manual_seed(0)
    query = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    key = torch.randn(2, 5, 4, dtype=torch.float64, requires_grad=True)
    blocked = torch.rand(2, 3, 5) < 0.3
    blocked[..., 0] = False  # every query keeps a key ...
    blocked[0, 1] = True  # ... except query 1 of batch 0: every key blocked
    attn_mask = blocked if mask_kind == "bool" else torch.zeros(2, 3, 5, dtype=torch.float64).masked_fill(
        blocked, float("-inf"))
    scores = query @ key.transpose(-2, -1) / 2.0
    weights = run_rung("01", scores=scores, attn_mask=attn_mask)["weights"]
    expected = F.scaled_dot_product_attention(  # SDPA's bool mask means "may attend"
        query, key, torch.eye(5, dtype=torch.float64).expand(2, 5, 5), attn_mask=~blocked)
    assert torch.equal(weights[0, 1], torch.zeros(5, dtype=torch.float64))
    torch.testing.assert_close(weights, expected)
    (weights * torch.randn_like(weights)).sum().backward()
    assert torch.isfinite(query.grad).all() and torch.isfinite(key.grad).all()


def test_kata01_rung_is_not_the_whole_reference():
    near_code = registry.get("01").hints[2]
    assert "class " not in near_code and "def forward" not in near_code and "return" not in near_code


def test_kata02_rung_splits_merges_and_folds_batch_major():
    reference = solution("02")
    x = torch.randn(2, 5, 12)
    x_sf = torch.randn(5, 3, 12)
    ran = run_rung("02", x=x, num_heads=3, x_sf=x_sf)
    assert torch.equal(ran["heads"], reference.split_heads(x, 3))
    assert torch.equal(ran["merged"], x)
    assert torch.equal(ran["rows"], reference.split_heads_seq_first(x_sf, 3))


@pytest.mark.parametrize("bias", [True, False])
def test_kata03_rung_equals_multihead_attention(bias):
    torch.manual_seed(0)
    twin = nn.MultiheadAttention(8, 2, bias=bias, batch_first=True).eval()
    stand_in = type("Self", (), dict(num_heads=2, in_proj_weight=twin.in_proj_weight,
                                     in_proj_bias=twin.in_proj_bias, out_proj=twin.out_proj,
                                     dropout=0.0, training=False))()
    query, key = torch.randn(3, 4, 8), torch.randn(3, 6, 8)
    ran = run_rung("03", self=stand_in, query=query, key=key, value=key)
    out, weights = twin(query, key, key, average_attn_weights=False)
    torch.testing.assert_close(ran["out"], out)
    torch.testing.assert_close(ran["weights"], weights)


def test_kata04_rung_builds_the_masks_on_their_device():
    reference = solution("04")
    key_padding_mask = reference.padding_mask([4, 2])
    attn_mask = torch.randn(3, 4)
    ran = run_rung("04", size=4, device="meta", lengths=[4, 2], max_len=None,
                   key_padding_mask=key_padding_mask, attn_mask=attn_mask, num_heads=2,
                   dtype=torch.float64)
    assert ran["causal"].device.type == "meta" and ran["causal"].shape == (4, 4)
    assert torch.equal(ran["padded"], key_padding_mask)
    expected = reference.merge_masks(key_padding_mask, attn_mask, 2, dtype=torch.float64)
    assert ran["merged"].dtype == torch.float64
    assert torch.equal(*torch.broadcast_tensors(ran["merged"], expected))
    # the padding mask follows its lengths onto another device (meta stands in for CUDA)
    on_meta = run_rung("04", size=4, device="meta", lengths=torch.tensor([4, 2], device="meta"),
                       max_len=4, key_padding_mask=key_padding_mask, attn_mask=attn_mask,
                       num_heads=2, dtype=torch.float64)
    assert on_meta["padded"].device.type == "meta"
    causal = run_rung("04", size=5, device=None, lengths=[1], max_len=None,
                      key_padding_mask=key_padding_mask, attn_mask=attn_mask, num_heads=2,
                      dtype=torch.float32)["causal"]
    assert torch.equal(causal, nn.Transformer.generate_square_subsequent_mask(5))


@pytest.mark.parametrize("d_model", [6, 7])
def test_kata05_rung_builds_the_table(d_model):
    pe = run_rung("05", max_len=50, d_model=d_model, base=10000.0)["pe"]
    expected = solution("05").sinusoidal_positional_encoding(50, d_model)
    torch.testing.assert_close(pe.float(), expected)


@pytest.mark.parametrize("activation", ["relu", "gelu", F.silu])
def test_kata06_rung_sub_blocks_equal_pytorchs(activation):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, activation=activation).eval()
    ran = run_rung("06", activation=activation, encoder_layer=layer, num_layers=3)
    layer.activation = ran["activation"]  # what the learner's __init__ would store
    x = torch.randn(5, 3, 8)
    causal = torch.ones(5, 5, dtype=torch.bool).triu(diagonal=1)
    padding = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]])
    torch.testing.assert_close(ran["_sa"](layer, x, causal, padding),
                               layer._sa_block(x, causal, padding))
    torch.testing.assert_close(ran["_ff"](layer, x), layer._ff_block(x))
    layers = ran["layers"]
    assert len(layers) == 3 and layers[0] is not layers[1]
    assert layers[0].linear1.weight is not layers[1].linear1.weight


def test_kata07_rung_counts_what_the_reference_counts():
    reference = solution("07")
    l, n, m, b, d, h, d_ff = 12, 5, 7, 3, 16, 4, 64
    for dtype in (torch.float16, torch.float32, torch.float64):
        for bias in (True, False):
            ran = run_rung("07", l=l, n=n, m=m, b=b, d=d, h=h, d_ff=d_ff, dtype=dtype, bias=bias)
            assert ran["params"] == reference.mha_param_count(d, bias)
            assert ran["cross"] == reference.cross_attention_flops(n, m, b, d, h)
            assert ran["mha"] == reference.mha_flops(l, b, d, h)
            assert ran["layer"] == reference.encoder_layer_flops(l, b, d, h, d_ff)
            assert ran["nbytes"] == reference.attention_scores_bytes(l, b, h, dtype)
