"""Grader for kata 15: ``RMSNorm``, ``SwiGLU``, ``LlamaAttention`` and ``LlamaBlock``.

PyTorch has no Llama block (and learners do not install ``transformers``), so the expected
numbers come from the twin (graders.llama_block.twin): the block as a function of its nine
weights, in float64, with one switch per catalogued mistake; a wrong output is named by the
mistake whose reproduction it matches, on the same weights and input.

Precision. The contract lets a correct block be float32-precise in three places, float64
inputs included: the RMSNorm (Hugging Face's ``LlamaRMSNorm`` upcasts every dtype to
float32), the softmax (its eager attention) and the RoPE angles (float32 ``inv_freq`` and
``position * inv_freq``; at position 16000 a float32 angle is a few thousandths of a radian
off). Each comparison therefore measures how far the twin moves when it takes exactly those
three steps in float32 (:data:`HF32`) and widens its tolerance by :data:`ALLOWANCE_FACTOR`
times that, no further: the projections are held to the dtype's own precision (SwiGLU's
float64 check has no allowance at all).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Callable

import pytest
import torch
from torch import Tensor, nn

from graders.core.compare import (
    GRAD_SLACK,
    expect_close,
    expect_grads_close,
    expect_tracks_grad,
    tolerance,
)
from graders.core.i18n import N_, _
from graders.core.implementation import Implementation
from graders.core import modules
from graders.core.modules import construct, load
from graders.core.inputs import drawn_cases, generator, grads_of, leaf_copies, randn, weighted_sum
from graders.core.mistakes import Suspect
from graders.core.report import describe_inputs, describe_value, title, verdict
from graders.llama_block.twin import (
    ATTENTION_MISTAKES,
    BLOCK_MISTAKES,
    HALF_NORM_MISTAKES,
    HF32,
    MLP_MISTAKES,
    NORM_MISTAKES,
    Config,
    Variant,
    attention,
    llama_reference,
    rms_norm,
    swiglu,
)
from graders.twins.rope import describe_positions

__all__ = [
    "test_llama_state_dict",
    "test_rmsnorm",
    "test_swiglu",
    "test_attention_positions",
    "test_attention_heads",
    "test_block",
    "test_block_random_shapes",
    "test_llama_float64",
    "test_llama_gradients",
    "test_llama_long_positions",
    "test_llama_half_precision",
    "test_llama_half_precision_on_cuda",
]

# The float32 steps a correct block may take (see the module's docstring) move the output by
# some amount; a learner's float32 steps may differ from Hugging Face's by a few times that.
ALLOWANCE_FACTOR = 10.0
# A whole block is a longer chain than one attention: a little more room than the dtype's.
BLOCK_SLACK = 3.0



def suspects_of(mistakes: list[tuple[str, Variant]], run: Callable[[Variant], Tensor]
                ) -> list[Suspect]:
    return [Suspect(slug, predict=lambda v=variant: run(v)) for slug, variant in mistakes]


# ------------------------------------------------------------------------ the inputs


def random_state(cfg: Config, seed: int) -> dict[str, Tensor]:
    """The nine weights, float64: projections of order 1/sqrt(fan_in) (scores of order 1),
    norm gains 1 + noise (so that a forgotten weight shows)."""
    d = cfg.head_dim
    shapes = {
        "self_attn.q_proj.weight": (cfg.dim, cfg.dim),
        "self_attn.k_proj.weight": (cfg.num_kv_heads * d, cfg.dim),
        "self_attn.v_proj.weight": (cfg.num_kv_heads * d, cfg.dim),
        "self_attn.o_proj.weight": (cfg.dim, cfg.dim),
        "mlp.gate_proj.weight": (cfg.hidden_dim, cfg.dim),
        "mlp.up_proj.weight": (cfg.hidden_dim, cfg.dim),
        "mlp.down_proj.weight": (cfg.dim, cfg.hidden_dim),
        "input_layernorm.weight": (cfg.dim,),
        "post_attention_layernorm.weight": (cfg.dim,),
    }
    state = {}
    for i, (name, shape) in enumerate(shapes.items()):
        noise = randn(*shape, seed=seed + i, dtype=torch.float64)
        state[name] = 1 + 0.3 * noise if len(shape) == 1 else noise * 1.5 / math.sqrt(shape[1])
    return state


def part(state: dict[str, Tensor], prefix: str) -> dict[str, Tensor]:
    return {k.removeprefix(prefix): t for k, t in state.items() if k.startswith(prefix)}


def make_x(b: int, n: int, dim: int, seed: int, scale: float = 1.0) -> Tensor:
    """(b, n, dim) float64: normal values with a per-token offset (a nonzero mean per row,
    which LayerNorm-style centring would remove)."""
    offset = randn(b, n, 1, seed=seed + 1, dtype=torch.float64)
    return (randn(b, n, dim, seed=seed, dtype=torch.float64) + offset) * scale


def make_positions(kind: str, b: int, n: int, seed: int) -> Tensor | None:
    """None; (n,) "offset" (a run not from 0), "scattered" (any order, repeats, int32),
    "reversed"; (b, n) "rows" (each row its own offset: left padding, a cache) or
    "batch-random"; "far" (b, n) near 16000."""
    g = generator(seed)
    if kind == "none":
        return None
    if kind == "offset":
        return torch.arange(n) + int(torch.randint(3, 50, (), generator=g))
    if kind == "scattered":
        return torch.randint(0, 40, (n,), generator=g).to(torch.int32)
    if kind == "reversed":
        return torch.arange(n).flip(0) * 3 + 2
    if kind == "rows":
        return torch.arange(n)[None, :] + torch.randint(0, 30, (b, 1), generator=g)
    if kind == "batch-random":
        return torch.randint(0, 100, (b, n), generator=g)
    if kind == "far":
        return 16000 - torch.arange(n).flip(0)[None, :] * 7 - torch.randint(0, 900, (b, 1), generator=g)
    raise ValueError(kind)


# ------------------------------------------------------------------- the learner's modules


def expect_state_dict(impl: Implementation, module: nn.Module, expected: dict[str, tuple],
                      what: str) -> None:
    """The engine's check (graders.core.modules), saying where a RoPE table belongs."""
    modules.expect_state_dict(impl, module, expected, what, unexpected=_(
        "unexpected keys: {keys} (a RoPE table or inv_freq kept on the module must be a buffer "
        "registered with persistent=False, or a plain attribute)", keys="{keys}"))


def build_block(impl: Implementation, cfg: Config, state: dict[str, Tensor],
                dtype=torch.float32, device="cpu") -> nn.Module:
    what = cfg.block_name()
    kwargs = {}
    if cfg.rope_base != 10000.0:
        kwargs["rope_base"] = cfg.rope_base
    if cfg.eps != 1e-6:
        kwargs["eps"] = cfg.eps
    module = construct(impl, "LlamaBlock", (cfg.dim, cfg.num_heads, cfg.num_kv_heads,
                                            cfg.hidden_dim), kwargs, what)
    expect_state_dict(impl, module, {k: tuple(t.shape) for k, t in state.items()}, what)
    return load(impl, module, state, what, dtype, device)


def build_attention(impl: Implementation, cfg: Config, state: dict[str, Tensor],
                    dtype=torch.float32, device="cpu") -> nn.Module:
    what = cfg.attention_name()
    kwargs = {} if cfg.rope_base == 10000.0 else {"rope_base": cfg.rope_base}
    module = construct(impl, "LlamaAttention", (cfg.dim, cfg.num_heads, cfg.num_kv_heads),
                       kwargs, what)
    weights = part(state, "self_attn.")
    expect_state_dict(impl, module, {k: tuple(t.shape) for k, t in weights.items()}, what)
    return load(impl, module, weights, what, dtype, device)


def run(impl: Implementation, module: nn.Module, x: Tensor, positions: Tensor | None,
        name: str, on: str) -> Any:
    """The learner's forward; positions None is not passed."""
    args = (x,) if positions is None else (x, positions.to(x.device))
    return impl.call(module, *args, what=f"{name}.forward", on=on)


def expect_allowed(got: Any, expected: Tensor, allowed: Tensor, dtype: torch.dtype, check: str,
                   on: str, suspects: list[Suspect] = (), base: float = 1.0,
                   device: str = "cpu") -> None:
    """``got`` against ``expected`` (float64) with the dtype's tolerance times ``base``, plus
    ALLOWANCE_FACTOR times the largest distance between the float64 twin and its
    float32-allowance twin ``allowed`` as an absolute margin (the relative one stays).

    expect_close widens by a factor only, so it runs first with the factor that gives the
    margin (type, shape, dtype, device, values and the mistake's name); what it let through
    beyond the margin is then compared at the dtype's own tolerance."""
    target = expected.detach().to(dtype=dtype, device=device)  # the dtype and device expected
    rtol, atol = tolerance(dtype, base)
    gap = float((allowed.detach() - expected.detach()).abs().max()) if expected.numel() else 0.0
    margin = atol + ALLOWANCE_FACTOR * gap
    expect_close(got, target, check, on, suspects, slack=base * margin / atol)
    difference = (got.detach().to("cpu", torch.float64) - expected.detach().to("cpu", torch.float64)).abs()
    beyond = difference > margin + rtol * expected.detach().to("cpu", torch.float64).abs()
    if bool(beyond.any()):
        expect_close(got, target, check, on, suspects, slack=base, mask=beyond.to(target.device))


def describe_call(x: Tensor, positions: Tensor | None, module: str, device: str = "cpu") -> str:
    where = "" if device == "cpu" else f" on {device}"
    return _("{inputs}, {positions} with {module}", inputs=describe_inputs(x=x) + where,
             positions=describe_positions(positions, shown=5), module=module)


# --------------------------------------------------------------------------- checks


def check_block(impl: Implementation, cfg: Config, *, b: int, n: int, seed: int,
                positions: str = "none", dtype=torch.float32, check_grads: bool = False,
                x_scale: float = 1.0) -> None:
    """The learner's LlamaBlock against the twin, with the same weights and input."""
    state = random_state(cfg, seed)
    module = build_block(impl, cfg, state, dtype)
    base_x = make_x(b, n, cfg.dim, seed + 20, x_scale)
    pos = make_positions(positions, b, n, seed + 21)
    x_in = base_x.to(dtype)
    (x,) = leaf_copies(x_in) if check_grads else (x_in,)
    on = describe_call(x_in, pos, cfg.block_name())
    output = run(impl, module, x, pos, "LlamaBlock", on)

    ref_state = {k: t.clone().requires_grad_(check_grads) for k, t in state.items()}
    (ref_x,) = leaf_copies(base_x) if check_grads else (base_x,)
    expected = llama_reference(ref_state, ref_x, cfg, pos)
    with torch.no_grad():
        allowed = llama_reference(state, base_x, cfg, pos, HF32)
    suspects = suspects_of(BLOCK_MISTAKES, lambda v: llama_reference(state, base_x, cfg, pos, v))
    expect_allowed(output, expected, allowed, dtype, _("the output (b, n, dim)"), on, suspects,
                   base=BLOCK_SLACK)
    if not check_grads:
        return
    check = _("backward through the output")
    expect_tracks_grad({_("the output"): output}, check, on)
    got = grads_of(weighted_sum([output], seed=seed + 30),
                   {"x": x, **dict(module.named_parameters())}, on)
    want = grads_of(weighted_sum([expected], seed=seed + 30), {"x": ref_x, **ref_state})
    hf_state = {k: t.clone().requires_grad_(True) for k, t in state.items()}
    (hf_x,) = leaf_copies(base_x)
    hf_out = llama_reference(hf_state, hf_x, cfg, pos, HF32)
    near = grads_of(weighted_sum([hf_out], seed=seed + 30), {"x": hf_x, **hf_state})
    for name in want:  # None first, as expect_grads_close says it; then the values
        expect_grads_close({name: got.get(name)}, {name: want[name].to(dtype)}, check, on,
                           slack=math.inf)
        expect_allowed(got[name], want[name], near[name], dtype,
                       _("{check}: gradient of {name}", check=check, name=name), on,
                       base=BLOCK_SLACK * GRAD_SLACK)


def check_attention(impl: Implementation, cfg: Config, *, b: int, n: int, seed: int,
                    positions: str = "none", dtype=torch.float32) -> None:
    """The learner's LlamaAttention against the twin's attention."""
    state = random_state(cfg, seed)
    weights = part(state, "self_attn.")
    module = build_attention(impl, cfg, state, dtype)
    x64 = make_x(b, n, cfg.dim, seed + 20)
    pos = make_positions(positions, b, n, seed + 21)
    on = describe_call(x64.to(dtype), pos, cfg.attention_name())
    output = run(impl, module, x64.to(dtype), pos, "LlamaAttention", on)
    expected = attention(x64, weights, cfg, pos)
    allowed = attention(x64, weights, cfg, pos, HF32)
    suspects = suspects_of(ATTENTION_MISTAKES, lambda v: attention(x64, weights, cfg, pos, v))
    expect_allowed(output, expected, allowed, dtype, _("the output (b, n, dim)"), on, suspects)


def check_rmsnorm(impl: Implementation, shape: tuple[int, ...], *, seed: int, eps: float | None = None,
                  scale: float = 1.0, dtype=torch.float32, device="cpu") -> None:
    """The learner's RMSNorm(dim[, eps]) with a random weight against the formula."""
    dim = shape[-1]
    what = f"RMSNorm({dim}" + ("" if eps is None else f", eps={eps:g}") + ")"
    module = construct(impl, "RMSNorm", (dim,), {} if eps is None else {"eps": eps}, what)
    expect_state_dict(impl, module, {"weight": (dim,)}, what)
    initial = impl.call(lambda: module.weight.detach().to("cpu", torch.float64).clone(),
                        what=f"{what}.weight", on=_("construction"))
    if not torch.equal(initial, torch.ones(dim, dtype=torch.float64)):
        raise verdict(_("the initial weight of {module}", module=what), _("construction"),
                      [_("expected 1.0 everywhere (the norm starts as the identity scale), got {value}",
                         value=describe_value(module.weight.detach()))])
    weight = 1 + 0.3 * randn(dim, seed=seed + 1, dtype=torch.float64)
    module = load(impl, module, {"weight": weight}, what, dtype, device)
    x64 = (randn(*shape, seed=seed, dtype=torch.float64)
           + randn(*shape[:-1], 1, seed=seed + 2, dtype=torch.float64)) * scale
    x = x64.to(dtype=dtype, device=device)
    where = "" if device == "cpu" else f" on {device}"
    on = _("{inputs} with {module}", inputs=describe_inputs(x=x) + where, module=what)
    got = impl.call(module, x, what="RMSNorm.forward", on=on)
    eps_ = 1e-6 if eps is None else eps
    x_used = x.to("cpu", torch.float64)  # the values the learner was given
    expected = rms_norm(x_used, weight.to(dtype).double(), eps_)
    # float64 RMSNorm is graded at float32 precision (LlamaRMSNorm upcasts to float32).
    precise = torch.float32 if dtype == torch.float64 else dtype
    rtol, atol = tolerance(precise)
    base_rtol, base_atol = tolerance(dtype)
    slack = max(rtol / base_rtol, atol / base_atol)
    mistakes = NORM_MISTAKES + ([HALF_NORM_MISTAKES[dtype]] if dtype in HALF_NORM_MISTAKES else [])
    suspects = suspects_of(mistakes, lambda v: rms_norm(x_used, weight.to(dtype).double(), eps_, v))
    expect_close(got, expected.to(dtype=dtype, device=device), _("the normalised x (..., dim)"),
                 on, suspects, slack=slack)


def check_swiglu(impl: Implementation, dim: int, hidden: int, lead: tuple[int, ...], *,
                 seed: int, dtype=torch.float32) -> None:
    what = f"SwiGLU({dim}, {hidden})"
    module = construct(impl, "SwiGLU", (dim, hidden), {}, what)
    cfg = Config(dim, 1, 1, hidden)
    state = part(random_state(cfg, seed), "mlp.")
    expect_state_dict(impl, module, {k: tuple(t.shape) for k, t in state.items()}, what)
    module = load(impl, module, state, what, dtype, "cpu")
    x64 = randn(*lead, dim, seed=seed + 20, dtype=torch.float64)
    on = _("{inputs} with {module}", inputs=describe_inputs(x=x64.to(dtype)), module=what)
    got = impl.call(module, x64.to(dtype), what="SwiGLU.forward", on=on)
    suspects = suspects_of(MLP_MISTAKES, lambda v: swiglu(x64, state, v))
    expect_close(got, swiglu(x64, state).to(dtype), _("the output (..., dim)"), on, suspects)


# (dim, num_heads, num_kv_heads, hidden_dim): 1 < kv < h (where tiling shows), multi-query
# (kv = 1) and multi-head (kv = h); hidden_dim about 8/3 dim, as in Llama.
GROUPED = [Config(16, 4, 2, 40), Config(24, 6, 3, 64), Config(32, 8, 2, 88)]
MQA, MHA = Config(12, 3, 1, 32), Config(12, 3, 3, 32)


# ------------------------------------------------------------------------------ core


@pytest.mark.core
@title(N_("the state dict: Hugging Face's nine keys"))
def test_llama_state_dict(impl):
    """RMSNorm has one weight; SwiGLU and LlamaAttention their projections, without biases;
    LlamaBlock's state dict has exactly LlamaDecoderLayer's nine keys and shapes and loads
    with strict=True."""
    what = "RMSNorm(16)"
    expect_state_dict(impl, construct(impl, "RMSNorm", (16,), {}, what), {"weight": (16,)}, what)
    what = "SwiGLU(16, 40)"
    module = construct(impl, "SwiGLU", (16, 40), {}, what)
    expect_state_dict(impl, module, {"gate_proj.weight": (40, 16), "up_proj.weight": (40, 16),
                                     "down_proj.weight": (16, 40)}, what)
    build_attention(impl, GROUPED[1], random_state(GROUPED[1], seed=2))
    for cfg in (GROUPED[0], MQA):
        build_block(impl, cfg, random_state(cfg, seed=1))


@pytest.mark.core
@title(N_("RMSNorm against its formula"))
def test_rmsnorm(impl):
    """x / sqrt(mean(x², -1) + eps) * weight on (n, dim), (b, n, dim) and 4-D inputs, eps
    default and given; small inputs, where eps inside or outside the root differ."""
    check_rmsnorm(impl, (5, 16), seed=100)
    check_rmsnorm(impl, (2, 3, 12), seed=110, eps=0.5)
    check_rmsnorm(impl, (2, 2, 3, 8), seed=120, scale=0.01)
    check_rmsnorm(impl, (3, 4, 16), seed=130, eps=1e-5, scale=0.003)


@pytest.mark.core
@title(N_("SwiGLU against its formula"))
def test_swiglu(impl):
    """down_proj(silu(gate_proj(x)) * up_proj(x)) on 2-D and 3-D inputs."""
    check_swiglu(impl, 16, 40, (2, 5), seed=200)
    check_swiglu(impl, 12, 32, (7,), seed=210)


@pytest.mark.core
@title(N_("LlamaAttention: RoPE positions and the causal mask"))
def test_attention_positions(impl):
    """positions None, (n,) from an offset, (n,) int32 in any order with repeats, reversed,
    and (b, n) one row per sequence; the causal mask follows the sequence index."""
    for i, kind in enumerate(("none", "offset", "scattered", "reversed", "rows", "batch-random")):
        check_attention(impl, GROUPED[i % 2], b=2 + i % 2, n=5 + i % 3, seed=300 + 10 * i,
                        positions=kind)


@pytest.mark.core
@title(N_("LlamaAttention for every kv-head count"))
def test_attention_heads(impl):
    """Query head j reads kv head j // (num_heads // num_kv_heads): 1 < kv < h, kv = 1 and
    kv = h; a rope_base other than 10000."""
    check_attention(impl, GROUPED[2], b=2, n=6, seed=400, positions="rows")
    check_attention(impl, MQA, b=2, n=5, seed=410, positions="offset")
    check_attention(impl, MHA, b=3, n=4, seed=420)
    check_attention(impl, replace(GROUPED[0], rope_base=500000.0), b=2, n=5, seed=430,
                    positions="batch-random")


@pytest.mark.core
@title(N_("the block against its twin"))
def test_block(impl):
    """h = x + self_attn(input_layernorm(x)); out = h + mlp(post_attention_layernorm(h)), with
    positions None, (n,) and (b, n), and an eps and rope_base of the caller's."""
    check_block(impl, GROUPED[0], b=2, n=5, seed=500)
    check_block(impl, GROUPED[1], b=3, n=4, seed=510, positions="rows")
    check_block(impl, replace(MQA, eps=0.1, rope_base=100.0), b=2, n=6, seed=520,
                positions="scattered", x_scale=0.3)


def block_case(rng):
    kv = rng.randint(1, 3)
    heads = kv * rng.randint(1, 3)
    dim = heads * 2 * rng.randint(1, 3)
    hidden = rng.randint(dim, 3 * dim)
    positions = rng.choice(["none", "offset", "scattered", "rows", "batch-random"])
    return Config(dim, heads, kv, hidden), rng.randint(1, 3), rng.randint(1, 6), positions, \
        rng.randint(0, 10_000)


@pytest.mark.core
@title(N_("the block on random shapes"))
def test_block_random_shapes(impl):
    """Random widths, head and kv-head counts, hidden widths, lengths and positions, drawn
    from a fixed seed (the same cases every run)."""
    for cfg, b, n, positions, seed in drawn_cases(block_case, count=6, seed=15):
        check_block(impl, cfg, b=b, n=n, seed=seed, positions=positions)


# ------------------------------------------------------------------------- follow-ups


@pytest.mark.followup
@title(N_("the parts and the block in float64"))
def test_llama_float64(impl):
    """float64 in, float64 out: SwiGLU to float64's precision, RMSNorm to float32's, the
    block and the attention with the contract's float32 allowances only."""
    check_swiglu(impl, 16, 40, (2, 3), seed=600, dtype=torch.float64)
    check_rmsnorm(impl, (2, 5, 16), seed=610, dtype=torch.float64, scale=0.05)
    check_attention(impl, GROUPED[0], b=2, n=5, seed=620, positions="rows", dtype=torch.float64)
    check_block(impl, GROUPED[1], b=2, n=4, seed=630, positions="offset", dtype=torch.float64)


@pytest.mark.followup
@title(N_("gradients of the input and the nine weights"))
def test_llama_gradients(impl):
    """float64 gradients of x and of all nine parameters equal the twin's."""
    check_block(impl, GROUPED[0], b=2, n=5, seed=700, positions="rows", dtype=torch.float64,
                check_grads=True)


@pytest.mark.followup
@title(N_("positions up to 16000"))
def test_llama_long_positions(impl):
    """Positions near 16000 (a long context, one offset per row), float32 and float64, graded
    with float32 angles' tolerance."""
    check_attention(impl, GROUPED[0], b=2, n=5, seed=800, positions="far")
    check_block(impl, GROUPED[2], b=2, n=4, seed=810, positions="far", dtype=torch.float64)


def check_half_block(impl: Implementation, dtype: torch.dtype, device: str, *, seed: int,
                     x_scale: float = 1.0) -> None:
    """The block in float16 or bfloat16 on ``device``, at positions below 512, against the
    float64 twin on the same rounded weights and input. With ``x_scale`` > 1 (a power of 2)
    the input and the outputs of o_proj and down_proj are that much larger (a residual
    stream of hundreds, as real models have): x² then overflows float16 unless the norms
    upcast, and the sublayers' outputs weigh as much as the residual, so a norm that returns
    zeros shows. The output is then compared divided by ``x_scale`` (exact in a binary
    type), so that the half type's tolerances stay those of values of order 1."""
    cfg = GROUPED[0]
    state = random_state(cfg, seed)
    for name in ("self_attn.o_proj.weight", "mlp.down_proj.weight"):
        state[name] = state[name] * x_scale
    state = {k: t.to(dtype).double() for k, t in state.items()}
    module = build_block(impl, cfg, state, dtype, device)
    x64 = make_x(2, 6, cfg.dim, seed + 20, x_scale).to(dtype).double()
    pos = torch.tensor([[300, 301, 302, 303, 304, 305], [505, 506, 507, 508, 509, 510]])
    on = describe_call(x64.to(dtype), pos, cfg.block_name(), device)
    output = run(impl, module, x64.to(dtype).to(device), pos, "LlamaBlock", on)
    expected = llama_reference(state, x64, cfg, pos) / x_scale
    suspects = suspects_of(BLOCK_MISTAKES + [HALF_NORM_MISTAKES[dtype]],
                           lambda v: llama_reference(state, x64, cfg, pos, v) / x_scale)
    check = _("the output (b, n, dim)")
    if x_scale != 1.0:
        check = _("the output (b, n, dim), divided by {scale:g}", scale=x_scale)
        if isinstance(output, Tensor) and output.is_floating_point():
            output = output / x_scale
    expect_close(output, expected.to(dtype=dtype, device=device), check, on, suspects, slack=2.0)


@pytest.mark.followup
@title(N_("float16 and bfloat16 on the CPU"))
def test_llama_half_precision(impl):
    """float16 and bfloat16 run on the CPU too. RMSNorm of float16 values above 256 (their
    squares beyond float16's largest number, 65504, unless computed in float32); the block
    in float16 and bfloat16 keeps its dtype, at positions below 512, with inputs of order 1
    and of order 512, compared with the float64 twin on the same rounded weights and
    inputs."""
    check_rmsnorm(impl, (2, 3, 16), seed=900, scale=400.0, dtype=torch.float16)
    check_rmsnorm(impl, (2, 3, 16), seed=905, scale=400.0, dtype=torch.bfloat16)
    for i, dtype in enumerate((torch.float16, torch.bfloat16)):
        check_half_block(impl, dtype, "cpu", seed=910 + 10 * i)
        check_half_block(impl, dtype, "cpu", seed=930 + 10 * i, x_scale=512.0)


@pytest.mark.followup
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@title(N_("float16 and bfloat16 on the GPU"))
def test_llama_half_precision_on_cuda(impl):
    """The same on a CUDA GPU: RMSNorm of float16 values above 256 stays finite; the block
    in float16 and bfloat16 keeps its dtype and device."""
    check_rmsnorm(impl, (2, 3, 16), seed=900, scale=400.0, dtype=torch.float16, device="cuda")
    for i, dtype in enumerate((torch.float16, torch.bfloat16)):
        check_half_block(impl, dtype, "cuda", seed=910 + 10 * i)
        check_half_block(impl, dtype, "cuda", seed=930 + 10 * i, x_scale=512.0)
