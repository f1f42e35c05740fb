# %% [markdown]
# ## 1. What a token costs in the cache
#
# Multi-head attention caches a key and a value per head: `2 · h · d` numbers per token and
# layer. DeepSeek-V2 has 128 heads of 128 and 60 layers: in bfloat16 that is 3.75 MiB per
# token. Multi-head latent attention (MLA) caches one latent `c_kv` (`r = 512` wide) and one
# rotary key `k_rope` (`d_r = 64` wide) per token, shared by every head.

# %%
layers, heads, head_dim, r, d_r = 60, 128, 128, 512, 64
mla = (r + d_r) * layers * 2
mha = 2 * heads * head_dim * layers * 2
up = (192 + 128) * heads * layers * 2
gqa = 2 * 8 * head_dim * layers * 2
print(f"bytes per token: MLA {mla:,}, MHA {mha:,} ({mha / mla:.1f}x), "
      f"up-projected keys and values {up:,} ({up / mla:.1f}x), GQA with 8 groups {gqa:,}")
print(f"at 128K tokens: MLA {mla * 131072 / 2**30:.2f} GiB, MHA {mha * 131072 / 2**30:.0f} GiB")
print(f"in GQA terms: MLA's cache equals GQA with {(r + d_r) / (2 * head_dim)} groups of {head_dim}")

# %% [markdown]
# ## 2. The naive path: up-project the cached latents
#
# `kv_b_proj` maps each cached latent to every head's `k_nope` (`d_n` wide) and value
# (`d_v` wide). Each head's key is `[k_nope_i; k_rope]`, its query `[q_nope_i; q_rope_i]`, and
# the scores are divided by `sqrt(d_n + d_r)`.
#
# | tensor | shape |
# |---|---|
# | c_kv, k_rope (cache) | (b, s, r), (b, s, d_r) |
# | kv_b_proj(c_kv) | (b, s, h, d_n + d_v) |
# | scores | (b, h, t, s) |

# %%
import torch

torch.manual_seed(0)
h, r, d_n, d_r, d_v, s = 4, 16, 8, 4, 8, 10
c_kv = torch.randn(1, s, r, dtype=torch.float64)
k_rope = torch.randn(1, s, d_r, dtype=torch.float64)
W = torch.randn(h, d_n + d_v, r, dtype=torch.float64)  # kv_b_proj.weight.view(h, d_n + d_v, r)
q_nope = torch.randn(1, h, 1, d_n, dtype=torch.float64)
q_rope = torch.randn(1, h, 1, d_r, dtype=torch.float64)
k_nope = torch.einsum("hnr,bsr->bhsn", W[:, :d_n], c_kv)  # (b, h, s, d_n): built per head
v = torch.einsum("hvr,bsr->bhsv", W[:, d_n:], c_kv)
scores = (q_nope @ k_nope.transpose(-1, -2) + q_rope @ k_rope[:, None].transpose(-1, -2)) / (d_n + d_r) ** 0.5
naive = scores.softmax(-1) @ v
print(f"naive output {tuple(naive.shape)}; per-head keys built: {tuple(k_nope.shape)}")

# %% [markdown]
# ## 3. The absorbed path: attend in latent space
#
# `q · (W_UK c) = (W_UKᵀ q) · c`: fold `W_UK` into the query once, and score the query in
# latent space against the cached latent itself. Likewise `Σ p · (W_UV c) = W_UV · Σ p c`:
# average the latents, then map back. No per-head key or value of a cached token exists.

# %%
q_latent = torch.einsum("bhtn,hnr->bhtr", q_nope, W[:, :d_n])  # (b, h, t, r)
scores_abs = (torch.einsum("bhtr,bsr->bhts", q_latent, c_kv)
              + torch.einsum("bhtd,bsd->bhts", q_rope, k_rope)) / (d_n + d_r) ** 0.5
o_latent = torch.einsum("bhts,bsr->bhtr", scores_abs.softmax(-1), c_kv)
absorbed = torch.einsum("bhtr,hvr->bhtv", o_latent, W[:, d_n:])
print("largest difference naive vs absorbed:", (naive - absorbed).abs().max().item())

# %% [markdown]
# ## 4. Why RoPE gets its own key
#
# With a rotated key, `qᵀ R_iᵀ R_j W_UK c_j = qᵀ R_{j−i} W_UK c_j`: a rotation depending on
# `j − i` sits between the query and `W_UK`, so no fixed matrix can absorb it. MLA keeps a
# separate, shared, rotated key of `d_r` numbers per token; per-head rotary keys would cost
# `h · d_r` numbers per token (printed below, against the latent and the whole cache entry).

# %%
H, R, DR = 128, 512, 64  # DeepSeek-V2
flops = 2 * H * (R + DR) + 2 * H * R
read = (R + DR) * 2 * 1  # one layer, bfloat16
print(f"absorbed decode: {flops:,} FLOPs per cached token and layer on {read:,} bytes "
      f"= {flops / read:.0f} FLOPs/byte (H100 ridge about {989 / 3.35:.0f})")
print(f"per-head rotary keys: {H * DR:,} numbers per token, {H * DR / R:.0f}x the latent, "
      f"{H * DR / (R + DR):.1f}x the cache entry")

# %%
# kata: exercise

# %% [markdown]
# ## 5. The memory rule, measured
#
# `torch.matmul` broadcasting a `(b, 1, s, r)` latent against `(b, h, t, r)` queries copies
# the latent once per head when `b > 1`; `torch.einsum` does not.

# %%
from torch.utils._python_dispatch import TorchDispatchMode


class Largest(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.numel = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if isinstance(out, torch.Tensor) and not getattr(func, "is_view", False):
            self.numel = max(self.numel, out.numel())
        return out


q_lat = torch.randn(2, 8, 1, 64)
lat = torch.randn(2, 2048, 64)
with Largest() as m1:
    q_lat @ lat[:, None].transpose(-1, -2)
with Largest() as m2:
    torch.einsum("bhtr,bsr->bhts", q_lat, lat)
print(f"largest tensor created: matmul {m1.numel:,}, einsum {m2.numel:,}")

# %% [markdown]
# ## 6. Follow-ups, in numbers
#
# Why not merge `W_Q·W_UK` into one query matrix? It would map `q_lora_rank` to `h · r`, far
# more weights than the two factors. And YaRN (context extension) multiplies DeepSeek's
# softmax scale by `mscale²`, `mscale = 0.1 · ln(factor) · mscale_all_dim + 1`. The latent is
# shared by every head, so tensor parallelism over heads replicates the whole cache on every
# rank: engines run attention data-parallel for DeepSeek models.

# %%
import math

q_lora, d_nope = 1536, 128  # DeepSeek-V2
print(f"merged W_Q·W_UK {q_lora * H * R:,} weights per layer; q_b_proj's nope part "
      f"{q_lora * H * d_nope:,} and W_UK {H * d_nope * R:,}")
mscale = 0.1 * math.log(40) * 1.0 + 1  # DeepSeek-V3: factor 40, mscale_all_dim 1
print(f"YaRN at factor 40: mscale {mscale:.4f}, the scale multiplied by {mscale ** 2:.3f}")

# %%
# kata: quiz
