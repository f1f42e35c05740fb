"""Kata 09_transformer (The whole encoder-decoder Transformer and greedy decoding).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import Kata, Mistake, TRANSFORMER_BUILTINS
from graders.core.quizzes import (CHOICE, encoder_layer_parameters, INTEGER, mha_parameters,
                                  NUMBER, Question)

KATA = Kata(
    id="09",
    name="09_transformer",
    file="transformer.py",
    title="The whole encoder-decoder Transformer and greedy decoding",
    track="models",
    difficulty="hard",
    target_minutes=35,
    prerequisites=("05", "08"),
    mistakes=(
        "embedding-not-scaled",
        "positional-encoding-missing",
        "causal-mask-missing",
        "src-padding-mask-missing",
        "memory-padding-mask-missing",
        "tgt-padding-mask-missing",
        "decode-wrong-position",
        "decode-continues-after-eos",
        "generator-softmax",
        "pe-wrong-axis",
        "positions-from-one",
        "pe-not-buffer",
        "pe-dropout-rate",
        "final-norm-missing",
        "dropout-in-eval",
    ),
    forbidden=TRANSFORMER_BUILTINS,
    hints=(
        "Follow one batch through: token ids -> vectors -> encoder -> memory; target ids "
        "-> vectors -> decoder (looking at memory) -> generator -> logits. At each arrow, "
        "ask which positions must be hidden from which, and why.",
        "Vectors: embedding(tokens) * sqrt(d_model), plus the sinusoidal table along the "
        "sequence axis (axis 1: batch-first), then dropout. Three masks, all True = "
        "blocked: src == pad_idx for the encoder's keys and again for the decoder's "
        "memory keys, tgt == pad_idx for the decoder's own keys, plus a causal mask so "
        "position i sees only positions <= i. The generator returns raw logits. Greedy "
        "decoding feeds the growing prefix back in and reads only the last position; "
        "finished rows get pad_idx and the loop stops once every row has its eos.",
        "# decode: y (b, t, d) is the embedded target, memory (b, s, d) the encoder's output\n"
        "causal = torch.ones(t, t, dtype=torch.bool, device=tgt.device).triu(1)   # (t, t), True = blocked\n"
        "out = self.decoder(y, memory, tgt_mask=causal, tgt_key_padding_mask=tgt == self.pad_idx,\n"
        "                   memory_key_padding_mask=src == self.pad_idx)      # (b, t, d)\n"
        "# greedy, one step: nxt = model.generator(model.decode(ys, memory, src)[:, -1]).argmax(-1)\n"
        "#                   nxt = nxt.masked_fill(done, model.pad_idx)   # (b,): finished rows pad",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES = (
    Mistake("pe-dropout-rate",
            "The positional encoding's dropout does not use the model's rate: it acts on the "
            "sum, but at a rate of its own (kata 05's default 0.1, say) or not at all.",
            "Give it the model's dropout: PositionalEncoding(d_model, dropout, max_len). One "
            "rate for the whole model, like nn.Transformer's dropout."),
    Mistake("embedding-not-scaled",
            "The token embeddings were not multiplied by sqrt(d_model) before the positions "
            "were added (or were scaled by something else, or after the positions).",
            "x = embedding(tokens) * math.sqrt(d_model), then add the positional encoding."),
    Mistake("positional-encoding-missing",
            "The positional encoding was not added to the source or the target embeddings, "
            "so the model cannot tell the token order.",
            "Send both embeddings through the same positional_encoding: "
            "positional_encoding(embedding(tokens) * math.sqrt(d_model))."),
    Mistake("src-padding-mask-missing",
            "The encoder got no src_key_padding_mask, so real source tokens attended to "
            "padding.",
            "encoder(x, src_key_padding_mask=src == pad_idx)."),
    Mistake("tgt-padding-mask-missing",
            "The decoder's self-attention got no tgt_key_padding_mask, so target tokens "
            "attended to padding inside the target.",
            "decoder(..., tgt_key_padding_mask=tgt == pad_idx), next to the causal tgt_mask."),
    Mistake("memory-padding-mask-missing",
            "The decoder's cross-attention got no memory_key_padding_mask, so the target "
            "attended to the source's padded positions.",
            "decoder(..., memory_key_padding_mask=src == pad_idx): the same mask as the "
            "encoder's."),
    Mistake("decode-wrong-position",
            "Greedy decoding took the argmax at a position other than the last one.",
            "The next token is predicted by the last position: "
            "generator(decode(ys, memory, src)[:, -1]).argmax(-1)."),
    Mistake("decode-continues-after-eos",
            "Greedy decoding went on after eos: a finished row's later tokens are not "
            "pad_idx, or the loop did not stop once every row had produced eos.",
            "Keep a finished flag per row: masked_fill(finished, model.pad_idx) on each new "
            "token, and break as soon as finished.all()."),
    Mistake("generator-softmax",
            "forward returned probabilities or log-probabilities instead of the generator's "
            "raw logits.",
            "Return self.generator(decoded) as it is: nn.CrossEntropyLoss applies "
            "log-softmax itself."),
)


# The interviewer's follow-up questions: the notebook's quiz and `kata quiz`.
QUESTIONS = (
    Question(
        "How many parameters does `nn.Transformer()` have (d_model 512, 6 + 6 layers, "
        "dim_feedforward 2048, a final LayerNorm on each stack; no embeddings or "
        "generator)?",
        6 * encoder_layer_parameters(512, 2048) + 2 * 512
        + 6 * (encoder_layer_parameters(512, 2048) + mha_parameters(512) + 2 * 512) + 2 * 512,
        INTEGER,
        "An encoder layer has 3,152,384 (kata 06); a decoder layer adds a cross-attention "
        "(1,050,624) and a third LayerNorm (1,024): 4,204,032. 6 · 3,152,384 + 6 · 4,204,032 "
        "+ two final norms (2 · 1,024) = 44,140,544. A 37,000-token vocabulary adds about "
        "19 M per embedding table — which is why the original shares them."),
    Question(
        "A model is trained without the decoder's causal mask. What do you see?",
        "C", CHOICE,
        "With teacher forcing, position i can read token i + 1 of the target — the very "
        "token it must predict — so the training loss collapses towards zero. At inference "
        "there is no future to copy: greedy decoding feeds the model its own prefix and the "
        "output is garbage. A near-perfect training loss on a seq2seq model is a red flag.",
        choices=("a training loss that will not go down",
                 "NaN in the logits at the first position",
                 "a training loss near zero, and useless translations",
                 "nothing: the encoder's padding mask already hides the future")),
    Question(
        "greedy_decode with max_len = 10 on a batch of 3 whose rows produce eos as their "
        "3rd, 5th and 1st generated token. How many columns has the result?",
        6, INTEGER,
        "bos plus 5 generated tokens: the loop stops as soon as the last row (the one that "
        "needs 5 tokens) has produced eos. The other rows are padded with pad_idx after "
        "their eos. max_len (which counts bos) would only matter if a row went on longer."),
    Question(
        "forward returns `softmax(logits)` and training uses `nn.CrossEntropyLoss`. What "
        "happens?",
        "B", CHOICE,
        "CrossEntropyLoss applies log-softmax itself, so the model's probabilities are "
        "squashed a second time: every input of the loss lies in [0, 1], the predicted "
        "distribution can never be sharp, gradients shrink and learning stalls. The argmax "
        "is unchanged (softmax is monotonic), which is why such a bug survives a quick "
        "look at decoded tokens: grade the logits.",
        choices=("an error: CrossEntropyLoss refuses probabilities",
                 "it runs, but learning stalls; greedy decoding picks the same tokens",
                 "it trains exactly as with logits",
                 "the argmax changes, so greedy decoding picks other tokens")),
    Question(
        "Decoding two tokens: the first is A with probability 0.6 or B with 0.4. After A "
        "the likeliest second token has probability 0.3, after B 0.9. Greedy decoding "
        "returns a sequence of probability 0.6 · 0.3 = 0.18. Which probability has the "
        "sequence that beam search with beam width 2 returns?",
        round(0.4 * 0.9, 6), NUMBER,
        "Beam search keeps the 2 best prefixes, A (0.6) and B (0.4), extends both and "
        "ranks the results: B followed by its 0.9 token, 0.4 · 0.9 = 0.36, twice what "
        "greedy found. Greedy (a beam of width 1) commits to the locally best token and "
        "never reconsiders. Beam search ranks by the sum of log-probabilities, which "
        "favours short outputs (each extra token adds a negative term), so it divides by a "
        "length penalty, GNMT's ((5 + |Y|) / 6)^α; the original Transformer used beam "
        "width 4 and α = 0.6.",
        rel_tolerance=0.01),
    Question(
        "Trained with teacher forcing, the decoder always reads the true previous tokens; "
        "at inference it reads its own. What is this mismatch called, and what is a "
        "remedy?",
        "A", CHOICE,
        "Exposure bias: the model is trained on gold prefixes only, so at inference one "
        "early mistake leads it into prefixes it has never seen, and errors compound. "
        "Scheduled sampling (Bengio et al., 2015) feeds the model its own predictions "
        "instead of the gold tokens with a probability that grows during training; for a "
        "Transformer, which computes every position at once from the gold prefix, it is "
        "usually done with a second decoder pass. Free running, always feeding the model's own output "
        "while training, is slow and unstable, so teacher forcing stays the default.",
        choices=("exposure bias; scheduled sampling",
                 "overfitting; more dropout",
                 "label bias; label smoothing",
                 "vanishing gradients; a larger learning rate")),
)
