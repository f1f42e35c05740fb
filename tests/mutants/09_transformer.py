"""Kata 09's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

EMBED = "        return self.positional_encoding(embedding(tokens) * math.sqrt(self.d_model))\n"
PE_FORWARD = "        return self.dropout(x + self.pe[:seq_len].to(x.dtype).unsqueeze(0))\n"

MUTANTS = [
    Mutant(
        'embedding-not-scaled',
        why='the embeddings go into the positional encoding as they are, without * sqrt(d_model).',
        edits=[(EMBED, "        return self.positional_encoding(embedding(tokens))\n")],
    ),
    Mutant(
        'embedding-not-scaled',
        variant='after_positions',
        why='the sum of embeddings and positions is scaled, instead of the embeddings alone.',
        edits=[(EMBED, "        return self.positional_encoding(embedding(tokens)) * math.sqrt(self.d_model)\n")],
    ),
    Mutant(
        'embedding-not-scaled',
        variant='target_only',
        why='decode embeds the target by hand and forgets the scale there.',
        edits=[("            self.embed(self.tgt_embed, tgt), memory, tgt_mask=causal,",
                "            self.positional_encoding(self.tgt_embed(tgt)), memory, tgt_mask=causal,")],
    ),
    Mutant(
        'positional-encoding-missing',
        why='the embeddings are scaled but the positional encoding is never added.',
        edits=[(EMBED, "        return embedding(tokens) * math.sqrt(self.d_model)\n")],
    ),
    Mutant(
        'positional-encoding-missing',
        variant='source_only',
        why='encode embeds the source by hand and skips the positional encoding.',
        edits=[("        return self.encoder(self.embed(self.src_embed, src),",
                "        return self.encoder(self.src_embed(src) * math.sqrt(self.d_model),")],
    ),
    Mutant(
        'pe-wrong-axis',
        why="kata 05's seq-first module used on batch-first input: the table is added along "
            "the batch axis.",
        edits=[("        seq_len = x.size(1)\n", "        seq_len = x.size(0)\n"),
               (PE_FORWARD,
                "        return self.dropout(x + self.pe[:seq_len].to(x.dtype).unsqueeze(1))\n")],
    ),
    Mutant(
        'positions-from-one',
        why='the table is sliced from row 1, as if the first token were at position 1.',
        edits=[(PE_FORWARD,
                "        return self.dropout(x + self.pe[1:seq_len + 1].to(x.dtype).unsqueeze(0))\n")],
    ),
    Mutant(
        'embedding-not-scaled',
        variant='divided',
        why='the embeddings are divided by sqrt(d_model), as the attention scores are.',
        edits=[(EMBED, "        return self.positional_encoding(embedding(tokens) / math.sqrt(self.d_model))\n")],
    ),
    Mutant(
        'pe-not-buffer',
        why='the table is stored as an nn.Parameter, so the optimizer would train it.',
        edits=[('        self.register_buffer("pe", table.to(torch.get_default_dtype()))',
                '        self.pe = nn.Parameter(table.to(torch.get_default_dtype()))')],
    ),
    Mutant(
        'pe-dropout-rate',
        why="kata 05's module built with its default rate, PositionalEncoding(d_model, "
            "max_len=max_len), instead of the model's dropout.",
        edits=[("        self.positional_encoding = PositionalEncoding(d_model, dropout, max_len)",
                "        self.positional_encoding = PositionalEncoding(d_model, max_len=max_len)")],
    ),
    Mutant(
        'pe-dropout-rate',
        variant='none',
        why='the positional encoding returns x + pe, with no dropout at all.',
        edits=[(PE_FORWARD,
                "        return x + self.pe[:seq_len].to(x.dtype).unsqueeze(0)\n")],
    ),
    Mutant(
        'dropout-in-eval',
        why='the positional dropout is F.dropout, whose training flag defaults to True.',
        edits=[(PE_FORWARD,
                "        return nn.functional.dropout(x + self.pe[:seq_len].to(x.dtype).unsqueeze(0),"
                " self.dropout.p)\n")],
    ),
    Mutant(
        'final-norm-missing',
        base='handwritten_layers',
        why='the decoder stack has its final norm, but decode returns the last layer\'s output.',
        edits=[("        return self.decoder.norm(y)", "        return y")],
    ),
    Mutant(
        'final-norm-missing',
        variant='not_built',
        why="the encoder stack is built without norm=, unlike nn.Transformer's.",
        edits=[("""            encoder_layer, num_encoder_layers, norm=nn.LayerNorm(d_model),
            enable_nested_tensor=False)""",
                """            encoder_layer, num_encoder_layers, enable_nested_tensor=False)""")],
    ),
    Mutant(
        'causal-mask-missing',
        why='the decoder gets no tgt_mask: each target position sees the whole target.',
        edits=[("            self.embed(self.tgt_embed, tgt), memory, tgt_mask=causal,",
                "            self.embed(self.tgt_embed, tgt), memory,")],
    ),
    Mutant(
        'src-padding-mask-missing',
        why='encode runs the encoder without src_key_padding_mask.',
        edits=[("""        return self.encoder(self.embed(self.src_embed, src),
                            src_key_padding_mask=src == self.pad_idx)""",
                "        return self.encoder(self.embed(self.src_embed, src))")],
    ),
    Mutant(
        'tgt-padding-mask-missing',
        why="decode passes the causal mask and the memory's padding mask, but not the target's.",
        edits=[("            tgt_key_padding_mask=tgt == self.pad_idx,\n", "")],
    ),
    Mutant(
        'memory-padding-mask-missing',
        why="decode passes the target's padding mask but forgets the memory's.",
        edits=[("""            tgt_key_padding_mask=tgt == self.pad_idx,
            memory_key_padding_mask=src == self.pad_idx)""",
                "            tgt_key_padding_mask=tgt == self.pad_idx)")],
    ),
    Mutant(
        'generator-softmax',
        why='forward returns probabilities, as if the loss wanted them.',
        edits=[("        return self.generator(self.decode(tgt, self.encode(src), src))",
                "        return self.generator(self.decode(tgt, self.encode(src), src)).softmax(-1)")],
    ),
    Mutant(
        'generator-softmax',
        variant='log_softmax',
        why='forward returns log-probabilities (right for NLLLoss, wrong for logits).',
        edits=[("        return self.generator(self.decode(tgt, self.encode(src), src))",
                "        return self.generator(self.decode(tgt, self.encode(src), src)).log_softmax(-1)")],
    ),
    Mutant(
        'decode-wrong-position',
        why='the next token is read from the first position of the decoder output.',
        edits=[("                next_token = model.generator(out[:, -1]).argmax(dim=-1)",
                "                next_token = model.generator(out[:, 0]).argmax(dim=-1)")],
    ),
    Mutant(
        'decode-wrong-position',
        variant='every_position',
        why='takes the argmax over the logits of every position (the largest anywhere), not '
            'the last position\'s.',
        edits=[("                next_token = model.generator(out[:, -1]).argmax(dim=-1)",
                "                next_token = model.generator(out).amax(dim=1).argmax(dim=-1)")],
    ),
    Mutant(
        'decode-wrong-position',
        variant='padded_buffer',
        why='decodes a preallocated (batch, max_len) buffer, the tokens so far then padding, '
            'and reads the buffer\'s last slot instead of the last token\'s.',
        edits=[("                out = model.decode(ys, memory, src)  # (batch, len, d_model)",
                "                pad = ys.new_full((batch, max_len - ys.size(1)), model.pad_idx)\n"
                "                out = model.decode(torch.cat([ys, pad], dim=1), memory, src)")],
    ),
    Mutant(
        'decode-continues-after-eos',
        why='finished rows keep appending the argmax instead of pad_idx.',
        edits=[("                next_token = next_token.masked_fill(finished, model.pad_idx)\n", "")],
    ),
    Mutant(
        'decode-continues-after-eos',
        variant='eos_repeated',
        why='finished rows keep appending eos_idx instead of pad_idx.',
        edits=[("                next_token = next_token.masked_fill(finished, model.pad_idx)\n",
                "                next_token = next_token.masked_fill(finished, eos_idx)\n")],
    ),
    Mutant(
        'decode-continues-after-eos',
        variant='no_early_stop',
        why='the loop always runs to max_len, even when every row has produced eos.',
        edits=[("            while ys.size(1) < max_len and not bool(finished.all()):",
                "            while ys.size(1) < max_len:")],
    ),
    Mutant(
        'forbidden-builtin',
        why="the model builds an nn.Transformer and borrows its encoder and decoder.",
        edits=[("""        encoder_layer = nn.TransformerEncoderLayer(
            d_model, nhead, dim_feedforward, dropout, batch_first=True)
        # No nested tensors: padded positions keep ordinary values in every mode.
        self.encoder = nn.TransformerEncoder(
            encoder_layer, num_encoder_layers, norm=nn.LayerNorm(d_model),
            enable_nested_tensor=False)
        decoder_layer = nn.TransformerDecoderLayer(
            d_model, nhead, dim_feedforward, dropout, batch_first=True)
        self.decoder = nn.TransformerDecoder(
            decoder_layer, num_decoder_layers, norm=nn.LayerNorm(d_model))
""", """        transformer = nn.Transformer(d_model, nhead, num_encoder_layers, num_decoder_layers,
                                     dim_feedforward, dropout, batch_first=True)
        self.encoder = transformer.encoder
        self.decoder = transformer.decoder
""")],
    ),
]
