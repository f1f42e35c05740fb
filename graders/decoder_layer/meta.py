"""Kata 08_decoder_layer (A Transformer decoder layer and stack).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import DECODER_BUILTINS, Kata, Mistake
from graders.core.quizzes import (CHOICE, encoder_layer_parameters, INTEGER, mha_parameters,
                                  Question)

KATA = Kata(
    id="08",
    name="08_decoder_layer",
    file="decoder_layer.py",
    title="A Transformer decoder layer and stack",
    track="models",
    difficulty="hard",
    target_minutes=30,
    prerequisites=("06",),
    mistakes=(
        "cross-attention-query-from-memory",
        "tgt-mask-in-cross-attention",
        "padding-masks-swapped",
        "cross-attention-missing",
        "shared-attention-weights",
        "norm-order-swapped",
        "missing-residual",
        "shared-layer-weights",
        "final-norm-missing",
        "residual-from-normed",
        "activation-misplaced",
        "mask-not-forwarded",
        "dropout-in-eval",
        "nan-on-fully-masked",
    ),
    forbidden=DECODER_BUILTINS,
    hints=(
        "Kata 06's layer with one more sub-block in the middle. Ask of each attention: "
        "where do its queries come from, where do its keys and values come from, and "
        "which two of the four masks belong to it?",
        "Three sub-blocks, each with its own residual and norm (norm1, norm2, norm3): "
        "self-attention over the target (tgt_mask, tgt_key_padding_mask); cross-attention "
        "with queries from the target and keys/values from memory (memory_mask, "
        "memory_key_padding_mask), in its own module multihead_attn; the feed-forward "
        "block. Post-LN normalises after each residual sum, Pre-LN before each sub-block. "
        "The decoder deep-copies the layer and gives every layer the same memory and masks.",
        "def _sa(self, x, mask, pad):\n"
        "    return self.dropout1(self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=pad,\n"
        "                                        need_weights=False)[0])\n"
        "def _ca(self, x, mem, mask, pad):   # queries x, keys and values mem\n"
        "    return self.dropout2(self.multihead_attn(x, mem, mem, attn_mask=mask,\n"
        "                                             key_padding_mask=pad, need_weights=False)[0])\n"
        "# Pre-LN:  x = x + self._sa(self.norm1(x), tgt_mask, tgt_key_padding_mask)\n"
        "#          x = x + self._ca(self.norm2(x), memory, memory_mask, memory_key_padding_mask)\n"
        "#          x = x + self._ff(self.norm3(x))   # _ff as in kata 06, ending in dropout3\n"
        "# Post-LN: x = self.norm1(x + self._sa(x, ...)), and so on for norm2 and norm3",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES = (
    Mistake("cross-attention-query-from-memory",
            "The cross-attention took its queries from memory; they come from the target, "
            "and only the keys and values come from memory.",
            "multihead_attn(x, memory, memory, ...): query first, then key and value."),
    Mistake("tgt-mask-in-cross-attention",
            "The masks went to the wrong attention: tgt_mask belongs to the self-attention "
            "and memory_mask to the cross-attention.",
            "self_attn(..., attn_mask=tgt_mask); multihead_attn(..., attn_mask=memory_mask)."),
    Mistake("padding-masks-swapped",
            "The padding masks went to the wrong attention: tgt_key_padding_mask blocks "
            "target keys in the self-attention, memory_key_padding_mask memory keys in the "
            "cross-attention.",
            "Each key padding mask goes with its keys: the target's to self_attn, the "
            "memory's to multihead_attn."),
    Mistake("cross-attention-missing",
            "The cross-attention to memory is missing (skipped, or its keys and values came "
            "from the target), so the output ignores memory.",
            "Between self-attention and feed-forward: x = x + multihead_attn(x, memory, "
            "memory, ...) with its own residual and norm2."),
    Mistake("shared-attention-weights",
            "One attention module served as both self-attention and cross-attention; they "
            "are two modules with their own weights.",
            "Build two: self.self_attn = nn.MultiheadAttention(...) and self.multihead_attn "
            "= nn.MultiheadAttention(...)."),
)


# The interviewer's follow-up questions: the notebook's quiz and `kata quiz`.
QUESTIONS = (
    Question(
        "tgt is (n, b, d) = (10, 4, 512) and memory is (m, b, d) = (30, 4, 512). What shape "
        "does the cross-attention's output have?",
        "A", CHOICE,
        "The queries come from the target, so there is one output row per target position: "
        "(10, 4, 512). The memory's length only sets the number of keys each query weighs "
        "(the weights are (b, h, 10, 30)); it never reaches the output's shape, which is "
        "why the residual x + ca(x, memory) works.",
        choices=("(10, 4, 512)", "(30, 4, 512)", "(10, 30, 512)", "(4, 10, 30)")),
    Question(
        "With n = 10 and m = 30 as above, which shape must `memory_mask` have?",
        "C", CHOICE,
        "A mask has one row per query and one column per key. In the cross-attention the "
        "queries are the 10 target positions and the keys the 30 memory positions: "
        "(10, 30). tgt_mask is (10, 10), and memory_key_padding_mask (b, 30).",
        choices=("(30, 30)", "(10, 10)", "(10, 30)", "(30, 10)")),
    Question(
        "How many parameters does `nn.TransformerDecoderLayer(512, 8, dim_feedforward=2048)` "
        "have?",
        encoder_layer_parameters(512, 2048) + mha_parameters(512) + 2 * 512, INTEGER,
        "Kata 06's encoder layer (3,152,384) plus a second attention block, the "
        "cross-attention, 4·512² + 4·512 = 1,050,624, and a third LayerNorm, 2·512 = 1,024: "
        "4,204,032."),
    Question(
        "A target of length 6 is left-padded by 2 (positions 0 and 1 are padding) and the "
        "self-attention also gets the causal tgt_mask. How many of its 6 queries have "
        "every key blocked?",
        2, INTEGER,
        "Query i sees keys 0..i under the causal mask; for i = 0 and i = 1 those are all "
        "padding. Their attention weights are all zero by this repository's contract (the "
        "attention output is out_proj's bias), never NaN. Right-padding never does this: "
        "key 0 is always real."),
    Question(
        "At inference the model generates 50 tokens for one source sentence of 30 tokens. "
        "How often must each decoder layer project the memory into its cross-attention's "
        "keys and values?",
        "D", CHOICE,
        "The cross-attention's keys and values are memory · W_k and memory · W_v: they "
        "depend on the source and the layer's weights, never on the tokens generated so "
        "far. Compute them once per layer after encoding and reuse them at every step "
        "(Hugging Face keeps them in the cache beside the self-attention's keys and "
        "values); only the self-attention's keys and values grow, one row per new token. "
        "Recomputing them at each of the 50 steps does the same projection 50 times.",
        choices=("once per generated token, 50 times",
                 "never: the memory itself serves as keys and values",
                 "once per token of the source, 30 times",
                 "once for the source, then reused at every step")),
    Question(
        "A GPT-style decoder-only block is this layer without the cross-attention (and "
        "its LayerNorm): masked self-attention and the feed-forward. How many parameters "
        "has it with d_model 512, 8 heads and dim_feedforward 2048?",
        encoder_layer_parameters(512, 2048), INTEGER,
        "3,152,384: the decoder layer's 4,204,032 minus the cross-attention (1,050,624) "
        "and its LayerNorm (1,024) — exactly kata 06's encoder layer, run with a causal "
        "mask. With no encoder there is no memory to attend to: the prompt and the "
        "continuation are one sequence, and the causal mask alone lets each position "
        "read everything before it, the prompt included. An encoder–decoder reads the "
        "source bidirectionally in its own stack, which suits tasks with a distinct input "
        "and output such as translation; a decoder-only model uses one stack for both and "
        "one objective, next-token prediction, on any text."),
)
