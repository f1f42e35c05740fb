"""The models kata 28's grader puts adapters on: kata 15's Llama block as an nn.Module (in
Hugging Face's names, every projection an nn.Linear called as a module, so that a replaced
one is used), and a small stack whose names catch a wrong target rule (``kv_proj`` beside
``v_proj``, a top-level ``v_proj``, nested ``layers.{i}.attn`` and ``layers.{i}.mlp.up``).

The block's forward is built from kata 15's twin (graders.twins.llama: its RMSNorm,
RoPE angles and rotation), so its output equals ``llama_reference`` on its state dict; the
grader's expected values come from ``llama_reference`` itself, with effective weights.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graders.core.inputs import randomize_
from graders.twins import llama
from graders.twins.heads import expand_kv_heads

CONFIG = llama.Config(dim=16, num_heads=4, num_kv_heads=2, hidden_dim=24)


class Attention(nn.Module):
    def __init__(self, cfg: llama.Config):
        super().__init__()
        self.cfg = cfg
        d = cfg.head_dim
        self.q_proj = nn.Linear(cfg.dim, cfg.num_heads * d, bias=False)
        self.k_proj = nn.Linear(cfg.dim, cfg.num_kv_heads * d, bias=False)
        self.v_proj = nn.Linear(cfg.dim, cfg.num_kv_heads * d, bias=False)
        self.o_proj = nn.Linear(cfg.num_heads * d, cfg.dim, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        """x (b, n, dim) -> (b, n, dim), causal, positions 0 ... n-1."""
        b, n, _ = x.shape
        cfg, d = self.cfg, self.cfg.head_dim

        def heads(t: Tensor, count: int) -> Tensor:
            return t.view(b, n, count, d).transpose(1, 2)

        q = heads(self.q_proj(x), cfg.num_heads)
        k = heads(self.k_proj(x), cfg.num_kv_heads)
        v = heads(self.v_proj(x), cfg.num_kv_heads)
        angles = llama.rope_angles(None, b, n, d, cfg.rope_base).to(x.dtype)
        q, k = llama.rotate(q, angles), llama.rotate(k, angles)
        k, v = expand_kv_heads(k, v, cfg.num_heads // cfg.num_kv_heads, "interleave")
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(out.transpose(1, 2).reshape(b, n, cfg.num_heads * d))


class MLP(nn.Module):
    def __init__(self, cfg: llama.Config):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.dim, cfg.hidden_dim, bias=False)
        self.up_proj = nn.Linear(cfg.dim, cfg.hidden_dim, bias=False)
        self.down_proj = nn.Linear(cfg.hidden_dim, cfg.dim, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaBlock(nn.Module):
    """Kata 15's block: state dict keys llama.BLOCK_KEYS; x (b, n, dim) -> (b, n, dim)."""

    def __init__(self, cfg: llama.Config = CONFIG):
        super().__init__()
        self.cfg = cfg
        self.self_attn = Attention(cfg)
        self.mlp = MLP(cfg)
        self.input_layernorm = nn.RMSNorm(cfg.dim, eps=cfg.eps)
        self.post_attention_layernorm = nn.RMSNorm(cfg.dim, eps=cfg.eps)

    def forward(self, x: Tensor) -> Tensor:
        eps = self.cfg.eps
        h = x + self.self_attn(llama.rms_norm(x, self.input_layernorm.weight, eps))
        return h + self.mlp(llama.rms_norm(h, self.post_attention_layernorm.weight, eps))


def llama_block(seed: int, dtype: torch.dtype = torch.float64) -> LlamaBlock:
    return randomize_(LlamaBlock().to(dtype), seed)  # norm weights 1 + noise


def llama_expected(state: dict[str, Tensor], x: Tensor) -> Tensor:
    """Kata 15's functional twin on the (effective) state dict."""
    return llama.llama_reference(state, x, CONFIG, None)


class StackAttention(nn.Module):
    """Not attention: a mix of projections whose names matter (kv_proj beside v_proj)."""

    def __init__(self, dim: int):
        super().__init__()
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.kv_proj = nn.Linear(dim, dim)
        self.o_proj = nn.Linear(dim, dim)

    def forward(self, h: Tensor) -> Tensor:
        mixed = self.q_proj(h) * torch.sigmoid(self.k_proj(h)) + self.v_proj(h)
        return self.o_proj(mixed + 0.5 * torch.tanh(self.kv_proj(h)))


class StackMLP(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.up = nn.Linear(dim, 2 * dim)
        self.down = nn.Linear(2 * dim, dim)

    def forward(self, h: Tensor) -> Tensor:
        return self.down(F.gelu(self.up(h)))


class StackLayer(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.attn = StackAttention(dim)
        self.mlp = StackMLP(dim)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.norm(x))
        return x + self.mlp(x)


class Stack(nn.Module):
    """layers.{0,1}.{norm, attn.{q,k,v,kv,o}_proj, mlp.{up,down}}, v_proj, lm_head (with
    biases): x (b, n, dim) -> (b, n, vocab)."""

    def __init__(self, dim: int = 8, vocab: int = 5):
        super().__init__()
        self.layers = nn.ModuleList(StackLayer(dim) for _ in range(2))
        self.v_proj = nn.Linear(dim, dim)
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, x: Tensor) -> Tensor:
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(x + self.v_proj(x))


def stack(seed: int, dtype: torch.dtype = torch.float64) -> Stack:
    return randomize_(Stack().to(dtype), seed)


def linear_names(model: nn.Module) -> list[str]:
    return [name for name, m in model.named_modules() if isinstance(m, nn.Linear)]


def run_with(model: nn.Module, state: dict[str, Tensor], x: Tensor) -> Tensor:
    """The untouched ``model``'s forward with ``state`` (effective weights, which may carry
    gradients) in place of its own."""
    return torch.func.functional_call(model, state, (x,))
