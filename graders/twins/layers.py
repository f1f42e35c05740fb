"""What the graders of the layer katas share (06 encoder_layer, 08 decoder_layer,
09 transformer): an encoder layer's constructor arguments, activations, masks merged into
one additive mask, the input sequences and PyTorch's twin. The learner's side (its layer
built, its gradients, the dropout-in-eval suspect) is graders.core.modules': twins/ holds
references only."""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graders.core.inputs import randn, randomize_
from graders.twins.reference import additive_mask


def silu_like(x: Tensor) -> Tensor:
    """A callable activation that is neither relu nor gelu (and negative for x < 0)."""
    return x * torch.sigmoid(1.5 * x)


# Activations as the learner's constructor gets them; a callable is passed to both modules.
ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"relu": F.relu, "gelu": F.gelu}


def activation_name(activation: str | Callable) -> str:
    """``'relu'`` for a name, ``<callable silu>`` for a function."""
    if isinstance(activation, str):
        return repr(activation)
    return f"<callable {getattr(activation, '__name__', type(activation).__name__)}>"


@dataclass(frozen=True)
class LayerArgs:
    """The constructor arguments of one encoder layer (PyTorch's and the learner's)."""

    d_model: int = 8
    nhead: int = 2
    dim_feedforward: int = 12
    dropout: float = 0.1
    activation: str | Callable[[Tensor], Tensor] = "relu"
    layer_norm_eps: float = 1e-5
    batch_first: bool = False
    norm_first: bool = False

    def kwargs(self) -> dict[str, Any]:
        return dict(dim_feedforward=self.dim_feedforward, dropout=self.dropout,
                    activation=self.activation, layer_norm_eps=self.layer_norm_eps,
                    batch_first=self.batch_first, norm_first=self.norm_first)

    def call_text(self) -> str:
        """How the learner's layer was built, e.g. ``TransformerEncoderLayer(8, 2, ...)``."""
        eps = "" if self.layer_norm_eps == 1e-5 else f", layer_norm_eps={self.layer_norm_eps}"
        return (f"TransformerEncoderLayer({self.d_model}, {self.nhead}, dim_feedforward="
                f"{self.dim_feedforward}, dropout={self.dropout}, activation="
                f"{activation_name(self.activation)}{eps}, batch_first={self.batch_first}, "
                f"norm_first={self.norm_first})")

    def flags(self) -> str:
        """The flags that matter for a verdict header."""
        order = "Pre-LN (norm_first=True)" if self.norm_first else "Post-LN (norm_first=False)"
        eps = "" if self.layer_norm_eps == 1e-5 else f", layer_norm_eps={self.layer_norm_eps}"
        return (f"{order}, nhead={self.nhead}, dim_feedforward={self.dim_feedforward}, "
                f"activation={activation_name(self.activation)}, "
                f"batch_first={self.batch_first}{eps}")


@contextlib.contextmanager
def quiet_mask_types() -> Iterator[None]:
    """A float src_mask with a bool padding mask is allowed by the contract; PyTorch warns
    that mixing them is deprecated. Keep that warning out of the learner's report."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Support for mismatched")
        yield


def feed_forward(x: Tensor, weight: Callable[[str], Tensor], activation: Callable[[Tensor], Tensor],
                 activation_at: str = "between") -> Tensor:
    """The layers' feed-forward block, linear2(activation(linear1(x))), from ``weight(name)``
    (the twin's ``linear1.weight``, ...), with the activation moved to ``activation_at``
    ("between" is right; "before", "after", "twice", "none" are the mistake switches),
    x (b, n, d_model)."""
    if activation_at == "before":
        x = activation(x)
    hidden = F.linear(x, weight("linear1.weight"), weight("linear1.bias"))
    if activation_at in ("between", "twice"):
        hidden = activation(hidden)
    out = F.linear(hidden, weight("linear2.weight"), weight("linear2.bias"))
    if activation_at in ("after", "twice"):
        out = activation(out)
    return out


def merged_mask(src_mask: Tensor | None, key_padding_mask: Tensor | None,
                dtype: torch.dtype) -> Tensor | None:
    """src_mask (n, n) and key_padding_mask (b, n) as one additive mask (b, 1, n, n),
    broadcast over the heads; None when both are None."""
    attn = additive_mask(src_mask, dtype)
    padding = additive_mask(key_padding_mask, dtype)
    if padding is not None:
        padding = padding[:, None, None, :]
    if attn is None or padding is None:
        return attn if padding is None else padding
    return attn + padding


def causal(n: int, dtype=torch.float32, device: str | torch.device = "cpu") -> Tensor:
    """Float (n, n): 0 on and below the diagonal, -inf above (PyTorch's causal mask)."""
    return torch.full((n, n), float("-inf"), dtype=dtype, device=device).triu(1)


def sequence(args: LayerArgs, length: int, b: int, seed: int, dtype=torch.float32,
             device: str | torch.device = "cpu") -> Tensor:
    """(length, b, d), or (b, length, d) with batch_first: an encoder's src, a decoder's tgt
    or memory."""
    shape = (b, length, args.d_model) if args.batch_first else (length, b, args.d_model)
    return randn(*shape, seed=seed, dtype=dtype, device=device)


def layer_twin(args: LayerArgs, seed: int, dtype=torch.float32,
               device: str | torch.device = "cpu", weight_scale: float = 0.5, *,
               twin: type[nn.Module]) -> nn.Module:
    """PyTorch's layer ``twin`` (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer) built
    with ``args``, with randomized weights, in eval mode."""
    module = twin(args.d_model, args.nhead, **args.kwargs(), dtype=dtype, device=device)
    return randomize_(module, seed, scale=weight_scale).eval()
