"""Property checks of the graders themselves: a correct answer passes on any input.

The graders draw a fixed list of seeded cases (fast and repeatable for learners). Here
hypothesis searches much wider — shapes, seeds, sizes — for an input on which a grader
would fail a correct implementation (a too-tight tolerance, a mistake "recognised" in a
right answer, a shape the grader itself mishandles). Each property runs the grader's own
check function on the reference solution and on a correct solution written differently.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graders.attention import checks as attention
from graders.flops import checks as flops
from graders.masks import checks as masks
from graders.mha import checks as mha
from graders.core import loader, registry
from graders.core.inputs import bool_mask, randn
from graders.core.implementation import Implementation
from tests.mutation import STYLES_DIR

SEARCH = settings(max_examples=30, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture])


def implementations(kata_key: str, style: str) -> list[Implementation]:
    kata = registry.get(kata_key)
    paths = [kata.solution_path, STYLES_DIR / kata.name / style]
    return [Implementation(kata=kata, path=p, module=loader.load(p, kata)) for p in paths]


ATTENTION = implementations("01", "einsum.py")
MHA = implementations("03", "per_head_loop.py")
MASKS = implementations("04", "where_arithmetic.py")
FLOPS = implementations("07", "matmul_shapes.py")


@pytest.mark.parametrize("impl", ATTENTION, ids=repr)
@SEARCH
@given(lead=st.lists(st.integers(1, 3), max_size=2), n=st.integers(1, 7), m=st.integers(1, 7),
       d_k=st.integers(1, 16), d_v=st.integers(1, 9), mask_kind=st.sampled_from([None, "bool", "float"]),
       shared_mask=st.booleans(), seed=st.integers(0, 2**20))
def test_attention_grader_passes_correct_answers(impl, lead, n, m, d_k, d_v, mask_kind,
                                                 shared_mask, seed):
    lead = tuple(lead)
    mask_lead = () if shared_mask else lead
    mask = None
    if mask_kind == "bool":
        mask = bool_mask(*mask_lead, n, m, seed=seed + 1)
    elif mask_kind == "float":
        mask = randn(*mask_lead, n, m, seed=seed + 1)
    attention.check_attention(impl, *attention.qkv(lead, n, m, d_k, d_v, seed=seed), mask)


@pytest.mark.parametrize("impl", MHA, ids=repr)
@SEARCH
@given(num_heads=st.integers(1, 5), head_dim=st.integers(1, 6), b=st.integers(1, 3),
       n=st.integers(1, 7), m=st.integers(1, 7), seed=st.integers(0, 2**20))
def test_mha_grader_passes_correct_answers(impl, num_heads, head_dim, b, n, m, seed):
    mha.check_mha(impl, embed_dim=num_heads * head_dim, num_heads=num_heads, b=b, n=n, m=m,
                  seed=seed)


@pytest.mark.parametrize("impl", MASKS, ids=repr)
@SEARCH
@given(data=st.data(), batch=st.integers(1, 3), heads=st.integers(1, 4), n=st.integers(1, 6),
       m=st.integers(1, 6), attn_kind=st.sampled_from([None, "bool", "float"]),
       per_head=st.booleans(), seed=st.integers(0, 2**20))
def test_masks_grader_passes_correct_answers(impl, data, batch, heads, n, m, attn_kind, per_head,
                                             seed):
    lengths = data.draw(st.none() | st.lists(st.integers(1, m), min_size=batch, max_size=batch))
    padding = None if lengths is None else masks.key_padding(lengths, m)
    shape = (batch * heads, n, m) if per_head else (n, m)
    attn = None
    if attn_kind == "bool":
        attn = masks.blocking_mask(*shape, seed=seed + 5)
    elif attn_kind == "float":
        attn = masks.additive_values(*shape, seed=seed + 5)
    masks.check_merge(impl, padding, attn, batch=batch, heads=heads, n=n, m=m, head_dim=3,
                      seed=seed)


@pytest.mark.parametrize("impl", FLOPS, ids=repr)
@SEARCH
@given(l=st.integers(1, 10**6), n=st.integers(1, 10**6), m=st.integers(1, 10**6),
       b=st.integers(1, 10**4), h=st.integers(1, 128), head_dim=st.integers(1, 256),
       d_ff=st.integers(1, 10**5))
def test_flops_grader_passes_correct_answers(impl, l, n, m, b, h, head_dim, d_ff):
    d = h * head_dim
    flops.check_mha_flops(impl, l, b, d, h)
    flops.check_cross_flops(impl, n, m, b, d, h)
    flops.check_encoder_flops(impl, l, b, d, h, d_ff)
