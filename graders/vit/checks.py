"""Grader for kata 10: the Vision Transformer's ``PatchEmbed``, ``Attention``, ``Mlp``,
``DropPath`` and ``Block``, in timm's names (batch first only).

Expected numbers come from PyTorch's own modules with random weights and nonzero biases,
loaded into the learner's modules through the state dict (timm's names):

- PatchEmbed: ``nn.Conv2d(C, D, p, stride=p)`` followed by ``flatten(2).transpose(1, 2)``;
- Attention: ``nn.MultiheadAttention(dim, h, batch_first=True)`` with ``in_proj_weight =
  qkv.weight``, ``in_proj_bias = qkv.bias`` (zeros without qkv_bias), ``out_proj = proj``;
- Mlp: ``nn.Linear`` -> ``nn.GELU()`` -> ``nn.Linear``;
- Block: ``nn.TransformerEncoderLayer(dim, h, int(dim * mlp_ratio), dropout=0,
  activation="gelu", layer_norm_eps=1e-6, batch_first=True, norm_first=True)``, which is
  the ViT block under other names (in eval mode, grad enabled: its ordinary path).

:func:`attention_reference` and :func:`block_reference` compute the same from the state
dict with one switch per catalogued mistake; the grader flips a switch to recognise it.
Dropout and DropPath are never compared seed for seed: their behaviour is graded (which
values are zeroed, how the kept ones are scaled, only in training mode, roughly the right
share dropped over many draws from a fixed seed).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from graders.core.i18n import N_, _
from graders.core.compare import MISTAKE_SLACK, expect_close, expect_grads_close, tolerance
from graders.core.implementation import Implementation
from graders.core.inputs import drawn_cases, grads_of, randn, randomize_, weighted_sum
from graders.core.mistakes import Suspect
from graders.core.report import describe_inputs, describe_tensor, verdict, title
from graders.vit.twin import (
    attention_mistakes,
    attention_reference,
    attention_state,
    ATTENTION_TO_TWIN,
    attention_twin,
    block_mistakes,
    block_reference,
    block_state,
    BLOCK_TO_TWIN,
    block_twin,
    mlp_reference,
    mlp_state,
    MlpTwin,
)
from graders.core.modules import learner_grads
from graders.vit.learner import (
    ATTENTION_NAMES,
    block_on,
    build,
    MLP_NAMES,
    new_block,
    run,
    twin_names,
)
from graders.vit.dropout import (
    test_attention_dropout_in_training,
    test_block_drop_path,
    test_block_dropout_wiring,
    test_drop_path_any_rank_and_gradient,
    test_drop_path_extremes,
    test_drop_path_identity_in_eval,
    test_drop_path_in_training,
    test_drop_path_keep_rate,
    test_drop_path_scale_by_keep,
    test_mlp_dropout_in_training,
)

__all__ = [
    "test_patch_embed_matches_conv",
    "test_attention_matches_pytorch",
    "test_attention_random_shapes",
    "test_mlp_matches_pytorch",
    "test_drop_path_identity_in_eval",
    "test_drop_path_in_training",
    "test_block_matches_pytorch",
    "test_block_random_shapes",
    "test_float64",
    "test_gradients",
    "test_block_layer_norm_eps",
    "test_drop_path_extremes",
    "test_drop_path_scale_by_keep",
    "test_drop_path_keep_rate",
    "test_drop_path_any_rank_and_gradient",
    "test_attention_dropout_in_training",
    "test_mlp_dropout_in_training",
    "test_block_dropout_wiring",
    "test_block_drop_path",
    "test_half_precision_on_cuda",
]


# ------------------------------------------------------------------------------ PatchEmbed

PATCH_NAMES = N_("PatchEmbed has proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, "
                 "stride=patch_size), and nothing else with weights")


def check_patch_embed(impl: Implementation, *, img_size, patch: int, chans: int, dim: int,
                      b: int, hw: tuple[int, int], seed: int, dtype=torch.float32,
                      device: str | torch.device = "cpu", check_grads: bool = False) -> None:
    conv = randomize_(nn.Conv2d(chans, dim, patch, stride=patch, dtype=dtype, device=device),
                      seed, scale=0.5)
    state = {"proj." + k: v.detach() for k, v in conv.state_dict().items()}
    module = build(impl, "PatchEmbed", (), dict(img_size=img_size, patch_size=patch,
                                                in_chans=chans, embed_dim=dim),
                   state, PATCH_NAMES, dtype, device)
    base = randn(b, chans, *hw, seed=seed + 1, dtype=dtype, device=device)
    x = base.clone().requires_grad_(check_grads)
    on = _("{inputs} with {module}", inputs=describe_inputs(x=x),
           module=f"PatchEmbed(img_size={img_size!r}, patch_size={patch}, in_chans={chans}, "
                  f"embed_dim={dim})")
    out = run(impl, module, x, "PatchEmbed", on)
    ref_x = base.clone().requires_grad_(check_grads)
    grid = conv(ref_x)  # (B, D, H/p, W/p)
    expected = grid.flatten(2).transpose(1, 2)
    n = grid.shape[2] * grid.shape[3]
    # The conv's grid reshaped straight to (B, N, D), or flattened and left (B, D, N).
    suspects = [Suspect("patch-flatten-without-transpose",
                        predict=lambda: grid.detach().reshape(b, n, dim)),
                Suspect("patch-flatten-without-transpose",
                        predict=lambda: grid.detach().flatten(2))]
    expect_close(out, expected, _("the patch tokens (B, N, D), N in row-major order"), on, suspects)
    if check_grads:
        check = _("backward through {module}", module="PatchEmbed")
        got = learner_grads(out, {"x": x, **twin_names(module, {"proj.weight": "weight",
                                                                 "proj.bias": "bias"})},
                            seed + 2, check, on)
        ref = grads_of(weighted_sum([expected], seed=seed + 2),
                       {"x": ref_x, **dict(conv.named_parameters())})
        expect_grads_close(got, ref, check, on)


@title(N_("patch embedding against a convolution"))
@pytest.mark.core
def test_patch_embed_matches_conv(impl):
    """The conv's output flattened to (B, N, D) in row-major patch order: non-square images,
    images of another size than img_size, one input channel, a 2 x 3 grid."""
    check_patch_embed(impl, img_size=(8, 12), patch=4, chans=3, dim=6, b=2, hw=(8, 12), seed=100)
    check_patch_embed(impl, img_size=16, patch=4, chans=2, dim=5, b=3, hw=(8, 20), seed=110)
    check_patch_embed(impl, img_size=6, patch=2, chans=1, dim=7, b=2, hw=(6, 4), seed=120)


def check_attention(impl: Implementation, *, dim: int, num_heads: int, b: int, n: int,
                    seed: int, qkv_bias: bool = True, dtype=torch.float32,
                    device: str | torch.device = "cpu", check_grads: bool = False) -> None:
    """The learner's Attention against nn.MultiheadAttention with the same weights."""
    twin = attention_twin(dim, num_heads, qkv_bias, seed, dtype, device)
    state = attention_state(twin, qkv_bias)
    module = build(impl, "Attention", (dim,), dict(num_heads=num_heads, qkv_bias=qkv_bias),
                   state, ATTENTION_NAMES, dtype, device)
    base = randn(b, n, dim, seed=seed + 1, dtype=dtype, device=device)
    x = base.clone().requires_grad_(check_grads)
    on = _("{inputs} with {module}", inputs=describe_inputs(x=x),
           module=f"Attention({dim}, num_heads={num_heads}, qkv_bias={qkv_bias})")
    out = run(impl, module, x, "Attention", on)
    ref_x = base.clone().requires_grad_(check_grads)
    expected = twin(ref_x, ref_x, ref_x, need_weights=False)[0]
    suspects = [Suspect(slug, predict=lambda s=switches: attention_reference(
        state, base, num_heads, **s)) for slug, switches in attention_mistakes(dim, num_heads)]
    expect_close(out, expected, _("the attention output (B, N, dim)"), on, suspects)
    if check_grads:
        check = _("backward through {module}", module="Attention")
        got = learner_grads(out, {"x": x, **twin_names(module, ATTENTION_TO_TWIN)},
                            seed + 2, check, on)
        ref = {"x": ref_x, **dict(twin.named_parameters())}
        if not qkv_bias:
            del ref["in_proj_bias"]
        expect_grads_close(got, grads_of(weighted_sum([expected], seed=seed + 2), ref), check, on)


@title(N_("attention against nn.MultiheadAttention"))
@pytest.mark.core
def test_attention_matches_pytorch(impl):
    """Batch > 1, heads > 1, with and without qkv_bias; one head; one token."""
    check_attention(impl, dim=12, num_heads=3, b=2, n=5, seed=200)
    check_attention(impl, dim=8, num_heads=2, b=3, n=4, qkv_bias=False, seed=210)
    check_attention(impl, dim=6, num_heads=1, b=2, n=3, seed=220)
    check_attention(impl, dim=8, num_heads=4, b=2, n=1, seed=230)


def attention_case(rng):
    num_heads, head_dim = rng.randint(1, 4), rng.randint(1, 5)
    return (num_heads * head_dim, num_heads, rng.randint(1, 3), rng.randint(1, 7),
            rng.random() < 0.5, rng.randint(0, 10_000))


@title(N_("attention on random shapes"))
@pytest.mark.core
def test_attention_random_shapes(impl):
    """Random widths, head counts, batch sizes and token counts, from a fixed seed."""
    for dim, num_heads, b, n, qkv_bias, seed in drawn_cases(attention_case, count=8, seed=10):
        check_attention(impl, dim=dim, num_heads=num_heads, b=b, n=n, qkv_bias=qkv_bias,
                        seed=seed)


def check_mlp(impl: Implementation, *, args: tuple, shape: tuple[int, ...], seed: int,
              dtype=torch.float32, device: str | torch.device = "cpu",
              check_grads: bool = False) -> None:
    in_f = args[0]
    hidden = args[1] if len(args) > 1 and args[1] else in_f
    out_f = args[2] if len(args) > 2 and args[2] else in_f
    state = mlp_state(in_f, hidden, out_f, seed, dtype, device)
    module = build(impl, "Mlp", args, {}, state, MLP_NAMES, dtype, device)
    twin = MlpTwin(state)
    base = randn(*shape, in_f, seed=seed + 2, dtype=dtype, device=device)
    x = base.clone().requires_grad_(check_grads)
    on = _("{inputs} with {module}", inputs=describe_inputs(x=x),
           module=f"Mlp{args!r}".replace(",)", ")"))
    out = run(impl, module, x, "Mlp", on)
    ref_x = base.clone().requires_grad_(check_grads)
    expected = twin(ref_x)
    suspects = [Suspect("gelu-tanh-approximation",
                        predict=lambda: mlp_reference(state, base, gelu="tanh"))]
    expect_close(out, expected, _("the Mlp's output"), on, suspects)
    if check_grads:
        check = _("backward through {module}", module="Mlp")
        got = learner_grads(out, {"x": x, **dict(module.named_parameters())}, seed + 3, check, on)
        ref = grads_of(weighted_sum([expected], seed=seed + 3),
                       {"x": ref_x, **dict(twin.named_parameters())})
        expect_grads_close(got, ref, check, on)


@title(N_("the MLP against PyTorch"))
@pytest.mark.core
def test_mlp_matches_pytorch(impl):
    """fc1 -> exact GELU -> fc2 on (B, N, in) and (B, in) tokens; hidden and out features
    given or defaulted. float64 first: the tanh GELU is off by up to 4.7e-4."""
    check_mlp(impl, args=(6, 16, 5), shape=(2, 4), seed=300, dtype=torch.float64)
    check_mlp(impl, args=(6, 16, 5), shape=(2, 4), seed=305)
    check_mlp(impl, args=(4, 10), shape=(3, 2), seed=310)
    check_mlp(impl, args=(5,), shape=(3,), seed=320)
    check_mlp(impl, args=(4, None, 7), shape=(2, 3), seed=330)


def check_block(impl: Implementation, *, dim: int, num_heads: int, b: int, n: int, seed: int,
                mlp_ratio: float = 4.0, qkv_bias: bool = True, dtype=torch.float32,
                device: str | torch.device = "cpu", check_grads: bool = False,
                x_scale: float = 1.0, weight_scale: float = 0.5, slack: float = 1.0) -> None:
    """The learner's Block against nn.TransformerEncoderLayer (Pre-LN, GELU, eps 1e-6)."""
    hidden = int(dim * mlp_ratio)
    twin = block_twin(dim, num_heads, hidden, qkv_bias, seed, dtype, device, weight_scale)
    state = block_state(twin, qkv_bias)
    module = new_block(impl, dim, num_heads, mlp_ratio, qkv_bias, state, dtype, device)
    base = randn(b, n, dim, seed=seed + 1, dtype=dtype, device=device) * x_scale
    x = base.clone().requires_grad_(check_grads)
    on = block_on(x, dim, num_heads, mlp_ratio, qkv_bias)
    out = run(impl, module, x, "Block", on)
    ref_x = base.clone().requires_grad_(check_grads)
    expected = twin(ref_x)
    suspects = [Suspect(slug, predict=lambda s=switches: block_reference(
        state, base, num_heads, **s)) for slug, switches in block_mistakes(dim, num_heads)]
    check = _("the block's output (B, N, dim)")
    try:
        expect_close(out, expected, check, on, suspects, slack=slack)
    except AssertionError as failure:
        # LayerNorm's default eps (1e-5) is not a catalogued mistake, but worth a word: say
        # so when it explains the output and makes a visible difference on this input.
        default_eps = block_reference(state, base, num_heads, eps=1e-5).detach().double()
        rtol, atol = tolerance(dtype, MISTAKE_SLACK)
        if (out.shape == default_eps.shape and not getattr(failure, "slug", None)
                and not torch.allclose(default_eps, expected.detach().double(), rtol, atol)
                and torch.allclose(out.detach().double(), default_eps, rtol, atol)):
            raise verdict(check, on, [
                _("your output matches LayerNorm with eps=1e-5 (nn.LayerNorm's default); the "
                  "ViT block uses nn.LayerNorm(dim, eps=1e-6)")]) from None
        raise
    if check_grads:
        check = _("backward through {module}", module="Block")
        got = learner_grads(out, {"x": x, **twin_names(module, BLOCK_TO_TWIN)}, seed + 2,
                            check, on)
        ref = {"x": ref_x, **dict(twin.named_parameters())}
        if not qkv_bias:
            del ref["self_attn.in_proj_bias"]
        expect_grads_close(got, grads_of(weighted_sum([expected], seed=seed + 2), ref), check, on)


@title(N_("the block against PyTorch"))
@pytest.mark.core
def test_block_matches_pytorch(impl):
    """Pre-LN block equal to nn.TransformerEncoderLayer(norm_first=True, activation="gelu",
    layer_norm_eps=1e-6); with and without qkv_bias; mlp_ratio 4 and 2.75 (hidden width
    int(10 * 2.75) = 27)."""
    check_block(impl, dim=8, num_heads=2, b=2, n=5, seed=600)
    check_block(impl, dim=12, num_heads=3, b=3, n=4, qkv_bias=False, seed=610)
    check_block(impl, dim=10, num_heads=2, b=2, n=3, mlp_ratio=2.75, seed=620)


def block_case(rng):
    num_heads = rng.randint(1, 3)
    head_dim = max(rng.randint(2, 4), -(-4 // num_heads))  # dim >= 4 for a sound LayerNorm
    return (num_heads * head_dim, num_heads, rng.randint(1, 3), rng.randint(1, 6),
            rng.choice([1.0, 2.0, 4.0, 1.5]), rng.random() < 0.5, rng.randint(0, 10_000))


@title(N_("the block on random shapes"))
@pytest.mark.core
def test_block_random_shapes(impl):
    """Random widths, heads, batch sizes, token counts, mlp_ratio and qkv_bias."""
    for dim, num_heads, b, n, mlp_ratio, qkv_bias, seed in drawn_cases(block_case, count=6,
                                                                        seed=11):
        check_block(impl, dim=dim, num_heads=num_heads, b=b, n=n, mlp_ratio=mlp_ratio,
                    qkv_bias=qkv_bias, seed=seed)


# ------------------------------------------------------------------------------ follow-ups


@title(N_("every part in float64"))
@pytest.mark.followup
def test_float64(impl):
    """float64 in, float64 out, at float64 precision: every module."""
    f64 = torch.float64
    check_patch_embed(impl, img_size=(8, 12), patch=4, chans=3, dim=6, b=2, hw=(8, 12),
                      seed=700, dtype=f64)
    check_attention(impl, dim=12, num_heads=3, b=2, n=5, seed=710, dtype=f64)
    check_attention(impl, dim=8, num_heads=2, b=2, n=4, qkv_bias=False, seed=715, dtype=f64)
    check_block(impl, dim=8, num_heads=2, b=2, n=5, seed=720, dtype=f64)
    check_block(impl, dim=12, num_heads=3, b=2, n=3, qkv_bias=False, mlp_ratio=2.0, seed=725,
                dtype=f64, weight_scale=1.0)


@title(N_("the block's gradients"))
@pytest.mark.followup
def test_gradients(impl):
    """Gradients of the input and of every parameter equal PyTorch's, every module."""
    check_patch_embed(impl, img_size=(8, 12), patch=4, chans=3, dim=6, b=2, hw=(8, 12),
                      seed=800, check_grads=True)
    check_attention(impl, dim=12, num_heads=3, b=2, n=5, seed=810, check_grads=True)
    check_attention(impl, dim=8, num_heads=2, b=2, n=4, qkv_bias=False, seed=815,
                    dtype=torch.float64, check_grads=True)
    check_mlp(impl, args=(6, 10, 4), shape=(2, 3), seed=820, check_grads=True)
    check_block(impl, dim=8, num_heads=2, b=2, n=5, seed=830, check_grads=True)
    check_block(impl, dim=12, num_heads=3, b=2, n=4, qkv_bias=False, seed=835,
                dtype=torch.float64, check_grads=True)


@title(N_("the block's LayerNorm eps"))
@pytest.mark.followup
def test_block_layer_norm_eps(impl):
    """Both norms use eps=1e-6: tokens with a tiny spread, where eps shows (float64)."""
    check_block(impl, dim=8, num_heads=2, b=2, n=4, seed=900, dtype=torch.float64,
                x_scale=1e-3)


# ----------------------------------------------------------------------- half precision


@title(N_("half precision on a CUDA GPU"))
@pytest.mark.followup
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_half_precision_on_cuda(impl):
    """float16 and bfloat16 on the GPU keep their dtype and device: compared with the float32
    computation on the same (rounded) weights and inputs, loosely (half-precision rounding
    accumulates through the block)."""
    for dtype in (torch.float16, torch.bfloat16):
        twin = block_twin(16, 4, 64, True, seed=1700, device="cuda", weight_scale=0.25)
        with torch.no_grad():
            for param in twin.parameters():
                param.copy_(param.to(dtype))
        state = block_state(twin, True)
        half_state = {k: v.to(dtype) for k, v in state.items()}
        block = new_block(impl, 16, 4, 4.0, True, half_state, dtype, "cuda")
        x = randn(2, 7, 16, seed=1701, dtype=dtype, device="cuda")
        on = block_on(x, 16, 4, 4.0, True) + _(" on {device}", device="cuda")
        out = run(impl, block, x, "Block", on)
        expect_close(out, twin(x.float()).to(dtype), _("the block's output"), on, slack=2.0)
        patch = build(impl, "PatchEmbed", (), dict(img_size=8, patch_size=4, in_chans=3,
                                                   embed_dim=16), None, "", dtype, "cuda")
        image = randn(2, 3, 8, 8, seed=1702, dtype=dtype, device="cuda")
        image_on = describe_inputs(x=image) + _(" on {device}", device="cuda")
        tokens = run(impl, patch, image, "PatchEmbed", image_on)
        if tokens.dtype != dtype or tokens.device.type != "cuda" or tokens.shape != (2, 4, 16):
            raise verdict(_("PatchEmbed in half precision"), image_on, [
                _("expected {expected}, got {got}", expected=f"{dtype} (2, 4, 16) on cuda",
                  got=describe_tensor(tokens))])
