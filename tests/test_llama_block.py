"""Kata 15's own self-tests: the grader's twin against PyTorch and against Hugging Face's
LlamaDecoderLayer (where ``transformers`` is installed: the dev extra), the quiz's numbers
against real modules, and the hint ladder's near-code rung run on real tensors.

The grader cannot use ``transformers`` (learners do not install it); these tests show that
the float64 twin it uses instead is the real thing, and that the state dict of a real
LlamaDecoderLayer loads into the reference and every correct style with strict=True.
"""

from __future__ import annotations

import importlib.util
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from graders.llama_block import checks as grader
from graders.llama_block import meta, twin
from graders.core import registry
from graders.frontends import quiz
from tests.mutation import STYLES_DIR

KATA = registry.get("15")
STYLES = sorted((STYLES_DIR / KATA.name).glob("*.py"))


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REFERENCE = load(KATA.solution_path, "_llama_block_reference")
CFG = grader.Config(24, 6, 3, 64, rope_base=500000.0, eps=1e-5)


def test_the_twins_norm_is_nn_rmsnorm():
    x = torch.randn(3, 5, 16, dtype=torch.float64) + 0.5
    weight = 1 + 0.3 * torch.randn(16, dtype=torch.float64)
    norm = nn.RMSNorm(16, eps=1e-5, dtype=torch.float64)
    with torch.no_grad():
        norm.weight.copy_(weight)
    torch.testing.assert_close(grader.rms_norm(x, weight, 1e-5), norm(x), rtol=1e-12, atol=1e-12)


def test_the_twins_attention_is_sdpa_with_enable_gqa_and_its_switches_differ():
    state = grader.random_state(CFG, seed=3)
    x = grader.make_x(2, 5, CFG.dim, seed=4)
    # Not "rows" (a run per row): RoPE's attention is blind to a shift of every position,
    # so ignoring such positions changes nothing, and the grader names it on other ones.
    positions = grader.make_positions("batch-random", 2, 5, seed=5)
    weights = grader.part(state, "self_attn.")
    # The same attention without the repeat: SDPA pairs the kv heads itself.
    b, n, d = 2, 5, CFG.head_dim
    angles = twin.rope_angles(positions, b, n, d, CFG.rope_base)

    def heads(name, count):
        return F.linear(x, weights[f"{name}.weight"]).view(b, n, count, d).transpose(1, 2)

    q = twin.rotate(heads("q_proj", CFG.num_heads), angles)
    k = twin.rotate(heads("k_proj", CFG.num_kv_heads), angles)
    out = F.scaled_dot_product_attention(q, k, heads("v_proj", CFG.num_kv_heads), is_causal=True,
                                         enable_gqa=True)
    expected = F.linear(out.transpose(1, 2).reshape(b, n, CFG.dim), weights["o_proj.weight"])
    right = grader.attention(x, weights, CFG, positions)
    torch.testing.assert_close(right, expected)
    # The manual path (used by every switch) agrees with SDPA when no switch is on ...
    manual = grader.attention(x, weights, CFG, positions, grader.Variant(scale=1 / math.sqrt(d)))
    torch.testing.assert_close(manual, right)
    # ... the float32 allowances move it by float32's digits, and every mistake far more.
    hf32 = grader.attention(x, weights, CFG, positions, grader.HF32)
    assert 0 < float((hf32 - right).abs().max()) < 1e-5
    for slug, variant in grader.ATTENTION_MISTAKES:
        wrong = grader.attention(x, weights, CFG, positions, variant)
        assert float((wrong - right).abs().nan_to_num(nan=math.inf).max()) > 1e-2, slug


def test_every_block_mistake_changes_the_output():
    state = grader.random_state(CFG, seed=6)
    x = grader.make_x(2, 5, CFG.dim, seed=7)
    positions = grader.make_positions("batch-random", 2, 5, seed=8)
    right = grader.llama_reference(state, x, CFG, positions)
    torch.testing.assert_close(REFERENCE_block(state)(x, positions), right)
    for slug, variant in grader.BLOCK_MISTAKES:
        if variant.norm == "eps-outside":  # visible with small inputs only (test_rmsnorm)
            continue
        wrong = grader.llama_reference(state, x, CFG, positions, variant)
        assert float((wrong - right).abs().nan_to_num(nan=math.inf).max()) > 1e-3, slug


def REFERENCE_block(state):
    block = REFERENCE.LlamaBlock(CFG.dim, CFG.num_heads, CFG.num_kv_heads, CFG.hidden_dim,
                                 rope_base=CFG.rope_base, eps=CFG.eps).double()
    block.load_state_dict(state, strict=True)
    return block


# --- Hugging Face's LlamaDecoderLayer (transformers: the dev extra) ---

def hugging_face_layer():
    transformers = pytest.importorskip("transformers")
    from transformers.models.llama import modeling_llama

    config = transformers.LlamaConfig(
        hidden_size=CFG.dim, num_attention_heads=CFG.num_heads,
        num_key_value_heads=CFG.num_kv_heads, intermediate_size=CFG.hidden_dim,
        rope_theta=CFG.rope_base, rms_norm_eps=CFG.eps, hidden_act="silu",
        attention_bias=False, mlp_bias=False)
    config._attn_implementation = "eager"
    layer = modeling_llama.LlamaDecoderLayer(config, layer_idx=0).double().eval()
    rotary = modeling_llama.LlamaRotaryEmbedding(config=config).double()
    return layer, rotary


def hugging_face_output(layer, rotary, x, positions):
    n = x.shape[1]
    position_ids = positions if positions.dim() == 2 else positions.expand(x.shape[0], n)
    cos, sin = rotary(x, position_ids)
    causal = torch.full((n, n), float("-inf"), dtype=x.dtype).triu(1)[None, None]
    out = layer(x, attention_mask=causal, position_ids=position_ids, position_embeddings=(cos, sin))
    return out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize("path", [KATA.solution_path, *STYLES], ids=lambda p: p.stem)
def test_a_llama_decoder_layers_state_dict_loads_strictly_and_agrees(path):
    layer, rotary = hugging_face_layer()
    theirs = layer.state_dict()
    assert list(theirs) == list(twin.BLOCK_KEYS)
    with torch.no_grad():
        for name, value in grader.random_state(CFG, seed=9).items():
            theirs[name].copy_(value)
    layer.load_state_dict(theirs)
    module = load(path, f"_llama_style_{path.stem}")
    block = module.LlamaBlock(CFG.dim, CFG.num_heads, CFG.num_kv_heads, CFG.hidden_dim,
                              rope_base=CFG.rope_base, eps=CFG.eps).double()
    block.load_state_dict(layer.state_dict(), strict=True)
    x = grader.make_x(2, 6, CFG.dim, seed=10)
    positions = torch.tensor([[0, 1, 2, 3, 4, 5], [40, 41, 42, 43, 44, 45]])
    with torch.no_grad():
        expected = hugging_face_output(layer, rotary, x, positions)
        rebuilt = grader.llama_reference(grader.random_state(CFG, seed=9), x, CFG, positions)
        torch.testing.assert_close(block(x, positions), expected, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(rebuilt, expected, rtol=1e-5, atol=1e-5)


# --- the quiz's numbers, from real modules ---

def test_quiz_numbers_agree_with_modules():
    key = quiz.answer_key("15")

    def parameters(module):
        return sum(p.numel() for p in module.parameters())

    assert key[2] == meta.swiglu_hidden_dim(4096) == 11008
    with torch.device("meta"):
        assert key[3] == parameters(REFERENCE.SwiGLU(4096, 11008))
        assert key[4] == parameters(REFERENCE.LlamaBlock(4096, 32, 32, 11008))
        assert key[5] == parameters(REFERENCE.LlamaBlock(4096, 32, 8, 14336))
        per_token = torch.empty(32, 2, 1, 8, 1, 128, dtype=torch.bfloat16)  # layers, k/v, b, kv, n, d
    assert key[6] * 2**10 == per_token.nbytes
    half = torch.tensor([300.0], dtype=torch.float16)
    assert torch.isinf(half * half).all() and not torch.isinf(half.float() ** 2).any()  # question 7


def test_quiz_llama2_7b_total_is_the_seven_billion():
    blocks = 32 * meta.llama_block_parameters(4096, 32, 32, 11008)
    assert blocks == 6_476_267_520
    assert blocks + 2 * 32000 * 4096 + 4096 == 6_738_415_616


# --- the hint ladder's near-code rung ---

def test_near_code_rung_broadcasts_per_row_positions_and_rotates_like_the_reference():
    """Rung 3 (the teaching review's L1): the (b, n) positions' cos and sin get a heads axis,
    (b, n, d) -> (b, 1, n, d), then the rotate-half line turns q as the reference does, each
    sequence at its own positions and every head alike."""
    near_code = KATA.hints[2]
    code = [line for line in near_code.splitlines() if line.strip() and not line.startswith("#")]
    assert len(code) <= 5 and "class " not in near_code and "def " not in near_code
    assert "rsqrt" not in near_code, "the norm is the README's formula, not the tricky line"
    b, h, n, d = 2, 4, 5, 8
    q = torch.randn(b, h, n, d, dtype=torch.float64)
    positions = torch.tensor([[0, 1, 2, 3, 4], [7, 8, 9, 10, 11]])
    cos, sin = REFERENCE.rope_cos_sin(positions, d, 10000.0, torch.float64)  # (b, n, d)
    namespace = {"torch": torch, "q": q, "d": d, "cos": cos, "sin": sin}
    exec(compile(near_code, "<hint 15/3>", "exec"), namespace)
    for row in range(b):
        cos_row, sin_row = REFERENCE.rope_cos_sin(positions[row], d, 10000.0, torch.float64)
        expected = q[row] * cos_row + REFERENCE.rotate_half(q[row]) * sin_row
        torch.testing.assert_close(namespace["q"][row], expected)
