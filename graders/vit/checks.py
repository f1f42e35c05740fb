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

import math
from contextlib import contextmanager
from typing import Any, Iterator

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graders.core.i18n import N_, _
from graders.core.compare import (
    MISTAKE_SLACK,
    expect_close,
    expect_grads_close,
    expect_tensor,
    expect_tracks_grad,
    tolerance,
)
from graders.core.implementation import Implementation
from graders.core.inputs import drawn_cases, grads_of, randn, randomize_, weighted_sum
from graders.core.mistakes import Suspect
from graders.twins.reference import attend
from graders.core.report import describe_inputs, describe_tensor, describe_value, verdict, title
from graders.twins.projections import weights_behind_output

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

EPS = 1e-6  # the ViT block's LayerNorm eps (nn.LayerNorm's default is 1e-5)

# The Block's state dict (timm's names) -> nn.TransformerEncoderLayer's names.
BLOCK_TO_TWIN = {
    "norm1.weight": "norm1.weight",
    "norm1.bias": "norm1.bias",
    "attn.qkv.weight": "self_attn.in_proj_weight",
    "attn.qkv.bias": "self_attn.in_proj_bias",
    "attn.proj.weight": "self_attn.out_proj.weight",
    "attn.proj.bias": "self_attn.out_proj.bias",
    "norm2.weight": "norm2.weight",
    "norm2.bias": "norm2.bias",
    "mlp.fc1.weight": "linear1.weight",
    "mlp.fc1.bias": "linear1.bias",
    "mlp.fc2.weight": "linear2.weight",
    "mlp.fc2.bias": "linear2.bias",
}
# The Attention's state dict -> nn.MultiheadAttention's names.
ATTENTION_TO_TWIN = {
    "qkv.weight": "in_proj_weight",
    "qkv.bias": "in_proj_bias",
    "proj.weight": "out_proj.weight",
    "proj.bias": "out_proj.bias",
}


# --------------------------------------------------------------------------- references


def split_qkv(qkv: Tensor, num_heads: int, layout: str = "ok") -> tuple[Tensor, Tensor, Tensor]:
    """qkv(x) (B, N, 3*C) -> q, k, v (B, h, N, d), as an implementation with ``layout`` does.

    "ok": (B, N, 3, h, d) permuted to (3, B, h, N, d);
    "h3": read as (B, N, h, 3, d), "hd3" as (B, N, h, d, 3) (qkv-reshape-order);
    "reshape": chunked into q, k, v, each reshaped straight to (B, h, N, d)
    (reshape-without-transpose).
    """
    B, N, three_c = qkv.shape
    d = three_c // 3 // num_heads
    if layout == "ok":
        return qkv.reshape(B, N, 3, num_heads, d).permute(2, 0, 3, 1, 4).unbind(0)
    if layout == "h3":
        return qkv.reshape(B, N, num_heads, 3, d).permute(3, 0, 2, 1, 4).unbind(0)
    if layout == "hd3":
        return qkv.reshape(B, N, num_heads, d, 3).permute(4, 0, 2, 1, 3).unbind(0)
    if layout == "reshape":
        return tuple(t.reshape(B, num_heads, N, d) for t in qkv.chunk(3, dim=-1))
    raise ValueError(layout)


def attention_reference(state: dict[str, Tensor], x: Tensor, num_heads: int, *,
                        prefix: str = "", layout: str = "ok", merge: str = "ok",
                        scale: float | None = None) -> Tensor:
    """timm's Attention as a function of its state dict, with mistake switches.

    x (B, N, C) -> (B, N, C). ``layout``: see :func:`split_qkv`; ``merge``: "ok"
    (transpose, then reshape) or "reshape" (straight to (B, N, C)); ``scale``: None for
    1/sqrt(head_dim).
    """
    B, N, C = x.shape
    qkv = F.linear(x, state[prefix + "qkv.weight"], state.get(prefix + "qkv.bias"))
    q, k, v = split_qkv(qkv, num_heads, layout)
    attended, _ = attend(q, k, v, scale=scale)  # (B, h, N, d)
    if merge == "ok":
        merged = attended.transpose(1, 2).reshape(B, N, C)
    else:
        merged = attended.reshape(B, N, C)
    return F.linear(merged, state[prefix + "proj.weight"], state[prefix + "proj.bias"])


def attention_mistakes(dim: int, num_heads: int) -> list[tuple[str, dict[str, Any]]]:
    """(slug, switches of :func:`attention_reference`) for every modelled mistake."""
    mistakes: list[tuple[str, dict[str, Any]]] = [("qkv-reshape-order", {"layout": "h3"}),
                                                  ("qkv-reshape-order", {"layout": "hd3"})]
    for layout, merge in (("ok", "reshape"), ("reshape", "ok"), ("reshape", "reshape")):
        mistakes.append(("reshape-without-transpose", {"layout": layout, "merge": merge}))
    mistakes.append(("missing-scale", {"scale": 1.0}))
    if num_heads > 1:
        mistakes += [("scale-by-embed-dim", {"scale": 1 / math.sqrt(dim)}),
                     ("scale-by-embed-dim", {"scale": 1 / dim})]
    return mistakes


def mlp_reference(state: dict[str, Tensor], x: Tensor, *, prefix: str = "",
                  gelu: str = "none") -> Tensor:
    """fc1 -> GELU (``gelu``: "none" exact, "tanh" the approximation) -> fc2."""
    hidden = F.linear(x, state[prefix + "fc1.weight"], state[prefix + "fc1.bias"])
    hidden = F.gelu(hidden, approximate=gelu)
    return F.linear(hidden, state[prefix + "fc2.weight"], state[prefix + "fc2.bias"])


def block_reference(state: dict[str, Tensor], x: Tensor, num_heads: int, *,
                    norm_at: tuple[str, str] = ("pre", "pre"), gelu: str = "none",
                    eps: float = EPS, keep: tuple[Tensor | float, Tensor | float] = (1.0, 1.0),
                    residual: tuple[str, str] = ("x", "x"),
                    **attention_switches: Any) -> Tensor:
    """The ViT block as a function of its state dict (timm's names), eval mode.

    x (B, N, C) -> (B, N, C). ``norm_at`` per sublayer: "pre" (x + f(norm(x)), right),
    "post" (norm(x + f(x))) or "sublayer" (x + norm(f(x))). ``keep``: what each branch is
    multiplied by before its residual sum (DropPath's per-sample factor, (B, 1, 1)).
    ``residual`` per sublayer: "x" (right), "none" (missing-residual), "normed" (Pre-LN
    adding norm(x) instead of x: residual-from-normed).
    """
    C = x.shape[-1]

    def norm(i: int, t: Tensor) -> Tensor:
        return F.layer_norm(t, (C,), state[f"norm{i}.weight"], state[f"norm{i}.bias"], eps)

    sublayers = (
        lambda t: attention_reference(state, t, num_heads, prefix="attn.", **attention_switches),
        lambda t: mlp_reference(state, t, prefix="mlp.", gelu=gelu),
    )
    for i, (where, sublayer, factor, base) in enumerate(zip(norm_at, sublayers, keep, residual),
                                                        start=1):
        def add(skip: Tensor, update: Tensor) -> Tensor:
            return update if base == "none" else skip + update

        if where == "pre":
            normed = norm(i, x)
            x = add(normed if base == "normed" else x, factor * sublayer(normed))
        elif where == "post":
            x = norm(i, add(x, factor * sublayer(x)))
        else:
            x = add(x, factor * norm(i, sublayer(x)))
    return x


def block_mistakes(dim: int, num_heads: int) -> list[tuple[str, dict[str, Any]]]:
    mistakes: list[tuple[str, dict[str, Any]]] = [
        ("norm-order-swapped", {"norm_at": norm_at})
        for norm_at in (("post", "post"), ("post", "pre"), ("pre", "post"),
                        ("sublayer", "sublayer"))
    ]
    for which in (("none", "x"), ("x", "none"), ("none", "none")):
        mistakes.append(("missing-residual", {"residual": which}))
    for which in (("normed", "normed"), ("normed", "x"), ("x", "normed")):
        mistakes.append(("residual-from-normed", {"residual": which}))
    mistakes.append(("gelu-tanh-approximation", {"gelu": "tanh"}))
    return mistakes + attention_mistakes(dim, num_heads)


# ---------------------------------------------------------------------- learner modules


def expect_module(value: Any, what: str) -> nn.Module:
    if not isinstance(value, nn.Module):
        raise verdict(what, _("construction"),
                      [_("expected an nn.Module, got {value}", value=describe_value(value))])
    return value


def build(impl: Implementation, name: str, args: tuple, kwargs: dict[str, Any],
          state: dict[str, Tensor] | None, names_hint: str, dtype=torch.float64,
          device: str | torch.device = "cpu") -> nn.Module:
    """``name(*args, **kwargs)`` from the learner's file, moved to dtype and device, with
    ``state`` (timm's names) loaded strictly; in eval mode."""
    shown = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
    what = f"{name}({shown})"
    module = impl.call(impl.attr(name), *args, **kwargs, what=what, on=_("construction"))
    module = expect_module(module, what)
    module = impl.call(module.to, device=device, dtype=dtype, what=f"{what}.to", on=_("construction"))
    module = expect_module(module, f"{what}.to")
    if state is not None:
        on = _("PyTorch's weights under timm's names")
        theirs = impl.call(module.state_dict, what=f"{what}.state_dict", on=on)
        missing = [k for k in state if k not in theirs]
        unexpected = [k for k in theirs if k not in state]
        resized = [_("{key}: yours {yours}, expected {expected}", key=k,
                       yours=tuple(theirs[k].shape), expected=tuple(v.shape))
                   for k, v in state.items() if k in theirs and theirs[k].shape != v.shape]
        if missing or unexpected or resized:
            details = []
            if missing:
                details.append(_("missing: {names}", names=", ".join(missing[:6])))
            if unexpected:
                details.append(_("unexpected: {names}", names=", ".join(unexpected[:6])))
            details += [_("wrong shape {key}", key=r) for r in resized[:3]]
            details.append(_(names_hint))
            raise verdict(_("loading weights into {module}", module=what), on, details)
        impl.call(module.load_state_dict, state, what=f"{what}.load_state_dict", on=on)
    module.eval()
    return module


def run(impl: Implementation, module: nn.Module, x: Tensor, what: str, on: str) -> Tensor:
    out = impl.call(module, x, what=f"{what}.forward", on=on)
    return expect_tensor(out, f"{what}.forward", on)


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Learner randomness (dropout, DropPath) from a fixed seed: the same verdict twice."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def learner_grads(out: Tensor, named: dict[str, Tensor], seed: int, check: str,
                  on: str) -> dict[str, Tensor | None]:
    expect_tracks_grad({_("the output"): out}, check, on)
    return grads_of(weighted_sum([out], seed=seed), named)


def twin_names(module: nn.Module, mapping: dict[str, str] | None) -> dict[str, Tensor]:
    """The learner's parameters under the twin's names (only those the mapping knows)."""
    theirs = dict(module.named_parameters())
    if mapping is None:
        return theirs
    return {mapping[name]: p for name, p in theirs.items() if name in mapping}


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


# ------------------------------------------------------------------------------- Attention

ATTENTION_NAMES = N_("Attention has qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias) and proj = "
                     "nn.Linear(dim, dim)")


def attention_twin(dim: int, num_heads: int, qkv_bias: bool, seed: int, dtype=torch.float32,
                   device: str | torch.device = "cpu") -> nn.MultiheadAttention:
    twin = nn.MultiheadAttention(dim, num_heads, batch_first=True, dtype=dtype, device=device)
    randomize_(twin, seed, scale=1 / math.sqrt(dim))
    if not qkv_bias:
        with torch.no_grad():
            twin.in_proj_bias.zero_()
    return twin.eval()


def attention_state(twin: nn.MultiheadAttention, qkv_bias: bool) -> dict[str, Tensor]:
    """The twin's weights under timm's names."""
    theirs = twin.state_dict()
    return {name: theirs[twin_name].detach() for name, twin_name in ATTENTION_TO_TWIN.items()
            if qkv_bias or name != "qkv.bias"}


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


# ------------------------------------------------------------------------------------- Mlp

MLP_NAMES = N_("Mlp has fc1 = nn.Linear(in_features, hidden_features) and fc2 = "
               "nn.Linear(hidden_features, out_features); both default to in_features")


def mlp_state(in_f: int, hidden: int, out_f: int, seed: int, dtype=torch.float32,
              device: str | torch.device = "cpu") -> dict[str, Tensor]:
    """Weights of scale 1: fc1's outputs spread over [-5, 5], where the exact GELU and its
    tanh approximation differ by up to 4.7e-4 (near |x| = 2.7)."""
    layers = {"fc1": nn.Linear(in_f, hidden), "fc2": nn.Linear(hidden, out_f)}
    state = {}
    for i, (name, layer) in enumerate(layers.items()):
        randomize_(layer, seed + i, scale=1.0 if name == "fc1" else 1 / math.sqrt(hidden))
        state.update({f"{name}.{k}": v.to(device=device, dtype=dtype)
                      for k, v in layer.state_dict().items()})
    return state


class MlpTwin(nn.Module):
    """PyTorch's modules in the Mlp's arrangement (for expected gradients)."""

    def __init__(self, state: dict[str, Tensor]):
        super().__init__()
        w1, w2 = state["fc1.weight"], state["fc2.weight"]
        self.fc1 = nn.Linear(w1.shape[1], w1.shape[0], dtype=w1.dtype, device=w1.device)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(w2.shape[1], w2.shape[0], dtype=w2.dtype, device=w2.device)
        self.load_state_dict(state)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.act(self.fc1(x)))


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


# -------------------------------------------------------------------------------- DropPath


def drop_path_module(impl: Implementation, p: float, scale_by_keep: bool = True,
                     training: bool = True, dtype=torch.float64) -> tuple[nn.Module, str]:
    kwargs = {} if scale_by_keep else {"scale_by_keep": False}
    module = build(impl, "DropPath", (p,), kwargs, None, "", dtype)
    module.train(training)
    flags = "" if scale_by_keep else ", scale_by_keep=False"
    mode = _("training mode") if training else _("eval mode")
    return module, _("{module} in {mode}", module=f"DropPath({p}{flags})", mode=mode)


def branch(*shape: int, seed: int, dtype=torch.float64) -> Tensor:
    """A residual branch whose every value is clearly nonzero (|x| >= 0.5), so a dropped
    value (0) is never mistaken for a kept one."""
    x = randn(*shape, seed=seed, dtype=dtype)
    return x + 0.5 * torch.where(x >= 0, 1.0, -1.0).to(dtype)


def drop_pattern(out: Tensor, x: Tensor, p: float) -> dict[str, Tensor]:
    """Per element of ``out``: dropped (0), kept and scaled (x / (1 - p)), kept unscaled (x)."""
    rtol, atol = tolerance(x.dtype, MISTAKE_SLACK)
    got, x64 = out.detach().double(), x.detach().double()
    zero = got.abs() <= atol
    scaled = (torch.isclose(got, x64 / (1 - p), rtol=rtol, atol=atol) if p < 1
              else torch.zeros_like(zero))
    plain = torch.isclose(got, x64, rtol=rtol, atol=atol)
    return {"zero": zero, "scaled": scaled, "plain": plain}


def samples_mixed(zero: Tensor) -> int:
    """How many samples (dim 0) have some elements zeroed and others kept."""
    flat = zero.reshape(zero.shape[0], -1)
    return int((flat.any(1) & ~flat.all(1)).sum())


def check_drop_path_training(impl: Implementation, p: float, shape: tuple[int, ...], seed: int,
                             scale_by_keep: bool = True) -> Tensor:
    """One call in training mode: every sample either all zeros or all kept (x / (1 - p)
    with scale_by_keep, x without), some of each. Returns the per-sample kept flags."""
    module, what = drop_path_module(impl, p, scale_by_keep)
    x = branch(*shape, seed=seed)
    on = _("{inputs} with {module}", inputs=describe_inputs(x=x), module=what)
    with seeded(seed + 1):
        out = run(impl, module, x, "DropPath", on)
    check = _("which samples DropPath kept")
    if out.shape != x.shape or out.dtype != x.dtype:
        expect_close(out, x, check, on)  # explains the shape or dtype
    pattern = drop_pattern(out, x, p)
    zero = pattern["zero"]
    kept_as = pattern["scaled"] if scale_by_keep else pattern["plain"]
    expected_kept = "x / (1 - p)" if scale_by_keep else _("x (scale_by_keep=False: unscaled)")
    mixed = samples_mixed(zero)
    if bool(torch.isnan(out).any()):
        raise verdict(check, on, [_("got NaN in {count} place(s)", count=int(torch.isnan(out).sum()))])
    if mixed:
        raise verdict(check, on, [
            _("{mixed} of {total} samples had some values zeroed and others kept: one "
              "keep/drop draw must cover a whole sample x[i]", mixed=mixed, total=shape[0])],
            "drop-path-per-element")
    kept_samples = ~zero.reshape(shape[0], -1).all(1)
    if not bool(zero.any()):
        raise verdict(check, on, [_("no sample was dropped among {total} (p={p}): DropPath "
                                    "must drop in training mode", total=shape[0], p=p)])
    if not bool((zero | kept_as).all()):
        if scale_by_keep and bool((zero | pattern["plain"]).all()):
            raise verdict(check, on, [
                _("the kept samples equal x; expected x / (1 - p) = x * {factor}",
                  factor=f"{1 / (1 - p):g}")],
                "drop-path-not-rescaled")
        if not scale_by_keep and bool((zero | pattern["scaled"]).all()):
            raise verdict(check, on, [
                _("the kept samples were divided by 1 - p; with scale_by_keep=False they stay "
                  "x")])
        bad = int((~(zero | kept_as)).sum())
        raise verdict(check, on, [
            _("{bad} of {total} values are neither 0 (dropped) nor {kept}", bad=bad,
              total=out.numel(), kept=expected_kept),
            f"x   {describe_tensor(x)}", _("got {value}", value=describe_tensor(out))])
    if not bool(kept_samples.any()):
        raise verdict(check, on, [_("every sample was dropped (p={p})", p=p)])
    return kept_samples


@title(N_("drop path is the identity in eval mode"))
@pytest.mark.core
def test_drop_path_identity_in_eval(impl):
    """In eval mode DropPath returns its input unchanged, whatever drop_prob."""
    for p, seed in ((0.5, 400), (0.9, 410)):
        module, what = drop_path_module(impl, p, training=False)
        x = branch(16, 3, 4, seed=seed)
        on = _("{inputs} with {module}", inputs=describe_inputs(x=x), module=what)
        with seeded(seed + 1):
            out = run(impl, module, x, "DropPath", on)

        def dropped_in_eval(got: Tensor, p=p, x=x) -> bool:
            pattern = drop_pattern(got, x, p)
            return bool((pattern["zero"] | pattern["scaled"] | pattern["plain"]).all()
                        and not pattern["plain"].all())

        expect_close(out, x, _("DropPath in eval mode (the identity)"), on,
                     [Suspect("drop-path-in-eval", matches=dropped_in_eval)])


@title(N_("drop path in training mode"))
@pytest.mark.core
def test_drop_path_in_training(impl):
    """In training mode each sample's whole branch is dropped (zeros) or kept and divided by
    1 - p; at p = 0 DropPath is the identity."""
    check_drop_path_training(impl, 0.25, (64, 3, 4), seed=500)
    check_drop_path_training(impl, 0.5, (32, 5, 2), seed=510)
    module, what = drop_path_module(impl, 0.0)
    x = branch(8, 3, 4, seed=520)
    on = _("{inputs} with {module}", inputs=describe_inputs(x=x), module=what)
    with seeded(521):
        out = run(impl, module, x, "DropPath", on)
    expect_close(out, x, _("DropPath at drop_prob=0 in training mode (the identity)"), on)


# ----------------------------------------------------------------------------------- Block

BLOCK_NAMES = N_("Block has norm1, attn (qkv, proj), norm2, mlp (fc1, fc2); "
                 "mlp's hidden width is int(dim * mlp_ratio); LayerNorm(dim, eps=1e-6)")


def block_twin(dim: int, num_heads: int, hidden: int, qkv_bias: bool, seed: int,
               dtype=torch.float32, device: str | torch.device = "cpu",
               weight_scale: float = 0.5) -> nn.TransformerEncoderLayer:
    """The ViT block under PyTorch's names: Pre-LN, exact GELU, eps 1e-6, no dropout."""
    twin = nn.TransformerEncoderLayer(dim, num_heads, dim_feedforward=hidden, dropout=0.0,
                                      activation="gelu", layer_norm_eps=EPS, batch_first=True,
                                      norm_first=True, dtype=dtype, device=device)
    randomize_(twin, seed, scale=weight_scale)
    if not qkv_bias:
        with torch.no_grad():
            twin.self_attn.in_proj_bias.zero_()
    return twin.eval()


def block_state(twin: nn.TransformerEncoderLayer, qkv_bias: bool) -> dict[str, Tensor]:
    theirs = twin.state_dict()
    return {name: theirs[twin_name].detach() for name, twin_name in BLOCK_TO_TWIN.items()
            if qkv_bias or name != "attn.qkv.bias"}


def block_call(dim: int, num_heads: int, mlp_ratio: float, qkv_bias: bool,
               extra: dict[str, float] | None = None) -> tuple[tuple, dict[str, Any]]:
    kwargs: dict[str, Any] = {"mlp_ratio": mlp_ratio, "qkv_bias": qkv_bias, **(extra or {})}
    return (dim, num_heads), kwargs


def new_block(impl: Implementation, dim: int, num_heads: int, mlp_ratio: float,
              qkv_bias: bool, state: dict[str, Tensor], dtype, device,
              extra: dict[str, float] | None = None) -> nn.Module:
    args, kwargs = block_call(dim, num_heads, mlp_ratio, qkv_bias, extra)
    return build(impl, "Block", args, kwargs, state, BLOCK_NAMES, dtype, device)


def block_on(x: Tensor, dim: int, num_heads: int, mlp_ratio: float, qkv_bias: bool,
             extra: str = "") -> str:
    return _("{inputs} with {module}", inputs=describe_inputs(x=x),
             module=f"Block({dim}, {num_heads}, mlp_ratio={mlp_ratio}, qkv_bias={qkv_bias}{extra})")


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


@title(N_("drop path at p = 1"))
@pytest.mark.followup
def test_drop_path_extremes(impl):
    """drop_prob=1 gives zeros (never NaN: no division by 1 - p = 0). (p = 0, the identity,
    is graded with training mode, in test_drop_path_in_training.)"""
    module, what = drop_path_module(impl, 1.0)
    x = branch(6, 3, 4, seed=1000)
    on = _("{inputs} with {module}", inputs=describe_inputs(x=x), module=what)
    with seeded(1001):
        out = run(impl, module, x, "DropPath", on)
    expect_close(out, torch.zeros_like(x), _("DropPath at drop_prob=1 (every sample dropped)"), on)


@title(N_("drop path with scale_by_keep=False"))
@pytest.mark.followup
def test_drop_path_scale_by_keep(impl):
    """scale_by_keep=False keeps the kept samples as they are (no division by 1 - p)."""
    check_drop_path_training(impl, 0.5, (32, 3, 4), seed=1010, scale_by_keep=False)


@title(N_("drop path's keep rate"))
@pytest.mark.followup
def test_drop_path_keep_rate(impl):
    """Over many samples about 1 - p of them are kept: p is the probability to *drop*.
    (Bounds wide enough that a correct DropPath never fails: 10 standard deviations.)"""
    for p, seed in ((0.2, 1100), (0.7, 1110)):
        samples = 2000
        kept = check_drop_path_training(impl, p, (samples, 1, 2), seed=seed)
        share = float(kept.double().mean())
        sd = math.sqrt(p * (1 - p) / samples)
        if abs(share - (1 - p)) > 10 * sd:
            raise verdict(
                _("the share of samples DropPath kept"),
                _("{count} samples with {module}", count=samples, module=f"DropPath({p})"),
                [_("kept {share}; expected about 1 - p = {keep} (drop_prob is the probability "
                   "to drop a sample, not to keep it)", share=f"{share:.1%}", keep=f"{1 - p:.0%}")])


@title(N_("drop path on inputs of any rank and its gradient"))
@pytest.mark.followup
def test_drop_path_any_rank_and_gradient(impl):
    """One draw per index of dim 0 for inputs of any rank ((B, D) and (B, C, H, W)); the
    gradient flows to the kept samples, scaled by 1 / (1 - p), and not to the dropped ones."""
    check_drop_path_training(impl, 0.5, (32, 6), seed=1200)
    check_drop_path_training(impl, 0.5, (32, 2, 3, 2), seed=1210)
    module, what = drop_path_module(impl, 0.5)
    base = branch(16, 3, 4, seed=1220)
    x = base.clone().requires_grad_(True)
    on = _("{inputs} with {module}", inputs=describe_inputs(x=x), module=what)
    with seeded(1221):
        out = run(impl, module, x, "DropPath", on)
    check = _("backward through {module}", module="DropPath")
    (grad,) = learner_grads(out, {"x": x}, 1222, check, on).values()
    r = randn(*out.shape, seed=1222, dtype=out.dtype)
    expected = r * (out.detach() / base)  # d out / d x is the per-sample factor, 0 or 1/(1-p)
    expect_close(grad, expected, _("{check}: gradient of {name}", check=check, name="x"), on)


def dropout_pattern_problems(got: Tensor, clean: Tensor, p: float, what: str) -> list[str]:
    """Why ``got`` is not ``clean`` after dropout(p) elementwise: every value either 0 or
    clean / (1 - p), both kinds present."""
    pattern = drop_pattern(got, clean, p)
    zero, scaled = pattern["zero"], pattern["scaled"]
    if not bool((zero | scaled).all()):
        bad = int((~(zero | scaled)).sum())
        return [_("{bad} of {total} values of {what} are neither 0 (dropped) nor the value "
                  "without dropout times 1/(1-p) = {factor}", bad=bad, total=got.numel(),
                  what=what, factor=f"{1 / (1 - p):g}")]
    if not bool(zero.any()):
        return [_("nothing in {what} was dropped", what=what)]
    if bool(zero.all()):
        return [_("every value of {what} was zeroed", what=what)]
    return []


def two_calls_differ(impl, module, x, what, on, seed) -> bool:
    with seeded(seed):
        first = run(impl, module, x, what, on)
    with seeded(seed + 1):
        second = run(impl, module, x, what, on)
    return first.shape == second.shape and not torch.allclose(first, second)


@title(N_("attention dropout in training mode"))
@pytest.mark.followup
def test_attention_dropout_in_training(impl):
    """attn_drop acts on the attention weights (each 0 or w / (1 - p)) and proj_drop on the
    output, only in training mode. float64, head_dim >= N, so the weights behind the output
    can be recovered. Behaviour only, never seed for seed."""
    dim, heads, b, n, p = 16, 2, 3, 6, 0.5
    twin = attention_twin(dim, heads, True, seed=1300, dtype=torch.float64)
    state = attention_state(twin, True)
    x = randn(b, n, dim, seed=1301, dtype=torch.float64)
    clean_out, clean_w = twin(x, x, x, need_weights=True, average_attn_weights=False)
    clean_out, clean_w = clean_out.detach(), clean_w.detach()

    module = build(impl, "Attention", (dim,), dict(num_heads=heads, qkv_bias=True, attn_drop=p),
                   state, ATTENTION_NAMES)
    on = _("{inputs} with {module}", inputs=describe_inputs(x=x),
           module=f"Attention({dim}, num_heads={heads}, qkv_bias=True, attn_drop={p})")
    expect_close(run(impl, module, x, "Attention", on + _(", eval mode")), clean_out,
                 _("the output in eval mode (no dropout)"), on + _(", eval mode"))
    module.train()
    on += _(", training mode")
    with seeded(1302):
        out = run(impl, module, x, "Attention", on)
    check = _("attn_drop on the attention weights (p={p})", p=p)
    if out.shape != clean_out.shape:
        expect_close(out, clean_out, check, on)
    mha_state = {k: v.detach() for k, v in twin.state_dict().items()}
    weights = weights_behind_output(mha_state, x, out, heads, batch_first=True)
    problems = dropout_pattern_problems(weights, clean_w, p, _("the attention weights behind "
                                                                 "your output"))
    if problems:
        raise verdict(check, on, problems + [
            _("attn_drop must act on softmax(q k^T * scale), before the weights multiply v")])

    module = build(impl, "Attention", (dim,), dict(num_heads=heads, qkv_bias=True, proj_drop=p),
                   state, ATTENTION_NAMES).train()
    on = _("{inputs} with {module}", inputs=describe_inputs(x=x),
           module=f"Attention({dim}, num_heads={heads}, qkv_bias=True, proj_drop={p})") \
        + _(", training mode")
    with seeded(1303):
        out = run(impl, module, x, "Attention", on)
    check = _("proj_drop on the output (p={p})", p=p)
    if out.shape != clean_out.shape:
        expect_close(out, clean_out, check, on)
    problems = dropout_pattern_problems(out, clean_out, p, _("the output"))
    if problems:
        raise verdict(check, on, problems + [_("proj_drop acts on proj's output, last")])


def check_mlp_dropout(impl: Implementation, module: nn.Module, state: dict[str, Tensor],
                      x: Tensor, p: float, on: str, seed: int, prefix: str = "") -> None:
    """In training mode with dropout p after act and after fc2: about p of the outputs are
    exactly 0, and the others are not simply clean / (1 - p) (the hidden layer was dropped
    too)."""
    clean = mlp_reference(state, x, prefix=prefix)
    with seeded(seed):
        out = run(impl, module, x, "Mlp", on)
    check = _("dropout in the Mlp (p={p})", p=p)
    if out.shape != clean.shape:
        expect_close(out, clean, check, on)
    pattern = drop_pattern(out, clean, p)
    zero_share = float(pattern["zero"].double().mean())
    if not 0.3 <= zero_share <= 0.7:
        raise verdict(check, on, [
            _("{share} of the outputs are 0; about {p} should be: drop acts after fc2 (and "
              "after act)", share=f"{zero_share:.0%}", p=f"{p:.0%}")])
    kept = ~pattern["zero"]
    if bool(pattern["scaled"][kept].all()):
        raise verdict(check, on, [
            _("every nonzero output is exactly the undropped one / (1 - p): nothing was "
              "dropped between act and fc2 (drop acts after act too)")])


@title(N_("MLP dropout in training mode"))
@pytest.mark.followup
def test_mlp_dropout_in_training(impl):
    """drop acts after act and after fc2, in training mode only."""
    p = 0.5
    state = mlp_state(6, 12, 6, seed=1400, dtype=torch.float64)
    module = build(impl, "Mlp", (6, 12, 6), {"drop": p}, state, MLP_NAMES)
    x = randn(4, 10, 6, seed=1402, dtype=torch.float64)
    on = _("{inputs} with {module}", inputs=describe_inputs(x=x), module=f"Mlp(6, 12, 6, drop={p})")
    expect_close(run(impl, module, x, "Mlp", on + _(", eval mode")), mlp_reference(state, x),
                 _("the output in eval mode (no dropout)"), on + _(", eval mode"))
    check_mlp_dropout(impl, module.train(), state, x, p, on + _(", training mode"), seed=1403)


def submodule(module: nn.Module, name: str, what: str) -> nn.Module:
    sub = getattr(module, name, None)
    if not isinstance(sub, nn.Module):
        raise verdict(f"{what}.{name}", _("construction"),
                      [_("expected a submodule {name}, got {value}", name=name,
                         value=describe_value(sub))])
    return sub


@title(N_("where the block applies dropout"))
@pytest.mark.followup
def test_block_dropout_wiring(impl):
    """Block's drop is the attention's proj_drop and the Mlp's dropout; attn_drop is the
    attention's attn_drop; eval mode has no dropout. Checked on block.attn and block.mlp in
    training mode, by behaviour."""
    dim, heads, p = 16, 2, 0.5
    hidden = int(dim * 4.0)
    twin = block_twin(dim, heads, hidden, True, seed=1500, dtype=torch.float64)
    state = block_state(twin, True)
    x = randn(3, 6, dim, seed=1501, dtype=torch.float64)
    clean_attn = attention_reference(state, x, heads, prefix="attn.")
    mlp_state_only = {k: v for k, v in state.items() if k.startswith("mlp.")}

    for extra, seed in (({"drop": p}, 1502), ({"attn_drop": p}, 1510)):
        block = new_block(impl, dim, heads, 4.0, True, state, torch.float64, "cpu", extra)
        flags = ", " + ", ".join(f"{k}={v}" for k, v in extra.items())
        on = block_on(x, dim, heads, 4.0, True, flags)
        expect_close(run(impl, block, x, "Block", on + _(", eval mode")), twin(x),
                     _("the output in eval mode (no dropout)"), on + _(", eval mode"))
        block.train()
        if not two_calls_differ(impl, block, x, "Block", on + _(", training mode"), seed):
            raise verdict(_("two calls in training mode"), on + _(", training mode"), [
                _("they gave the same output: the dropout is not wired in")])
        attn = submodule(block, "attn", "Block")
        mlp = submodule(block, "mlp", "Block")
        attn_on = (_("{module} on x {shape}", module="block.attn", shape=tuple(x.shape))
                   + f", Block({dim}, {heads}{flags})" + _(", training mode"))
        with seeded(seed + 3):
            attn_out = run(impl, attn, x, "block.attn", attn_on)
        if "drop" in extra:
            problems = dropout_pattern_problems(attn_out, clean_attn, p,
                                                _("{module}'s output", module="block.attn"))
            if problems:
                raise verdict(_("drop reaches the attention's proj_drop"), attn_on, problems)
            mlp_on = attn_on.replace("block.attn", "block.mlp")
            check_mlp_dropout(impl, mlp, mlp_state_only, x, p, mlp_on, seed + 4, prefix="mlp.")
        else:
            zeros = int((attn_out.detach() == 0).sum())
            if zeros:
                raise verdict(_("attn_drop is not proj_drop"), attn_on, [
                    _("{zeros} values of block.attn's output are exactly 0: attn_drop must act "
                      "on the attention weights, not on the output", zeros=zeros)])
            mlp_on = attn_on.replace("block.attn", "block.mlp")
            with seeded(seed + 4):
                mlp_out = run(impl, mlp, x, "block.mlp", mlp_on)
            expect_close(mlp_out, mlp_reference(state, x, prefix="mlp."),
                         _("block.mlp with drop=0.0 (attn_drop does not reach the Mlp)"), mlp_on)


def drop_path_outcomes(state, x: Tensor, heads: int, p: float, scaled: bool) -> list[Tensor]:
    """The block's output for each (attention kept?, mlp kept?) pair: 4 tensors (B, N, C)."""
    factor = 1 / (1 - p) if scaled else 1.0
    return [block_reference(state, x, heads, keep=(a * factor, m * factor))
            for a in (1.0, 0.0) for m in (1.0, 0.0)]


def per_sample_match(out: Tensor, outcomes: list[Tensor]) -> Tensor:
    """(B, 4) bool: which outcomes each sample of ``out`` equals."""
    rtol, atol = tolerance(out.dtype, MISTAKE_SLACK)
    got = out.detach().double()
    return torch.stack([torch.isclose(got, o.double(), rtol=rtol, atol=atol).flatten(1).all(1)
                        for o in outcomes], dim=1)


@title(N_("the block's drop path"))
@pytest.mark.followup
def test_block_drop_path(impl):
    """Block(drop_path=p): in training mode each sample's attention branch and Mlp branch are
    each kept (and divided by 1 - p) or dropped, per sample; in eval mode nothing is."""
    dim, heads, p, b = 8, 2, 0.5, 32
    twin = block_twin(dim, heads, 32, True, seed=1600, dtype=torch.float64)
    state = block_state(twin, True)
    x = randn(b, 3, dim, seed=1601, dtype=torch.float64)
    block = new_block(impl, dim, heads, 4.0, True, state, torch.float64, "cpu",
                      {"drop_path": p})
    on = block_on(x, dim, heads, 4.0, True, f", drop_path={p}")
    scaled = drop_path_outcomes(state, x, heads, p, scaled=True)
    plain = drop_path_outcomes(state, x, heads, p, scaled=False)

    def dropped_in_eval(got: Tensor) -> bool:
        return bool((per_sample_match(got, scaled) | per_sample_match(got, plain)).any(1).all())

    with seeded(1602):
        out = run(impl, block, x, "Block", on + _(", eval mode"))
    expect_close(out, twin(x), _("the output in eval mode (DropPath is the identity)"),
                 on + _(", eval mode"), [Suspect("drop-path-in-eval", matches=dropped_in_eval)])

    block.train()
    on += _(", training mode")
    with seeded(1603):
        out = run(impl, block, x, "Block", on)
    check = _("which samples' branches the block's DropPath kept")
    if out.shape != x.shape:
        expect_close(out, x, check, on)
    matched = per_sample_match(out, scaled)
    unscaled = per_sample_match(out, plain)
    if bool(unscaled[:, 0].all()):  # every sample is the plain block: nothing dropped
        raise verdict(check, on, [_("no branch of any of the {count} samples was dropped: drop_path "
                                    "must reach a DropPath around both branches", count=b)])
    if not bool(matched.any(1).all()):
        if bool(unscaled.any(1).all()):
            raise verdict(check, on, [_("each sample's branches were kept or dropped, but the "
                                        "kept ones were not divided by 1 - p")],
                          "drop-path-not-rescaled")
        bad = int((~matched.any(1)).sum())
        raise verdict(check, on, [
            _("{bad} of {total} samples are none of: both branches kept (each / (1 - p)), one "
              "of them dropped, both dropped", bad=bad, total=b),
            _("x = x + drop_path(attn(norm1(x))); x = x + drop_path(mlp(norm2(x))), with one "
              "keep/drop draw per sample and branch")])


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
