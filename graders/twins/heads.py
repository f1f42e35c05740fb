"""The key/value-head mapping of grouped-query attention (kata 13, and kata 15's Llama block).

Query head j reads key/value head ``j // (num_heads // num_kv_heads)``: each kv head is
repeated ``group`` times in place (``repeat_interleave``). The catalogued mistake tiles them
instead (``repeat``: query head j reads kv head ``j % num_kv_heads``), for the keys, the
values or both.
"""

from __future__ import annotations

from torch import Tensor

# kv_layout -> which of k and v are tiled: "interleave" is right.
KV_LAYOUTS = {"interleave": "", "tile": "kv", "tile-k": "k", "tile-v": "v"}


def expand_kv_heads(k: Tensor, v: Tensor, group: int,
                    kv_layout: str = "interleave") -> tuple[Tensor, Tensor]:
    """k, v (..., kv_heads, n, d) -> (..., kv_heads * group, n, d), laid out as
    ``kv_layout`` (the heads are the third dimension from the end: (b, kv_heads, n, d) in
    kata 13, (kv_heads, n, d) for one sequence of kata 22)."""
    tiled = KV_LAYOUTS[kv_layout]

    def tile(x: Tensor) -> Tensor:
        return x.repeat(*([1] * (x.dim() - 3)), group, 1, 1)

    k = tile(k) if "k" in tiled else k.repeat_interleave(group, dim=-3)
    v = tile(v) if "v" in tiled else v.repeat_interleave(group, dim=-3)
    return k, v
