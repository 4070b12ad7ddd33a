"""Translating with an encoder-decoder: read the source once, write the target token by token.

Lesson: the encoder turns the source into a memory (S, d_model) exactly once.
The decoder then writes the target one token at a time, starting from <s>:
each step feeds only the newest token (its keys and values join the KV cache),
reads the memory through cross-attention, and predicts the next token, until it
writes </s>. Greedy decoding takes the most likely token at every step; beam
search (`transformer_core.decoding.beam`, shared with the language model) keeps several.

Conventions, shared by training and decoding:
    source ids  = chars + [</s>]            positions 0..n
    target in   = [<s>] + chars             positions 0..m  (what the decoder reads)
    target out  = chars + [</s>]            (what it must predict at each position)
So for copy, target position i predicts source character i and cross-attention
should read source position i: a diagonal, </s> included.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch

from .beam import BeamResult, beam_search, encoder_decoder_step
from ..tokenization import PAD, TextTokenizer, train_char_level
from ..device import device_of

BOS, EOS = "<s>", "</s>"
SPECIAL_TOKENS = (PAD, BOS, EOS)
IGNORE = -100  # cross-entropy's ignore_index: padded target positions carry no loss


class DecodingError(ValueError):
    """A source the model cannot take (empty, too long, or holding unknown characters)."""


def char_tokenizer(alphabet: str) -> TextTokenizer:
    """One id per character of `alphabet`, plus [UNK], [PAD], <s>, </s>."""
    return train_char_level([alphabet], special_tokens=SPECIAL_TOKENS)


@dataclass(frozen=True)
class Codec:
    """Strings <-> id tensors for one encoder-decoder, following the conventions above."""

    tokenizer: TextTokenizer

    @property
    def pad(self) -> int:
        return self.tokenizer.token_to_id(PAD)

    @property
    def bos(self) -> int:
        return self.tokenizer.token_to_id(BOS)

    @property
    def eos(self) -> int:
        return self.tokenizer.token_to_id(EOS)

    @property
    def alphabet(self) -> set[str]:
        """The characters the tokenizer has ids for (specials excluded)."""
        tokens = (self.tokenizer.id_to_token(i) for i in range(self.tokenizer.vocab_size))
        return {t for t in tokens if t is not None and len(t) == 1}

    def source_ids(self, text: str) -> list[int]:
        return self.tokenizer.encode(text) + [self.eos]

    def text(self, ids: Iterable[int]) -> str:
        """Decoded characters up to (not including) the first </s>."""
        kept = []
        for i in ids:
            if i == self.eos:
                break
            kept.append(i)
        return self.tokenizer.decode(kept)

    def check(self, text: str, max_len: int) -> None:
        """Raise DecodingError when the model cannot read `text`."""
        if not text:
            raise DecodingError("the source is empty: type at least one character")
        unknown = sorted(set(text) - self.alphabet)
        if unknown:
            raise DecodingError(
                f"{', '.join(repr(c) for c in unknown)} {'is' if len(unknown) == 1 else 'are'} not in this "
                f"model's vocabulary; use only: {''.join(sorted(self.alphabet))!r}"
            )
        if len(text) + 1 > max_len:  # + 1 for </s>
            raise DecodingError(f"the source has {len(text)} characters; this model takes at most {max_len - 1}")

    def sources(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Right-padded source ids (B, S) and their lengths (B,)."""
        ids = [self.source_ids(t) for t in texts]
        return _pad(ids, self.pad), torch.tensor([len(i) for i in ids])

    def batch(self, pairs: Sequence[tuple[str, str]]):
        """Training batch: src (B, S), src_lengths (B,), tgt_in (B, T), tgt_out (B, T) with IGNORE padding."""
        src, src_lengths = self.sources([s for s, _ in pairs])
        targets = [self.tokenizer.encode(t) for _, t in pairs]
        tgt_in = _pad([[self.bos] + t for t in targets], self.pad)
        tgt_out = _pad([t + [self.eos] for t in targets], IGNORE)
        return src, src_lengths, tgt_in, tgt_out


def _pad(rows: list[list[int]], value: int) -> torch.Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor([r + [value] * (width - len(r)) for r in rows], dtype=torch.long)


@torch.no_grad()
def greedy(model, src: torch.Tensor, src_lengths: torch.Tensor, bos: int, eos: int,
           max_new_tokens: int | None = None) -> list[list[int]]:
    """Greedy decoding of a batch of sources (B, S) with the KV cache; per row the ids before </s>
    (a row that never writes </s> stops after max_new_tokens, default: max_len - 1, so that <s> and
    everything written still fit the decoder's positions when the translation is re-read by `traced`)."""
    device = device_of(model)
    src, src_lengths = src.to(device), src_lengths.to(device)
    max_new_tokens = model.config.max_len - 1 if max_new_tokens is None else max_new_tokens
    memory = model.encode(src, src_lengths)  # once: every step reads the same memory
    cache = model.new_cache()
    token = torch.full((src.shape[0], 1), bos, device=device)
    written, done = [], torch.zeros(src.shape[0], dtype=torch.bool, device=device)
    for _ in range(max_new_tokens):
        token = model.decode(token, memory, src_lengths, cache)[:, -1:].argmax(-1)  # (B, 1)
        written.append(token)
        done |= token[:, 0] == eos
        if done.all():
            break
    rows = torch.cat(written, dim=1).tolist()
    return [row[: row.index(eos)] if eos in row else row for row in rows]


def beam(model, src: torch.Tensor, bos: int, eos: int, width: int, max_new_tokens: int | None = None,
         length_penalty: float = 1.0):
    """Beam search for one source (1, S) through the shared `beam_search`; returns its BeamResult
    (at most max_len - 1 tokens by default, as for `greedy`)."""
    max_new_tokens = model.config.max_len - 1 if max_new_tokens is None else max_new_tokens
    step = encoder_decoder_step(model, src, None, width)
    return beam_search(step, model.new_cache(), [bos], width, max_new_tokens, length_penalty, eos)


@dataclass(frozen=True)
class Translation:
    ids: list[int]  # the target ids written, without <s> and </s>
    beam: BeamResult | None  # the search tree when beam search (width > 1) wrote them


def translate(model, codec: Codec, text: str, width: int = 1) -> Translation:
    """Translate one source string; width 1 is greedy decoding, 2..8 beam search."""
    codec.check(text, model.config.max_len)
    src, src_lengths = codec.sources([text])
    if width == 1:
        return Translation(greedy(model, src, src_lengths, codec.bos, codec.eos)[0], None)
    result = beam(model, src, codec.bos, codec.eos, width)
    tokens = result.best.tokens
    return Translation(tokens[:-1] if tokens and tokens[-1] == codec.eos else tokens, result)


def traced(model, codec: Codec, text: str, target_ids: list[int]):
    """Re-read source and written target in one traced forward pass (teacher forcing).

    Returns (probs (m + 1, vocab) of every next token, Trace): row i is the
    distribution the decoder had at target position i, so it reproduces the
    per-step choices and gives every attention map of the translation at once.
    """
    src, src_lengths = codec.sources([text])
    device = device_of(model)
    tgt = torch.tensor([[codec.bos] + list(target_ids)], device=device)
    logits, trace = model.run_with_trace(src.to(device), tgt, src_lengths.to(device))
    return torch.softmax(logits[0].float(), dim=-1).cpu(), trace


def exact_match(model, codec: Codec, pairs: Sequence[tuple[str, str]], batch_size: int = 250) -> float:
    """Fraction of sources whose greedy translation equals the target exactly."""
    right = 0
    for i in range(0, len(pairs), batch_size):
        chunk = pairs[i : i + batch_size]
        src, src_lengths = codec.sources([s for s, _ in chunk])
        out = greedy(model, src, src_lengths, codec.bos, codec.eos)
        right += sum(codec.text(ids) == target for ids, (_, target) in zip(out, chunk))
    return right / len(pairs)
