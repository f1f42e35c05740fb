"""Grader for kata 09: ``Seq2SeqTransformer`` and ``greedy_decode``.

The model: expected numbers come from ``nn.Transformer(..., batch_first=True)`` with
randomized weights (nonzero biases, LayerNorm gains away from 1), plus embeddings, the
sinusoidal table and a generator built here; the same weights are loaded into the
learner's model (``encoder`` / ``decoder`` have the state-dict layout of
``nn.TransformerEncoder`` / ``nn.TransformerDecoder``). Everything runs in eval mode with
grad enabled: PyTorch's encoder then takes its ordinary path (under ``no_grad`` with a
padding mask its fast path returns exact zeros at padded positions). Logits are compared,
not argmax tokens (a softmax or a wrong scale can keep the argmax), and only at the
target's non-padded positions, on targets with padding *inside* and sources padded
differently per row, so that a missing causal or padding mask shows.
:func:`reference_forward` computes the same thing with one switch per catalogued mistake.

Greedy decoding is graded on a :class:`ScriptedModel`, a stand-in whose next token
follows a script per source row, so rows end at chosen steps; the learner's model plays
no part in it, and its mistakes never leak into these checks (nor the reverse).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import replace
from typing import Any, Callable

import pytest
import torch
from torch import Tensor, nn

from graders.core.i18n import N_, _
from graders.core.compare import (
    StateDictDiff, expect_close, expect_grads_close, expect_tensor, tolerance)
from graders.core.implementation import Implementation
from graders.core.inputs import drawn_cases, grads_of, randn, weighted_sum
from graders.core.mistakes import Suspect, identify
from graders.core.report import GradingFailure, describe_value, verdict, title
from graders.core.modules import differs_on_rerun, expect_module
from graders.twins.layers import quiet_mask_types
from graders.transformer.twin import (
    GREEDY_MISTAKES, GreedyCase, ModelArgs, RIGHT, ScriptedModel, Switches, Twin,
    embedding_mistakes, forward_mistakes, greedy_reference, pe_table, reference_decode,
    reference_encode, reference_forward, token_ids)


__all__ = [
    "test_structure_and_state_dict",
    "test_forward_matches_pytorch",
    "test_encode_matches_pytorch",
    "test_decode_matches_pytorch",
    "test_forward_random_shapes",
    "test_greedy_decode",
    "test_greedy_decode_stops_and_pads",
    "test_greedy_decode_eval_mode",
    "test_forward_float64",
    "test_gradients",
    "test_dropout_only_in_training",
    "test_half_precision_on_cuda",
]
# ------------------------------------------------------------------- learner's model


def build_model(impl: Implementation, args: ModelArgs) -> nn.Module:
    cls = impl.attr("Seq2SeqTransformer")
    with warnings.catch_warnings():  # PyTorch's notes on its fast paths mean nothing here
        warnings.simplefilter("ignore", UserWarning)
        model = impl.call(cls, args.src_vocab_size, args.tgt_vocab_size, **args.kwargs(),
                          what=args.call_text(), on=_("construction"))
    return expect_module(model, args.call_text())


def load_twin(impl: Implementation, model: nn.Module, twin: Twin) -> None:
    """Load the twin's weights into the learner's model, explaining any name or shape
    mismatch. The positional encoding's state and any extra buffer stay the learner's own
    (whether ``pe`` is saved in the state dict is not graded)."""
    on = _("the state dict of nn.Transformer(..., batch_first=True) plus embeddings and "
          "generator")
    theirs = impl.call(model.state_dict, what="Seq2SeqTransformer.state_dict", on=on)
    ours = twin.learner_state()
    # The learner's own: the positional encoding, and any extra buffer (a cached mask).
    buffers = {name for name, _ in model.named_buffers()}
    own = [k for k in theirs if k not in ours
           and (k.startswith("positional_encoding.") or k in buffers)]
    diff = StateDictDiff.of(theirs, ours, ignored=own)
    if diff:
        details = diff.lines(shown=5)
        details.append(_("submodules: src_embed, tgt_embed (nn.Embedding), positional_encoding, "
                         "encoder / decoder laid out like nn.TransformerEncoder / "
                         "nn.TransformerDecoder (layers.N..., and a final norm), generator"))
        # Only a stack's final norm is missing: nn.Transformer always builds one.
        norm_only = bool(diff.missing) and not diff.unexpected and not diff.resized and all(
            k.split(".", 1)[1] in ("norm.weight", "norm.bias") for k in diff.missing)
        if norm_only:
            details[-1] = _("nn.Transformer gives both stacks a final LayerNorm, even Post-LN: "
                            "build them with norm=nn.LayerNorm(d_model)")
        raise verdict(_("loading PyTorch's weights into {module}", module="Seq2SeqTransformer"),
                      on, details,
                      "final-norm-missing" if norm_only else None)
    state = {k: theirs[k].clone() for k in own}  # loading copies into these very tensors
    state.update(ours)
    impl.call(model.load_state_dict, state, what="Seq2SeqTransformer.load_state_dict", on=on)


def model_and_twin(impl: Implementation, args: ModelArgs, seed: int, dtype=torch.float32,
                   device: str | torch.device = "cpu") -> tuple[nn.Module, Twin, Tensor]:
    """The learner's model with the twin's weights, in eval mode, in dtype on device; the
    twin; the positional table the reference uses."""
    twin = Twin(args, seed, dtype, device)
    model = build_model(impl, args)
    model = impl.call(model.to, device=device, dtype=dtype, what=f"model.to({dtype})",
                      on=_("construction"))
    model = expect_module(model, f"model.to({dtype})")
    load_twin(impl, model, twin)
    impl.call(model.eval, what="model.eval()", on=_("construction"))
    return model, twin, pe_table(model, args, dtype, device)


def call_model(impl: Implementation, fn: Callable, *args: Any, what: str, on: str) -> Tensor:
    with quiet_mask_types():
        out = impl.call(fn, *args, what=what, on=on)
    return expect_tensor(out, what, on)


def at_kept(x: Any, kept: Tensor) -> Any:
    """Zero the positions that are not graded (padded ones): kept (b, n) over x (b, n, ...)."""
    if (isinstance(x, Tensor) and x.dim() == 3 and x.shape[:2] == kept.shape
            and x.device == kept.device):
        return x.masked_fill(~kept[..., None], 0)
    return x


def compare(got: Any, expected: Tensor, kept: Tensor, check: str, on: str,
            predict: Callable[[Switches], Tensor], mistakes: list[tuple[str, dict[str, Any]]],
            extra: list[Suspect] = (), slack: float = 1.0) -> None:
    """``got`` vs ``expected`` at the kept (non-padded) positions; on a mismatch, name the
    mistake whose prediction (by ``predict`` with its switches) ``got`` reproduces."""
    suspects = [Suspect(slug, predict=lambda f=fields: at_kept(predict(replace(RIGHT, **f)), kept))
                for slug, fields in mistakes]
    suspects += list(extra)
    mask = kept[..., None] if isinstance(got, Tensor) and got.shape == expected.shape else None
    expect_close(at_kept(got, kept), at_kept(expected, kept), check, on, suspects,
                 slack=slack, mask=mask)


def describe_tokens(**named: Tensor) -> str:
    return ", ".join(f"{name} {tuple(t.shape)}" for name, t in named.items())


def inputs_note(args: ModelArgs, dtype) -> str:
    kind = "" if dtype == torch.float32 else f", {str(dtype).removeprefix('torch.')}"
    return (_("; ids padded with pad_idx={pad_idx} differently per row (also inside the "
              "target)", pad_idx=args.pad_idx) + f"; {args.flags()}{kind}" + _(", eval mode"))


# An attention written by hand may take its softmax in float32 and cast back, as Hugging
# Face's eager attention does (`softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)`).
# Correct, and in float64 precise to float32's digits only, so the float64 checks allow for
# that (as katas 11 and 13 do): they grade the dtype and the behaviour in float64, not its
# last digits.
FLOAT64_SLACK = 100.0


def check_forward(impl: Implementation, args: ModelArgs, *, b: int = 3, s: int = 6,
                  t: int = 5, seed: int = 0, dtype=torch.float32,
                  device: str | torch.device = "cpu", check_grads: bool = False,
                  slack: float = 1.0) -> None:
    """forward(src, tgt) against nn.Transformer with the same weights, at the target's
    non-padded positions; optionally the gradients of every weight."""
    if dtype == torch.float64:
        slack *= FLOAT64_SLACK
    model, twin, pe = model_and_twin(impl, args, seed, dtype, device)
    src = token_ids(b, s, args.src_vocab_size, args.pad_idx, seed + 1, first_kept=False,
                    device=device)
    tgt = token_ids(b, t, args.tgt_vocab_size, args.pad_idx, seed + 2, first_kept=True,
                    device=device)
    kept = tgt != args.pad_idx
    on = describe_tokens(src=src, tgt=tgt) + inputs_note(args, dtype)
    out = call_model(impl, model, src, tgt, what="Seq2SeqTransformer.forward", on=on)
    expected = reference_forward(twin, pe, src, tgt)
    rerun = differs_on_rerun(lambda: at_kept(
        call_model(impl, model, src, tgt, what="Seq2SeqTransformer.forward", on=on), kept))
    compare(out, expected, kept, _("the logits"), on,
            lambda sw: reference_forward(twin, pe, src, tgt, sw), forward_mistakes(),
            [rerun], slack=slack)
    if not check_grads:
        return
    check = _("backward through Seq2SeqTransformer (loss over the non-padded positions)")
    if not out.requires_grad:
        raise verdict(check, on, [_("the logits do not require grad: is part of the computation "
                                    "detached, done under torch.no_grad(), or with .data?")])
    theirs = dict(model.named_parameters())
    named = {k: theirs[k] for k in twin.learner_params() if k in theirs}
    got = grads_of(weighted_sum([at_kept(out, kept)], seed + 3), named)
    want = grads_of(weighted_sum([at_kept(expected, kept)], seed + 3), twin.learner_params())
    expect_grads_close(got, want, check, on, slack=slack)


# ----------------------------------------------------------------------- model checks


@title(N_("structure and state dict"))
@pytest.mark.core
def test_structure_and_state_dict(impl):
    """pad_idx, embeddings with padding_idx, a buffer ``pe``, and PyTorch's state-dict
    layout (the weights of nn.Transformer's encoder and decoder load)."""
    args = ModelArgs(pad_idx=3)
    model = build_model(impl, args)
    on = args.call_text()
    if getattr(model, "pad_idx", None) != args.pad_idx:
        raise verdict("model.pad_idx", on, [
            _("expected {expected}, got {got}", expected=args.pad_idx,
              got=describe_value(getattr(model, "pad_idx", None))),
            _("greedy decoding reads the padding id from the model: keep it as self.pad_idx")])
    for name in ("src_embed", "tgt_embed"):
        embedding = getattr(model, name, None)
        if not isinstance(embedding, nn.Embedding):
            raise verdict(f"model.{name}", on, [
                _("expected an nn.Embedding, got {value}", value=describe_value(embedding))])
        if embedding.padding_idx != args.pad_idx:
            raise verdict(f"model.{name}.padding_idx", on, [
                _("expected {expected}, got {got}", expected=args.pad_idx,
                  got=embedding.padding_idx),
                _("nn.Embedding(vocab, d_model, padding_idx=pad_idx): the pad row starts at "
                  "zero and never gets a gradient")])
    module = getattr(model, "positional_encoding", None)
    if not isinstance(module, nn.Module):
        raise verdict("model.positional_encoding", on, [
            _("expected an nn.Module (kata 05's PositionalEncoding), got {value}",
              value=describe_value(module))])
    pe = getattr(module, "pe", None)
    buffers = dict(module.named_buffers(recurse=False))
    if not isinstance(pe, Tensor) or "pe" not in buffers:
        raise verdict("model.positional_encoding.pe", on, [
            _("expected a buffer registered as 'pe', got {value}", value=describe_value(pe))
            + (_(" (a parameter)") if isinstance(pe, nn.Parameter) else "")],
            "pe-not-buffer")
    size = args.max_len * args.d_model
    if pe.numel() != size:
        raise verdict("model.positional_encoding.pe", on, [
            _("expected the table (max_len, d_model) = {expected}, got shape {got}",
              expected=(args.max_len, args.d_model), got=tuple(pe.shape))])
    load_twin(impl, model, Twin(args, seed=50))


@title(N_("forward against nn.Transformer"))
@pytest.mark.core
def test_forward_matches_pytorch(impl):
    """Logits against nn.Transformer plus embeddings, positions and generator; two sizes,
    pad_idx 0 and not 0, source and target lengths different."""
    check_forward(impl, ModelArgs(), seed=100)
    # Equal vocabulary sizes: the two embeddings are still two tables.
    check_forward(impl, ModelArgs(src_vocab_size=12, tgt_vocab_size=12, d_model=24, nhead=3,
                                  num_encoder_layers=1, num_decoder_layers=2,
                                  dim_feedforward=32, pad_idx=2),
                  b=4, s=5, t=7, seed=110)


@title(N_("encode against nn.Transformer's encoder"))
@pytest.mark.core
def test_encode_matches_pytorch(impl):
    """encode(src) -> memory (b, s, d_model) against nn.Transformer's encoder, at the
    source's non-padded positions."""
    for i, args in enumerate((ModelArgs(), ModelArgs(d_model=32, nhead=4, pad_idx=5))):
        seed = 200 + 10 * i
        model, twin, pe = model_and_twin(impl, args, seed)
        src = token_ids(3, 7, args.src_vocab_size, args.pad_idx, seed + 1, first_kept=False)
        kept = src != args.pad_idx
        on = describe_tokens(src=src) + inputs_note(args, torch.float32)
        out = call_model(impl, model.encode, src, what="Seq2SeqTransformer.encode", on=on)
        compare(out, reference_encode(twin, pe, src), kept, _("the memory"), on,
                lambda sw: reference_encode(twin, pe, src, sw),
                embedding_mistakes((0,)) + [("src-padding-mask-missing", {"src_padding": False})])


@title(N_("decode against nn.Transformer's decoder"))
@pytest.mark.core
def test_decode_matches_pytorch(impl):
    """decode(tgt, memory, src) -> (b, t, d_model) against nn.Transformer's decoder, given
    a memory made here, at the target's non-padded positions."""
    for i, args in enumerate((ModelArgs(), ModelArgs(d_model=32, nhead=4, pad_idx=5))):
        seed = 300 + 10 * i
        model, twin, pe = model_and_twin(impl, args, seed)
        src = token_ids(3, 6, args.src_vocab_size, args.pad_idx, seed + 1, first_kept=False)
        tgt = token_ids(3, 5, args.tgt_vocab_size, args.pad_idx, seed + 2, first_kept=True)
        memory = randn(3, 6, args.d_model, seed=seed + 3)
        kept = tgt != args.pad_idx
        on = describe_tokens(tgt=tgt, memory=memory, src=src) + inputs_note(args, torch.float32)
        out = call_model(impl, model.decode, tgt, memory, src, what="Seq2SeqTransformer.decode",
                         on=on)
        compare(out, reference_decode(twin, pe, tgt, memory, src), kept, _("the decoder output"),
                on, lambda sw: reference_decode(twin, pe, tgt, memory, src, sw),
                embedding_mistakes((1,)) + [("causal-mask-missing", {"causal": False}),
                                            ("tgt-padding-mask-missing", {"tgt_padding": False}),
                                            ("memory-padding-mask-missing",
                                             {"memory_padding": False})])


def model_case(rng):
    nhead, head_dim = rng.choice([1, 2, 4]), rng.choice([4, 8])
    head_dim = max(head_dim, -(-8 // nhead))  # d_model >= 8: LayerNorm well-conditioned
    src_vocab, tgt_vocab = rng.randint(5, 15), rng.randint(5, 15)
    args = ModelArgs(src_vocab_size=src_vocab, tgt_vocab_size=tgt_vocab,
                     d_model=nhead * head_dim, nhead=nhead,
                     num_encoder_layers=rng.randint(1, 2), num_decoder_layers=rng.randint(1, 2),
                     dim_feedforward=rng.randint(4, 24), max_len=rng.randint(8, 16),
                     pad_idx=rng.randrange(min(src_vocab, tgt_vocab)))
    return args, rng.randint(1, 4), rng.randint(1, 8), rng.randint(1, 8), rng.randint(0, 10_000)


@title(N_("forward on random shapes"))
@pytest.mark.core
def test_forward_random_shapes(impl):
    """Random widths, heads, depths, vocabularies, pad ids, batch sizes and lengths."""
    for args, b, s, t, seed in drawn_cases(model_case, count=4):
        check_forward(impl, args, b=b, s=s, t=t, seed=seed)


@title(N_("forward in float64"))
@pytest.mark.followup
def test_forward_float64(impl):
    """float64 weights in, float64 logits out (see FLOAT64_SLACK)."""
    check_forward(impl, ModelArgs(), seed=600, dtype=torch.float64)


@title(N_("gradients of every parameter"))
@pytest.mark.followup
def test_gradients(impl):
    """Gradients of every weight (embeddings, encoder, decoder, generator) equal PyTorch's,
    for a loss over the target's non-padded positions; float32 and float64."""
    check_forward(impl, ModelArgs(), seed=700, check_grads=True)
    check_forward(impl, ModelArgs(pad_idx=4, num_decoder_layers=2), seed=710,
                  dtype=torch.float64, check_grads=True)


@title(N_("dropout only in training mode"))
@pytest.mark.followup
def test_dropout_only_in_training(impl):
    """Eval mode is deterministic; training mode drops at random; positional_encoding
    applies its dropout after adding the table; dropout=0.0 in training is eval mode."""
    args = ModelArgs(dropout=0.5)
    model, twin, pe = model_and_twin(impl, args, seed=900)
    src = token_ids(3, 6, args.src_vocab_size, args.pad_idx, 901, first_kept=False)
    tgt = token_ids(3, 5, args.tgt_vocab_size, args.pad_idx, 902, first_kept=True)
    kept = tgt != args.pad_idx
    on = describe_tokens(src=src, tgt=tgt) + inputs_note(args, torch.float32) + ", dropout=0.5"
    rtol, atol = tolerance(torch.float32)

    def run(note: str) -> Tensor:
        return at_kept(call_model(impl, model, src, tgt, what="Seq2SeqTransformer.forward",
                                  on=on + note), kept)

    first, second = run(""), run("")
    if first.shape == second.shape and not torch.allclose(first, second, rtol=rtol, atol=atol):
        raise verdict(_("two calls in eval mode on the same input"), on, [
            _("they gave different outputs: something is random in eval mode")], "dropout-in-eval")
    compare(first, reference_forward(twin, pe, src, tgt), kept, _("the logits in eval mode"), on,
            lambda sw: reference_forward(twin, pe, src, tgt, sw), forward_mistakes())

    impl.call(model.train, what="model.train()", on=_("construction"))
    train_on = on.replace(_(", eval mode"), _(", training mode"))
    dropped = [run(_(", training mode")) for _repeat in range(2)]
    if torch.allclose(dropped[0], dropped[1], rtol=rtol, atol=atol):
        raise verdict(_("two calls in training mode on the same input"), train_on, [
            _("they gave the same output: with dropout={p} they should differ", p=0.5),
            _("build the dropouts as modules (nn.Dropout, and dropout= for the layers), which "
              "act while self.training is True")])
    check_positional_dropout(impl, model, args)

    args = replace(args, dropout=0.0)
    model, twin, pe = model_and_twin(impl, args, seed=910)
    impl.call(model.train, what="model.train()", on=_("construction"))
    on = describe_tokens(src=src, tgt=tgt) + inputs_note(args, torch.float32)
    on = on.replace(_(", eval mode"), _(", training mode") + ", dropout=0.0")
    out = call_model(impl, model, src, tgt, what="Seq2SeqTransformer.forward", on=on)
    compare(out, reference_forward(twin, pe, src, tgt), kept,
            _("the logits in training mode with dropout=0.0 (must equal eval mode)"), on,
            lambda sw: reference_forward(twin, pe, src, tgt, sw), forward_mistakes())


def check_positional_dropout(impl: Implementation, model: nn.Module, args: ModelArgs) -> None:
    """model.positional_encoding on (b, n, d) in training mode with p=0.5 gives 0 or
    2 * (x + pe) in each place: dropout after the sum. Checked only when the module works
    batch-first as the contract's model uses it (other wirings are graded by forward)."""
    module = model.positional_encoding
    b, n = 2, 5
    x = randn(b, n, args.d_model, seed=920)
    pe = pe_table(model, args, torch.float32, "cpu")
    summed = x + pe[:n][None]
    on = _("x (batch={b}, seq={n}, d_model={d_model}), dropout=0.5, training mode",
           b=b, n=n, d_model=args.d_model)
    try:
        impl.call(module.eval, what="positional_encoding.eval()", on=on)
        plain = impl.call(module, x, what="positional_encoding", on=on + _(" (eval mode first)"))
        impl.call(module.train, what="positional_encoding.train()", on=on)
    except GradingFailure:
        return
    rtol, atol = tolerance(torch.float32, 10.0)
    if not (isinstance(plain, Tensor) and plain.shape == x.shape
            and torch.allclose(plain.detach(), summed, rtol=rtol, atol=atol)):
        return
    out = impl.call(module, x, what="positional_encoding", on=on)
    out = expect_tensor(out, "positional_encoding", on).detach()
    scaled = summed / 0.5
    ok = torch.isclose(out, scaled, rtol=rtol, atol=atol) | (out == 0)
    if out.shape == x.shape and bool(ok.all()) and bool((out == 0).any()):
        return
    rate = other_dropout_rate(out, summed, rtol, atol)
    if rate is not None:
        found = (_("each entry is 0 or (x + pe) / (1 - q) with q = {rate}: dropout acts on "
                   "the sum, as it should, but at another rate", rate=f"{rate:.2g}")
                 if rate > 0 else _("every entry is x + pe: nothing was dropped"))
        raise verdict(_("positional_encoding in training mode"), on, [
            found, _("use the model's dropout rate (p={p})", p=args.dropout)], "pe-dropout-rate")
    raise verdict(_("positional_encoding in training mode"), on, [
        _("each entry should be 0 or (x + pe) / (1 - p): dropout acts on the sum, "
          "dropout(x + pe), not on x or on the table alone")])


def other_dropout_rate(out: Tensor, summed: Tensor, rtol: float, atol: float) -> float | None:
    """The rate q < 1 for which every entry of ``out`` is 0 or ``summed / (1 - q)`` (q = 0:
    nothing dropped, out == summed), or None when no single rate explains ``out``: the
    dropout of x + pe at a rate other than the model's."""
    if out.shape != summed.shape:
        return None
    kept = (out != 0) & (summed.abs() > 1e-3)
    if not bool(kept.any()):
        return None
    scale = float((out[kept] / summed[kept]).median())
    if not math.isfinite(scale) or scale < 1 - 1e-6:
        return None
    ok = torch.isclose(out, summed * scale, rtol=rtol, atol=atol) | (out == 0)
    return max(0.0, 1 - 1 / scale) if bool(ok.all()) else None


@title(N_("half precision on a CUDA GPU"))
@pytest.mark.followup
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_half_precision_on_cuda(impl):
    """float16 and bfloat16 on the GPU keep their dtype and device (a little slack: the
    whole model's rounding)."""
    for dtype in (torch.float16, torch.bfloat16):
        check_forward(impl, ModelArgs(d_model=16, nhead=4), seed=1000, dtype=dtype,
                      device="cuda", slack=4.0)



def show_tokens(value: Any) -> str:
    if isinstance(value, Tensor) and value.dim() == 2 and value.numel() <= 64:
        dtype = str(value.dtype).removeprefix("torch.")
        return f"{dtype} {tuple(value.shape)} {value.tolist()}"
    return describe_value(value)


def run_greedy(impl: Implementation, case: GreedyCase, model: ScriptedModel | None = None,
               ) -> tuple[Any, ScriptedModel, Tensor]:
    model = model if model is not None else case.model()
    src, _ = case.build()
    out = impl.call(impl.attr("greedy_decode"), model, src, case.max_len, case.bos_idx,
                    case.eos_idx, what="greedy_decode", on=case.describe())
    return out, model, src


def check_greedy(impl: Implementation, case: GreedyCase) -> None:
    got, _model, src = run_greedy(impl, case)
    on = case.describe()
    expected = case.expected()
    if isinstance(got, Tensor) and got.dtype == torch.long and torch.equal(got.cpu(), expected):
        return
    suspects = [Suspect(slug, predict=lambda s=switches: greedy_reference(
        case.model(), src, case.max_len, case.bos_idx, case.eos_idx, **s))
        for slug, switches in GREEDY_MISTAKES]
    details = [_("expected {value}", value=show_tokens(expected)),
               _("got      {value}", value=show_tokens(got))]
    if isinstance(got, Tensor) and got.dtype != torch.long:
        details.append(_("token ids are int64 (torch.long)"))
    elif isinstance(got, Tensor) and got.dim() == 2 and got.size(1) > case.max_len:
        details.append(_("max_len={max_len} counts bos_idx: at most {max_len} columns",
                         max_len=case.max_len))
    elif isinstance(got, Tensor) and got.dim() == 2 and got.size(0) == expected.size(0) \
            and got.size(1) > 0 and bool((got[:, 0] != case.bos_idx).any()):
        details.append(_("every row starts with bos_idx={bos_idx}", bos_idx=case.bos_idx))
    slug = identify(got.cpu() if isinstance(got, Tensor) else got, expected, suspects, 0.0, 0.0)
    raise verdict(_("the tokens of greedy_decode"), on, details, slug)


GREEDY_CASES = (
    # Rows end at different steps, one at the very first; stops when the last one has.
    GreedyCase(ends=(2, 4, 0), max_len=10, seed=1),
    # Other special ids (a hard-coded 0 / 1 / 2 shows); one row never ends: runs to max_len.
    GreedyCase(ends=(1, None), max_len=6, bos_idx=7, eos_idx=3, pad_idx=4, vocab=10, seed=2),
    # A single row.
    GreedyCase(ends=(2,), max_len=5, bos_idx=0, eos_idx=5, pad_idx=6, seed=3),
)


@title(N_("greedy decoding"))
@pytest.mark.core
def test_greedy_decode(impl):
    """Tokens of a scripted model: bos first, the argmax of the last position each step,
    pad_idx after a row's eos, rows ending at different steps, other special ids."""
    for case in GREEDY_CASES:
        check_greedy(impl, case)


@title(N_("greedy decoding stops and pads"))
@pytest.mark.core
def test_greedy_decode_stops_and_pads(impl):
    """Stops at max_len (bos counts) when rows do not end, even at max_len=2; stops as
    soon as every row has produced eos; the rest of a finished row is pad_idx."""
    check_greedy(impl, GreedyCase(ends=(None, None, 5), max_len=4, seed=4))
    check_greedy(impl, GreedyCase(ends=(None,), max_len=2, seed=5))
    check_greedy(impl, GreedyCase(ends=(0, 0), max_len=8, seed=6))
    check_greedy(impl, GreedyCase(ends=(3, 1, 6, 2), max_len=12, pad_idx=9, vocab=14, seed=7))


@title(N_("greedy decoding in eval mode"))
@pytest.mark.core
def test_greedy_decode_eval_mode(impl):
    """The model runs in eval mode with gradients disabled, and its training flag (and its
    submodules') is what it was before: in training and in eval."""
    case = GreedyCase(ends=(1, 3), max_len=6, seed=8)
    for training in (True, False):
        model = case.model().train(training)
        got, model, _src = run_greedy(impl, case, model)
        on = case.describe() + (_("; the model in training mode") if training
                                else _("; the model in eval mode"))
        if not model.calls:
            raise verdict("greedy_decode", on, [_("it never called the model (encode, decode or "
                                                  "forward)")])
        for name, was_training, grad in model.calls:
            if was_training:
                raise verdict(_("the mode greedy_decode runs the model in"), on, [
                    _("{call} ran in training mode: call model.eval() first (dropout would make "
                      "decoding random)", call=f"model.{name}")])
            if grad:
                raise verdict("greedy_decode", on, [
                    _("{call} ran with gradients enabled: decode under torch.no_grad() (or "
                      "torch.inference_mode()): no graph is needed", call=f"model.{name}")])
        flags = {name or "model": m.training for name, m in model.named_modules()}
        wrong = [name for name, flag in flags.items() if flag != training]
        if wrong:
            raise verdict(_("the model's training flag after greedy_decode"), on, [
                _("expected training={training} as before, got training={wrong} for {modules}",
                  training=training, wrong=not training, modules=", ".join(wrong)),
                _("remember was_training = model.training and end with "
                  "model.train(was_training)")])
        expected = case.expected()
        if not (isinstance(got, Tensor) and got.dtype == torch.long
                and torch.equal(got.cpu(), expected)):
            check_greedy(impl, case)
