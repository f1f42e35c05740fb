"""Kata 09's reference: PyTorch's nn.Transformer with embeddings, the sinusoidal table and a
generator (:class:`Twin`), :func:`reference_forward` with one switch per catalogued mistake,
the token inputs the checks draw, and greedy decoding's reference on a
:class:`ScriptedModel` with its mistake switches (:data:`GREEDY_MISTAKES`). See
:mod:`graders.transformer.checks` for how the inputs make each mistake show.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from graders.core.i18n import _
from graders.core.inputs import generator, randomize_


@dataclass(frozen=True)
class ModelArgs:
    """The constructor arguments of one model: small, so that grading stays fast."""

    src_vocab_size: int = 11
    tgt_vocab_size: int = 13
    d_model: int = 16
    nhead: int = 2
    num_encoder_layers: int = 2
    num_decoder_layers: int = 1
    dim_feedforward: int = 24
    dropout: float = 0.1
    max_len: int = 32
    pad_idx: int = 0

    def kwargs(self) -> dict[str, Any]:
        return dict(d_model=self.d_model, nhead=self.nhead,
                    num_encoder_layers=self.num_encoder_layers,
                    num_decoder_layers=self.num_decoder_layers,
                    dim_feedforward=self.dim_feedforward, dropout=self.dropout,
                    max_len=self.max_len, pad_idx=self.pad_idx)

    def call_text(self) -> str:
        """How the learner's model was built, e.g. ``Seq2SeqTransformer(11, 13, ...)``."""
        named = ", ".join(f"{k}={v}" for k, v in self.kwargs().items())
        return f"Seq2SeqTransformer({self.src_vocab_size}, {self.tgt_vocab_size}, {named})"

    def flags(self) -> str:
        return (f"d_model={self.d_model}, nhead={self.nhead}, {self.num_encoder_layers}+"
                f"{self.num_decoder_layers} layers, pad_idx={self.pad_idx}")


# --------------------------------------------------------------------------- reference


def sinusoid_table(max_len: int, d_model: int) -> Tensor:
    """Kata 05's table in float64, (max_len, d_model)."""
    position = torch.arange(max_len, dtype=torch.float64)[:, None]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angles = position * torch.exp(-math.log(10000.0) * two_i / d_model)
    table = torch.empty(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = angles.sin()
    table[:, 1::2] = angles[:, : d_model // 2].cos()
    return table


class Twin(nn.Module):
    """PyTorch's model: ``nn.Transformer`` plus the embeddings and generator, with
    randomized weights. Its state dict, under the learner's names, is :meth:`learner_state`."""

    def __init__(self, args: ModelArgs, seed: int, dtype=torch.float32,
                 device: str | torch.device = "cpu", weight_scale: float = 0.3):
        super().__init__()
        d = args.d_model
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.transformer = nn.Transformer(
                d, args.nhead, args.num_encoder_layers, args.num_decoder_layers,
                args.dim_feedforward, args.dropout, batch_first=True, dtype=dtype, device=device)
        kw = dict(padding_idx=args.pad_idx, dtype=dtype, device=device)
        self.src_embed = nn.Embedding(args.src_vocab_size, d, **kw)
        self.tgt_embed = nn.Embedding(args.tgt_vocab_size, d, **kw)
        self.generator = nn.Linear(d, args.tgt_vocab_size, dtype=dtype, device=device)
        randomize_(self.transformer, seed, scale=weight_scale)
        randomize_(self.generator, seed + 1, scale=weight_scale)
        # Embeddings of order 1/sqrt(d): times sqrt(d) they are of the table's order.
        randomize_(self.src_embed, seed + 2, scale=1 / math.sqrt(d))
        randomize_(self.tgt_embed, seed + 3, scale=1 / math.sqrt(d))
        with torch.no_grad():  # as nn.Embedding(padding_idx=...) starts and stays
            self.src_embed.weight[args.pad_idx].zero_()
            self.tgt_embed.weight[args.pad_idx].zero_()
        self.args = args
        self.eval()

    def learner_state(self) -> dict[str, Tensor]:
        return {name.removeprefix("transformer."): value.detach()
                for name, value in self.state_dict().items()}

    def learner_params(self) -> dict[str, Tensor]:
        return {name.removeprefix("transformer."): value
                for name, value in self.named_parameters()}


@dataclass(frozen=True)
class Switches:
    """One way of computing the model, right or wrong (each field a catalogued mistake)."""

    # src, tgt: "sqrt" | "none" | "d" | "after" (the sum scaled) | "divided" (by sqrt(d))
    scale: tuple[str, str] = ("sqrt", "sqrt")
    positions: tuple[str, str] = ("seq", "seq")  # src, tgt: "seq" | "none" | "batch" | "from_one"
    causal: bool = True
    src_padding: bool = True
    tgt_padding: bool = True
    memory_padding: bool = True
    final_norm: tuple[bool, bool] = (True, True)  # encoder, decoder
    output: str = "logits"  # "logits" | "softmax" | "log_softmax"


RIGHT = Switches()


def embed(embedding: nn.Embedding, tokens: Tensor, pe: Tensor, scale: str,
          positions: str) -> Tensor:
    """tokens (b, n) -> (b, n, d): embedding * sqrt(d) + pe[:n], or a mistake's version."""
    x = embedding(tokens)
    d = x.size(-1)
    factor = {"sqrt": math.sqrt(d), "none": 1.0, "d": float(d), "after": 1.0,
              "divided": 1 / math.sqrt(d)}[scale]
    x = x * factor
    if positions == "seq":
        x = x + pe[: x.size(1)][None]
    elif positions == "from_one":
        x = x + pe[1 : x.size(1) + 1][None]
    elif positions == "batch":  # kata 05's seq-first module given (b, n, d)
        x = x + pe[: x.size(0)][:, None]
    return x * math.sqrt(d) if scale == "after" else x


def pad_masks(twin: Twin, src: Tensor, tgt: Tensor | None) -> tuple[Tensor, Tensor | None]:
    pad = twin.args.pad_idx
    return src == pad, (None if tgt is None else tgt == pad)


def causal_mask(t: int, device) -> Tensor:
    return torch.ones(t, t, dtype=torch.bool, device=device).triu(1)


def run_stack(stack: nn.Module, final_norm: bool, x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """nn.TransformerEncoder / nn.TransformerDecoder's forward, optionally without its
    final norm (what a stack built without ``norm=`` computes)."""
    if final_norm:
        return stack(x, *args, **kwargs)
    for layer in stack.layers:
        x = layer(x, *args, **kwargs)
    return x


def reference_encode(twin: Twin, pe: Tensor, src: Tensor, sw: Switches = RIGHT) -> Tensor:
    """memory (b, s, d): nn.Transformer's encoder on our embeddings."""
    src_pad, _ = pad_masks(twin, src, None)
    x = embed(twin.src_embed, src, pe, sw.scale[0], sw.positions[0])
    return run_stack(twin.transformer.encoder, sw.final_norm[0], x,
                     src_key_padding_mask=src_pad if sw.src_padding else None)


def reference_decode(twin: Twin, pe: Tensor, tgt: Tensor, memory: Tensor, src: Tensor,
                     sw: Switches = RIGHT) -> Tensor:
    """(b, t, d): nn.Transformer's decoder on our embeddings and the given memory."""
    src_pad, tgt_pad = pad_masks(twin, src, tgt)
    y = embed(twin.tgt_embed, tgt, pe, sw.scale[1], sw.positions[1])
    return run_stack(
        twin.transformer.decoder, sw.final_norm[1], y, memory,
        tgt_mask=causal_mask(tgt.size(1), tgt.device) if sw.causal else None,
        tgt_key_padding_mask=tgt_pad if sw.tgt_padding else None,
        memory_key_padding_mask=src_pad if sw.memory_padding else None)


def reference_forward(twin: Twin, pe: Tensor, src: Tensor, tgt: Tensor,
                      sw: Switches | None = None) -> Tensor:
    """Logits (b, t, tgt_vocab): nn.Transformer's forward between our embeddings and
    generator; with switches, the same computed stack by stack with that mistake."""
    if sw is None:
        src_pad, tgt_pad = pad_masks(twin, src, tgt)
        out = twin.transformer(
            embed(twin.src_embed, src, pe, "sqrt", "seq"),
            embed(twin.tgt_embed, tgt, pe, "sqrt", "seq"),
            tgt_mask=causal_mask(tgt.size(1), tgt.device), src_key_padding_mask=src_pad,
            tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)
        return twin.generator(out)
    logits = twin.generator(
        reference_decode(twin, pe, tgt, reference_encode(twin, pe, src, sw), src, sw))
    if sw.output == "softmax":
        return logits.softmax(-1)
    if sw.output == "log_softmax":
        return logits.log_softmax(-1)
    return logits


def embedding_mistakes(sides: tuple[int, ...]) -> list[tuple[str, dict[str, Any]]]:
    """(slug, Switches fields) for the embedding path of the given sides (0 src, 1 tgt)."""

    def on(right: str, wrong: str, which: tuple[int, ...]) -> tuple[str, str]:
        """(src, tgt) values: ``wrong`` on the sides in ``which``."""
        return tuple(wrong if i in which else right for i in range(2))  # type: ignore

    groups = [sides] if len(sides) == 1 else [(0,), (1,), (0, 1)]
    mistakes = []
    for which in groups:
        for wrong in ("none", "d", "after", "divided"):
            mistakes.append(("embedding-not-scaled", {"scale": on("sqrt", wrong, which)}))
        mistakes.append(("positional-encoding-missing",
                         {"positions": on("seq", "none", which)}))
    mistakes.append(("pe-wrong-axis", {"positions": on("seq", "batch", sides)}))
    mistakes.append(("positions-from-one", {"positions": on("seq", "from_one", sides)}))
    mistakes.append(("final-norm-missing",
                     {"final_norm": tuple(i not in sides for i in range(2))}))
    return mistakes


def forward_mistakes() -> list[tuple[str, dict[str, Any]]]:
    return embedding_mistakes((0, 1)) + [
        ("final-norm-missing", {"final_norm": (False, True)}),
        ("final-norm-missing", {"final_norm": (True, False)}),
        ("causal-mask-missing", {"causal": False}),
        ("src-padding-mask-missing", {"src_padding": False}),
        ("tgt-padding-mask-missing", {"tgt_padding": False}),
        ("memory-padding-mask-missing", {"memory_padding": False}),
        ("generator-softmax", {"output": "softmax"}),
        ("generator-softmax", {"output": "log_softmax"}),
    ]


# ------------------------------------------------------------------------------ inputs


def token_ids(b: int, n: int, vocab: int, pad: int, seed: int, *, first_kept: bool,
              device: str | torch.device = "cpu") -> Tensor:
    """int64 (b, n) ids, padded differently per row: right padding of different lengths,
    and padding inside or at the left of some rows. Never a fully padded row; with
    ``first_kept`` position 0 is never padded (a target's first token: with the causal mask,
    query 0 sees only key 0)."""
    g = generator(seed)
    ids = torch.randint(0, vocab - 1, (b, n), generator=g)
    ids = torch.where(ids >= pad, ids + 1, ids)  # every id but pad
    padded = torch.zeros(b, n, dtype=torch.bool)
    for row in range(b):
        kind = (row + seed) % 3
        length = int(torch.randint(max(1, n // 2), n + 1, (1,), generator=g))
        padded[row, length:] = True
        if n >= 3 and kind in (0, 1):  # one pad inside
            padded[row, int(torch.randint(1, n - 1, (1,), generator=g))] = True
        if n >= 3 and kind == 2 and not first_kept:  # left padding
            padded[row, 0] = True
    if first_kept:
        padded[:, 0] = False
    padded[padded.all(dim=1), 0] = False
    if b > 1 and n > 1 and bool((padded == padded[0]).all()):  # make row 0 differ
        if bool(padded[0, -1]) or int((~padded[0]).sum()) > 1:
            padded[0, -1] = not bool(padded[0, -1])
        else:  # its only token is the last one (left padding): unpad the first
            padded[0, 0] = False
    return ids.masked_fill(padded, pad).to(device)


def pe_table(model: nn.Module, args: ModelArgs, dtype, device) -> Tensor:
    """The table the reference adds: the learner's own buffer ``pe`` when it holds the
    sinusoid (so a table rounded to float32 before ``.to(float64)`` is not held against
    float64 tolerances), else the exact one."""
    exact = sinusoid_table(args.max_len, args.d_model)
    try:
        pe = model.positional_encoding.pe
    except Exception:  # graded in test_structure_and_state_dict
        pe = None
    if isinstance(pe, Tensor) and pe.is_floating_point() and pe.numel() == exact.numel():
        theirs = pe.detach().reshape(exact.shape).to("cpu", torch.float64)
        if torch.allclose(theirs, exact, rtol=0, atol=1e-5):
            exact = theirs
    return exact.to(device=device, dtype=dtype)


# ------------------------------------------------------------------- greedy decoding


class ScriptedModel(nn.Module):
    """Stands in for a Seq2SeqTransformer in the greedy-decoding checks.

    Each source row has a script: the tokens it produces, one per step, with eos_idx at
    the step where the row ends and ordinary tokens after it (so tokens that should be
    padding show). ``decode(tgt, memory, src)`` returns (b, t, vocab) one-hot scores whose
    position p predicts the script's token p for that row — if tgt[:, :p + 1] is the
    script's prefix up to its eos (bos first); a wrong prefix predicts ``confused``.
    ``generator`` is the identity, so its output is the logits. Every call records the
    model's training flag and whether gradients were enabled.
    """

    def __init__(self, src: Tensor, scripts: list[list[int]], bos_idx: int, pad_idx: int,
                 eos_idx: int, vocab: int):
        super().__init__()
        self.pad_idx = pad_idx
        self.bos_idx, self.eos_idx, self.vocab = bos_idx, eos_idx, vocab
        self.confused = vocab - 1
        self.scripts = scripts
        self.rows = {tuple(row.tolist()): i for i, row in enumerate(src)}
        self.generator = nn.Linear(vocab, vocab)
        with torch.no_grad():
            self.generator.weight.copy_(torch.eye(vocab))
            self.generator.bias.zero_()
        self.dropout = nn.Dropout(0.1)  # a submodule, so that train()/eval() reach children
        self.calls: list[tuple[str, bool, bool]] = []

    def _record(self, name: str) -> None:
        self.calls.append((name, self.training, torch.is_grad_enabled()))

    def encode(self, src: Tensor) -> Tensor:
        """src (b, s) -> memory (b, s, vocab) carrying each row's script number."""
        self._record("encode")
        ids = []
        for row in src:
            key = tuple(row.tolist())
            if key not in self.rows:
                raise ValueError(_("model.encode was given a source row that is not a row of "
                                   "the src passed to greedy_decode"))
            ids.append(self.rows[key])
        memory = torch.zeros(src.size(0), src.size(1), self.vocab, device=src.device)
        memory[:, :, 0] = torch.tensor(ids, dtype=memory.dtype, device=src.device)[:, None]
        return memory

    def next_token(self, row: int, prefix: list[int]) -> int:
        script = self.scripts[row]
        ends = script.index(self.eos_idx) if self.eos_idx in script else len(script)
        if prefix[0] != self.bos_idx:
            return self.confused
        for k, token in enumerate(prefix[1:]):
            if k > ends:
                break
            if token != script[k]:
                return self.confused
        step = len(prefix) - 1
        return script[step] if step < len(script) else self.confused

    def decode(self, tgt: Tensor, memory: Tensor, src: Tensor) -> Tensor:
        """tgt (b, t) -> scores (b, t, vocab)."""
        self._record("decode")
        rows = memory[:, 0, 0].round().long().tolist()
        # src is decode's source of memory_key_padding_mask: the real model needs the very
        # rows that memory was encoded from (a subset of rows means the same subset of both).
        if (src.dim() != 2 or src.size(0) != len(rows) or tgt.size(0) != len(rows)
                or any(self.rows.get(tuple(r.tolist())) != row for r, row in zip(src, rows))):
            raise ValueError(_("model.decode got src rows that memory was not encoded from: "
                               "pass the same rows of tgt, memory and src"))
        out = torch.zeros(tgt.size(0), tgt.size(1), self.vocab, device=tgt.device)
        tokens = tgt.tolist()
        for i, row in enumerate(rows):
            for p in range(tgt.size(1)):
                out[i, p, self.next_token(row, tokens[i][: p + 1])] = 1.0
        return out

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        self._record("forward")
        return self.generator(self.decode(tgt, self.encode(src), src))


@dataclass(frozen=True)
class GreedyCase:
    ends: tuple[int | None, ...]  # per row: the step whose token is eos (0 = first), or never
    max_len: int
    bos_idx: int = 1
    eos_idx: int = 2
    pad_idx: int = 0
    vocab: int = 12
    seed: int = 0

    def build(self) -> tuple[Tensor, list[list[int]]]:
        """src (b, 4) with distinct rows, and one script per row."""
        b, g = len(self.ends), generator(self.seed)
        special = {self.bos_idx, self.eos_idx, self.pad_idx, self.vocab - 1}
        ordinary = torch.tensor([i for i in range(self.vocab) if i not in special])
        src = torch.stack([torch.tensor([3 + i, 5, 7, 9]) for i in range(b)])
        src[1::2, -1] = self.pad_idx  # some padding, different per row
        scripts = []
        for end in self.ends:
            steps = self.max_len + 2
            script = ordinary[torch.randint(0, len(ordinary), (steps,), generator=g)].tolist()
            if end is not None:
                script[end] = self.eos_idx
            scripts.append(script)
        return src, scripts

    def model(self) -> ScriptedModel:
        src, scripts = self.build()
        return ScriptedModel(src, scripts, self.bos_idx, self.pad_idx, self.eos_idx, self.vocab)

    def expected(self) -> Tensor:
        """From the scripts alone: bos, the script up to eos, then pad_idx."""
        _, scripts = self.build()
        steps = [end + 1 if end is not None else math.inf for end in self.ends]
        length = int(min(self.max_len, 1 + max(steps)))
        rows = []
        for script, n in zip(scripts, steps):
            row = [self.bos_idx] + script[: min(n, length - 1)]
            rows.append(row + [self.pad_idx] * (length - len(row)))
        return torch.tensor(rows, dtype=torch.long)

    def describe(self) -> str:
        ends = _(", ").join(_("never") if e is None else _("after {count}", count=e + 1)
                            for e in self.ends)
        return (f"src ({len(self.ends)}, 4), max_len={self.max_len}, bos_idx={self.bos_idx}, "
                f"eos_idx={self.eos_idx}, model.pad_idx={self.pad_idx}; "
                + _("a scripted model whose rows produce eos {ends} token(s)", ends=ends))


def greedy_reference(model: nn.Module, src: Tensor, max_len: int, bos_idx: int, eos_idx: int,
                     *, position: int | str = -1, buffer: bool = False,
                     pad_after_eos: bool = True, stop_when_done: bool = True,
                     repeat_eos: bool = False) -> Tensor:
    """Greedy decoding with switches for the catalogued mistakes (run on a fresh
    ScriptedModel, so the learner's model records nothing). decode-wrong-position:
    ``position`` the index read (or "every": the largest logit over every position), or
    ``buffer``: each step decodes a (b, max_len) buffer, the tokens so far then padding,
    and reads its last slot."""
    memory = model.encode(src)
    ys = torch.full((src.size(0), 1), bos_idx, dtype=torch.long)
    done = torch.zeros(src.size(0), dtype=torch.bool)
    while ys.size(1) < max_len and not (stop_when_done and bool(done.all())):
        if buffer:
            padding = ys.new_full((ys.size(0), max_len - ys.size(1)), model.pad_idx)
            out = model.decode(torch.cat([ys, padding], dim=1), memory, src)
        else:
            out = model.decode(ys, memory, src)
        if position == "every":
            nxt = model.generator(out).amax(dim=1).argmax(-1)
        else:
            nxt = model.generator(out[:, max(position, -out.size(1))]).argmax(-1)
        if pad_after_eos:  # repeat_eos: eos_idx instead of pad_idx after a row's eos
            nxt = nxt.masked_fill(done, eos_idx if repeat_eos else model.pad_idx)
        ys = torch.cat([ys, nxt[:, None]], dim=1)
        done = done | (nxt == eos_idx)
    return ys


GREEDY_MISTAKES: list[tuple[str, dict[str, Any]]] = [
    ("decode-wrong-position", {"position": 0}),
    ("decode-wrong-position", {"position": -2}),  # the one before the last (when there is one)
    ("decode-wrong-position", {"position": "every"}),  # the argmax over every position's logits
    ("decode-wrong-position", {"buffer": True}),  # the last slot of a max_len buffer of padding
    ("decode-continues-after-eos", {"pad_after_eos": False}),
    ("decode-continues-after-eos", {"stop_when_done": False}),
    ("decode-continues-after-eos", {"pad_after_eos": False, "stop_when_done": False}),
    ("decode-continues-after-eos", {"repeat_eos": True}),
]
