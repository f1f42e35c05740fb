"""The hint ladders: three rungs each, and every near-code rung runs and is right.

A near-code rung (the third) is a few lines of Python written against names the learner
has at that point (``scores``, ``x``, ``self`` ...). Each test below gives the rung exactly
those names, runs it, and compares what it computed with PyTorch or the reference
solution, so a hint can neither go stale nor teach a bug (kata 01's rung used to zero the
fully blocked rows after the softmax only, which gives NaN gradients with float masks;
kata 04's built ``arange`` on the CPU; kata 02's used an undefined ``h``; kata 09's used
an undefined ``y`` and ``t``; kata 13's never computed the ``v`` it used).

Names a learner computes in the first line of the method (``b, n, _ = x.shape``, ``h =
self.num_heads``, ...) are given. A near-code rung is the one tricky line or two of a kata
with a shape comment, never the reference: each test builds the rest around the rung (as
the learner would) and checks the whole against PyTorch or the reference.
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


def run_rung(kata_id: str, **names) -> dict:
    """Execute kata ``kata_id``'s near-code rung with ``names`` defined; return its namespace."""
    namespace = {"torch": torch, "F": F, "nn": nn, "math": math, "copy": copy, **names}
    exec(compile(registry.get(kata_id).hints[2], f"<hint {kata_id}/3>", "exec"), namespace)
    return namespace


def as_function(near_code: str, parameters) -> str:
    """``near_code`` as the body of ``def _rung(parameters)``."""
    body = "".join("    " + line + "\n" for line in near_code.splitlines())
    return f"def _rung({', '.join(parameters)}):\n{body}"


def ends_in_return(near_code: str) -> bool:
    return any(line.startswith("return ") for line in near_code.splitlines())


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


@pytest.mark.parametrize("kata", KATAS, ids=lambda k: k.name)
def test_the_key_idea_is_not_yet_code(kata):
    """Rung 2 explains; code comes at rung 3 (kata 02's rung 2 used to be the answer)."""
    idea = kata.hints[1]
    assert "\n" not in idea, "rung 2 is prose, not a block of code"
    if kata.id == "02":
        assert "view(" not in idea and "transpose(" not in idea, "rung 2 must not be the answer"


@pytest.mark.parametrize("kata", KATAS, ids=lambda k: k.name)
def test_near_code_rung_compiles(kata):
    """As a module, or, where it ends in a top-level ``return``, as the body of a method."""
    near_code = kata.hints[2]
    if ends_in_return(near_code):
        near_code = as_function(near_code, ["self"])
    compile(near_code, f"<hint {kata.id}/3>", "exec")


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
    scores = scores.masked_fill(blocked, float("-inf")) if mask_kind == "bool" else scores + attn_mask
    weights = run_rung("01", scores=scores)["weights"]
    expected = F.scaled_dot_product_attention(  # SDPA's bool mask means "may attend"
        query, key, torch.eye(5, dtype=torch.float64).expand(2, 5, 5), attn_mask=~blocked)
    assert torch.equal(weights[0, 1], torch.zeros(5, dtype=torch.float64))
    torch.testing.assert_close(weights, expected)
    (weights * torch.randn_like(weights)).sum().backward()
    assert torch.isfinite(query.grad).all() and torch.isfinite(key.grad).all()


@pytest.mark.parametrize("kata_id", ["01", "02", "03", "04", "05", "07", "09", "10", "11", "12", "13", "14"])
def test_near_code_rung_is_a_few_lines_not_the_reference(kata_id):
    """The teaching review's rule: rung 3 shows the one tricky line (or two), with its shape
    comment; never the whole function, loop or class."""
    near_code = registry.get(kata_id).hints[2]
    code = [line for line in near_code.splitlines() if line.strip() and not line.startswith("#")]
    assert len(code) <= 5, code
    assert "class " not in near_code and "def forward" not in near_code
    assert not any(line.lstrip().startswith(("for ", "while ")) for line in code), "no loops"


def test_kata02_rung_splits_like_the_reference():
    reference = solution("02")
    x = torch.randn(2, 5, 12)
    ran = run_rung("02", x=x, b=2, n=5, h=3, d=4)
    assert torch.equal(ran["heads"], reference.split_heads(x, 3))
    assert torch.equal(reference.merge_heads(ran["heads"]), x)


@pytest.mark.parametrize("bias", [True, False])
def test_kata03_rung_equals_multihead_attention(bias):
    torch.manual_seed(0)
    twin = nn.MultiheadAttention(8, 2, bias=bias, batch_first=True).eval()
    stand_in = type("Self", (), dict(num_heads=2, in_proj_weight=twin.in_proj_weight,
                                     in_proj_bias=twin.in_proj_bias, out_proj=twin.out_proj,
                                     dropout=0.0, training=False))()
    query, key = torch.randn(3, 4, 8), torch.randn(3, 6, 8)
    biases = (None,) * 3 if twin.in_proj_bias is None else twin.in_proj_bias.chunk(3)
    w_k, w_v = twin.in_proj_weight.chunk(3)[1:]
    k = F.linear(key, w_k, biases[1]).view(3, 6, 2, 4).transpose(1, 2)   # as the comment says
    v = F.linear(key, w_v, biases[2]).view(3, 6, 2, 4).transpose(1, 2)
    ran = run_rung("03", self=stand_in, query=query, k=k, b_q=biases[0], b=3, n=4, h=2, d=4)
    out = twin.out_proj((ran["weights"] @ v).transpose(1, 2).reshape(3, 4, 8))
    expected_out, weights = twin(query, key, key, average_attn_weights=False)
    torch.testing.assert_close(out, expected_out)
    torch.testing.assert_close(ran["weights"], weights)


def test_kata04_rung_pads_and_repeats_the_padding_batch_major():
    reference = solution("04")
    lengths, given = torch.tensor([4, 2, 3]), torch.randn(3, 5)   # given: an additive (b, m) padding
    ran = run_rung("04", lengths=lengths, max_len=5, pad=given, num_heads=2)
    assert torch.equal(ran["padded"], reference.padding_mask(lengths, max_len=5))
    assert ran["pad"].shape == (6, 1, 5)
    for row in range(6):  # row i*h + j is batch element i
        assert torch.equal(ran["pad"][row, 0], given[row // 2])
    # the padding follows its lengths onto another device (meta stands in for CUDA)
    on_meta = run_rung("04", lengths=lengths.to("meta"), max_len=5, pad=given, num_heads=2)
    assert on_meta["padded"].device.type == "meta"


@pytest.mark.parametrize("d_model", [6, 7])
def test_kata05_rung_builds_the_table(d_model):
    pos = torch.arange(50, dtype=torch.float64)[:, None]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    pe = run_rung("05", pos=pos, two_i=two_i, pe=torch.empty(50, d_model, dtype=torch.float64),
                  d_model=d_model, base=10000.0)["pe"]
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
    """One projection and the Q Kᵀ product, from which the layer's count follows."""
    reference = solution("07")
    for l, b, d, h in ((12, 3, 16, 4), (7, 2, 24, 3), (1, 1, 8, 8)):
        ran = run_rung("07", l=l, b=b, d=d, h=h)
        assert ran["qk"] == 2 * b * l * l * d, "h cancels"
        assert 4 * ran["proj"] + 2 * ran["qk"] == reference.mha_flops(l, b, d, h)


@pytest.mark.parametrize("norm_first", [False, True])
def test_kata08_rung_sub_blocks_equal_pytorchs(norm_first):
    torch.manual_seed(0)
    layer = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, norm_first=norm_first).eval()
    ran = run_rung("08")
    _sa, _ca, _ff = ran["_sa"], ran["_ca"], layer._ff_block  # _ff is kata 06's, tested there
    tgt, memory = torch.randn(4, 3, 8), torch.randn(6, 3, 8)  # seq-first: (len, batch, d)
    causal = torch.ones(4, 4, dtype=torch.bool).triu(diagonal=1)
    memory_mask = torch.rand(4, 6) < 0.3  # bool, as the padding masks (PyTorch warns on a mix)
    memory_mask[:, 0] = False
    tgt_pad = torch.tensor([[False] * 4, [False] * 3 + [True], [False] * 2 + [True] * 2])
    memory_pad = torch.tensor([[False] * 6, [False] * 4 + [True] * 2, [False] * 5 + [True]])
    torch.testing.assert_close(_sa(layer, tgt, causal, tgt_pad),
                               layer._sa_block(tgt, causal, tgt_pad))
    torch.testing.assert_close(_ca(layer, tgt, memory, memory_mask, memory_pad),
                               layer._mha_block(tgt, memory, memory_mask, memory_pad))
    # the layer the comments put together from the two sub-blocks
    x = tgt
    if norm_first:
        x = x + _sa(layer, layer.norm1(x), causal, tgt_pad)
        x = x + _ca(layer, layer.norm2(x), memory, memory_mask, memory_pad)
        x = x + _ff(layer.norm3(x))
    else:
        x = layer.norm1(x + _sa(layer, x, causal, tgt_pad))
        x = layer.norm2(x + _ca(layer, x, memory, memory_mask, memory_pad))
        x = layer.norm3(x + _ff(x))
    expected = layer(tgt, memory, tgt_mask=causal, memory_mask=memory_mask,
                     tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=memory_pad)
    torch.testing.assert_close(x, expected)


def kata09_model():
    torch.manual_seed(0)
    return solution("09").Seq2SeqTransformer(11, 13, d_model=16, nhead=2, num_encoder_layers=2,
                                             num_decoder_layers=2, dim_feedforward=32).eval()


def test_kata09_rung_decodes_like_the_reference():
    model = kata09_model()
    src = torch.tensor([[3, 4, 5, 6, 7], [8, 9, 2, 0, 0]])  # pad_idx 0
    tgt = torch.tensor([[1, 5, 6, 7], [1, 4, 0, 0]])
    memory = model.encode(src)
    y = model.positional_encoding(model.tgt_embed(tgt) * math.sqrt(model.d_model))
    ran = run_rung("09", self=model, src=src, tgt=tgt, y=y, memory=memory, t=tgt.size(1))
    torch.testing.assert_close(ran["out"], model.decode(tgt, memory, src))
    assert ran["causal"].shape == (4, 4) and ran["causal"].dtype == torch.bool


def test_kata09_rung_greedy_step_appends_what_the_reference_appends():
    """The greedy step is a comment; uncommented, each step of it extends the reference's
    output by the reference's next token."""
    near_code = registry.get("09").hints[2].splitlines()
    start = next(i for i, line in enumerate(near_code) if line.startswith("# greedy, one step: "))
    step = [near_code[start].split(": ", 1)[1]]
    step += [line.lstrip("# ") for line in near_code[start + 1:]]
    model = kata09_model()
    src = torch.tensor([[3, 4, 5, 6, 7], [8, 9, 2, 0, 0], [5, 5, 0, 0, 0]])
    with torch.no_grad():
        memory = model.encode(src)
        # every token the model produces first is an eos for some row: rows end at different steps
        first_tokens = model.generator(model.decode(torch.ones(3, 1, dtype=torch.long), memory,
                                                    src)[:, -1]).argmax(-1).tolist()
        for eos_idx in {*first_tokens, 12}:
            expected = solution("09").greedy_decode(model, src, 7, 1, eos_idx)
            for length in range(1, expected.size(1)):
                ys = expected[:, :length]
                namespace = {"torch": torch, "model": model, "memory": memory, "src": src, "ys": ys,
                             "done": (ys == eos_idx).any(dim=1)}
                exec(compile("\n".join(step), "<hint 09/3 greedy>", "exec"), namespace)
                assert torch.equal(namespace["nxt"], expected[:, length]), (eos_idx, length)


def test_kata10_rung_splits_qkv_like_the_reference():
    """q, k, v from the rung, attended and projected as the rest of the forward does,
    equal the reference's Attention."""
    torch.manual_seed(0)
    attn = solution("10").Attention(12, num_heads=3, qkv_bias=True).eval()
    x = torch.randn(2, 5, 12)
    ran = run_rung("10", self=attn, x=x, B=2, N=5, C=12, p=0.5)
    q, k, v = ran["q"], ran["k"], ran["v"]
    assert q.shape == k.shape == v.shape == (2, 3, 5, 4)
    weights = (q @ k.transpose(-2, -1) * attn.scale).softmax(dim=-1)
    out = attn.proj((weights @ v).transpose(1, 2).reshape(2, 5, 12))
    torch.testing.assert_close(out, attn(x))


@pytest.mark.parametrize("p", [0.25, 0.5])
def test_kata10_rung_drop_path_draw_equals_the_reference(p):
    """One draw per sample, (B, 1, 1); kept samples scaled by 1 / (1 - p) equal the
    reference's drop_path with the same random numbers."""
    reference = solution("10")
    torch.manual_seed(0)
    attn = reference.Attention(4, num_heads=2)
    x = torch.randn(64, 3, 4)
    torch.manual_seed(1)
    keep = run_rung("10", self=attn, x=x, B=64, N=3, C=4, p=p)["keep"]
    assert keep.shape == (64, 1, 1) and set(keep.unique().tolist()) <= {0.0, 1.0}
    torch.manual_seed(1)
    torch.testing.assert_close(x * keep / (1 - p), reference.drop_path(x, p, training=True))


@pytest.mark.parametrize("cached", [0, 4])
def test_kata11_rung_equals_the_reference_with_and_without_a_cache(cached):
    """The rung's cache and mask, with the projections and attention around them, give the
    reference's output and new cache; the cache passed in is left alone."""
    torch.manual_seed(0)
    model = solution("11").CausalSelfAttention(12, 3)
    x = torch.randn(2, 3, 12)
    cache = model(torch.randn(2, cached, 12))[1] if cached else None
    before = None if cache is None else [c.clone() for c in cache]
    b, t, embed_dim = x.shape
    q, k, v = (model._split_heads(proj(x)) for proj in (model.q_proj, model.k_proj, model.v_proj))
    ran = run_rung("11", x=x, cache=cache, k=k, v=v, t=t)
    k, v, blocked = ran["k"], ran["v"], ran["blocked"]
    assert k.shape == (2, 3, cached + 3, 4) and blocked.shape == (3, cached + 3)
    full = torch.ones(cached + 3, cached + 3, dtype=torch.bool).triu(diagonal=1)
    assert torch.equal(blocked, full[cached:]), "the last t rows of the full causal mask"
    scores = (q @ k.transpose(-2, -1) / math.sqrt(model.head_dim)).masked_fill(blocked, float("-inf"))
    out = model.out_proj((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, embed_dim))
    expected, (expected_k, expected_v) = model(x, cache)
    torch.testing.assert_close(out, expected)
    assert torch.equal(k, expected_k) and torch.equal(v, expected_v)
    if cache is not None:
        assert all(torch.equal(c, kept) for c, kept in zip(cache, before))


def rotate(x1, x2, angles, interleaved):
    """Rung 2's rotation, put back in the convention's order (what the learner adds)."""
    cos, sin = angles.cos().to(x1.dtype), angles.sin().to(x1.dtype)
    y1, y2 = x1 * cos - x2 * sin, x1 * sin + x2 * cos
    return torch.stack((y1, y2), -1).flatten(-2) if interleaved else torch.cat((y1, y2), -1)


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_kata12_rung_rotates_like_the_reference(interleaved, dtype):
    reference = solution("12")
    torch.manual_seed(0)
    x = torch.randn(2, 3, 5, 8, dtype=dtype)
    positions = torch.tensor([7, 8, 9, 1000, 123456])
    ran = run_rung("12", x=x, positions=positions, head_dim=8, base=500.0,
                   interleaved=interleaved)
    assert ran["angles"].dtype == torch.float64
    assert torch.equal(ran["angles"].to(torch.float32), reference.rope_angles(positions, 8, 500.0))
    y = rotate(ran["x1"], ran["x2"], ran["angles"], interleaved)
    torch.testing.assert_close(y, reference.apply_rope(x, positions, 500.0, interleaved))


@pytest.mark.parametrize("interleaved", [False, True])
def test_kata12_rung_rotates_per_row_positions_with_the_heads_axis_its_comment_adds(interleaved):
    reference = solution("12")
    torch.manual_seed(0)
    x = torch.randn(2, 3, 5, 8)
    positions = torch.tensor([[0, 1, 2, 3, 4], [5, 6, 7, 8, 900]])  # (b, n)
    lines = registry.get("12").hints[2].splitlines()
    after_angles = next(i for i, line in enumerate(lines) if line.startswith("angles = ")) + 1
    assert "(b, 1, n, d/2) for (b, n) positions" in lines[after_angles]
    lines.insert(after_angles, "angles = angles[:, None]")  # what that comment asks for
    namespace = {"torch": torch, "x": x, "positions": positions, "head_dim": 8, "base": 500.0,
                 "interleaved": interleaved}
    exec(compile("\n".join(lines), "<hint 12/3>", "exec"), namespace)
    assert torch.equal(namespace["angles"][:, 0].to(torch.float32),
                       reference.rope_angles(positions, 8, 500.0))
    y = rotate(namespace["x1"], namespace["x2"], namespace["angles"], interleaved)
    torch.testing.assert_close(y, reference.apply_rope(x, positions, 500.0, interleaved))


@pytest.mark.parametrize("num_kv_heads", [1, 2, 4])
def test_kata13_rung_gives_query_head_j_kv_head_j_over_group(num_kv_heads):
    """The rung's widened k and v, attended as kata 01 does, give the reference's output."""
    reference = solution("13")
    torch.manual_seed(0)
    model = reference.GroupedQueryAttention(12, 4, num_kv_heads, bias=True)
    x = torch.randn(2, 5, 12)
    b, n, h, kv, d = 2, 5, 4, num_kv_heads, 3
    q = model.q_proj(x).view(b, n, h, d).transpose(1, 2)
    k = model.k_proj(x).view(b, n, kv, d).transpose(1, 2)
    v = model.v_proj(x).view(b, n, kv, d).transpose(1, 2)
    ran = run_rung("13", k=k, v=v, h=h, kv=kv)
    for j in range(h):
        assert torch.equal(ran["k"][:, j], k[:, j // (h // kv)])
        assert torch.equal(ran["v"][:, j], v[:, j // (h // kv)])
    weights = (q @ ran["k"].transpose(-2, -1) / math.sqrt(d)).softmax(-1)
    out = model.o_proj((weights @ ran["v"]).transpose(1, 2).reshape(b, n, h * d))
    torch.testing.assert_close(out, model(x))


def test_kata13_rung_cache_size_comment_counts_what_the_reference_counts():
    near_code = registry.get("13").hints[2]
    formula = near_code.split("# kv_cache_bytes: ")[1].splitlines()[0]
    reference = solution("13")
    for dtype in (torch.float16, torch.float32, torch.bfloat16):
        names = dict(b=3, seq=100, layers=5, kv=2, E=64, h=8, dtype=dtype)
        assert eval(formula, names) == reference.kv_cache_bytes(3, 100, 5, 64, 8, 2, dtype)


@pytest.mark.parametrize("block_size", [1, 3, 7, 64])
def test_kata14_rung_equals_the_reference_and_sdpa(block_size):
    """The rung is one block's update; the loop around it (the learner's) gives SDPA's output
    and logsumexp, and the reference's."""
    torch.manual_seed(0)
    q = torch.randn(2, 3, 5, 4, dtype=torch.float64)
    k, v = torch.randn(2, 3, 7, 4, dtype=torch.float64), torch.randn(2, 3, 7, 4, dtype=torch.float64)
    m = q.new_full((2, 3, 5, 1), float("-inf"))
    l, acc = q.new_zeros((2, 3, 5, 1)), torch.zeros_like(q)
    for start in range(0, 7, block_size):
        s = q @ k[..., start:start + block_size, :].transpose(-2, -1) / 2.0
        ran = run_rung("14", s=s, m=m, l=l, acc=acc, v_block=v[..., start:start + block_size, :])
        m, l, acc = ran["m_new"], ran["l"], ran["acc"]
    out, lse = acc / l, (m + torch.log(l)).squeeze(-1)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v))
    torch.testing.assert_close(lse, torch.logsumexp(q @ k.transpose(-2, -1) / 2.0, dim=-1))
    expected_out, expected_lse = solution("14").flash_attention(q, k, v, block_size)
    torch.testing.assert_close(out, expected_out)
    torch.testing.assert_close(lse, expected_lse)


def test_kata16_rung_is_the_scatter_back_to_vocabulary_order_alone():
    """Rung 3 is the one tricky line the README and rung 2 leave (teaching review L2): the
    decision made in sorted order, scattered back to vocabulary order; the filter itself
    (sort, cumulative sum, comparison) stays the learner's."""
    near_code = registry.get("16").hints[2]
    code = [line for line in near_code.splitlines() if line.strip() and not line.startswith("#")]
    assert len(code) == 1 and "cumsum" not in near_code
    torch.manual_seed(0)
    logits = torch.randn(2, 3, 9, dtype=torch.float64)
    sorted_probs, order = torch.softmax(logits, -1).sort(dim=-1, descending=True)
    remove_sorted = sorted_probs.cumsum(-1) - sorted_probs >= 0.6
    remove = run_rung("16", remove_sorted=remove_sorted, order=order)["remove"]
    expected = torch.isneginf(solution("16").top_p_filter(logits, 0.6))
    assert torch.equal(remove, expected)


def test_kata22_rung_counts_the_blocks_and_gathers_one_sequence():
    """Rung 3 reaches both halves of kata 22 (teaching review 2026-12-01 L2): the blocks an
    append needs (the copy included), and paged_attention's gather of one sequence's blocks
    cut at its length, each query head reading kv head j // (num_heads // num_kv_heads)."""
    class Cache:
        ref_counts = [1, 2, 2, 1]

    for L, t, table, want in ((6, 1, [0, 1], 1), (6, 3, [0, 1], 2), (8, 1, [0, 1], 1),
                              (5, 2, [0, 3], 0)):
        torch.manual_seed(L + t)
        k_cache = torch.randn(6, 4, 2, 3)
        block_tables = torch.tensor([[4, 2, 5, -1], [3, 1, -1, -1]])
        ran = run_rung("22", L=L, t=t, block_size=4, self=Cache(), table=table, i=1, n=7,
                       block_tables=block_tables, k_cache=k_cache, num_heads=6, num_kv_heads=2)
        assert ran["needed"] == want
        assert torch.equal(ran["k"], k_cache[[3, 1]].flatten(0, 1)[:7].repeat_interleave(3, dim=1))
        assert ran["k"][:, 5].equal(k_cache[[3, 1]].flatten(0, 1)[:7, 5 // 3])
