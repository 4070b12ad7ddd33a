"""Tokenization: how text becomes the integer ids a model reads.

Lesson: a model never sees characters, only ids from a fixed vocabulary.
Byte-pair encoding (BPE) builds that vocabulary by starting from single
symbols and repeatedly merging the most frequent adjacent pair; the ordered
merge list *is* the tokenizer. This module shows that three ways:

* `train_bpe_steps` -- BPE from scratch on a tiny text, one merge at a time,
  with the vocabulary growing and then shrinking (pure Python, for teaching);
* `TextTokenizer.tokens_after_merges` -- replay the first k merges of a real
  trained tokenizer and watch a sentence go from bytes to words;
* `TextTokenizer` -- the real thing (Hugging Face `tokenizers`), byte-level BPE,
  character-level, or a pre-trained BERT's WordPiece ("playing" -> "playing",
  "unwatchable" -> "un" "##watch" "##able"), with every token mapped back to
  its characters and bytes.

Input text is used as given except for one repair: lone UTF-16 surrogates
(e.g. "\\ud800", which can't be encoded as UTF-8 and which `tokenizers`
rejects) become U+FFFD. That keeps the string's length, so offsets still point
into the caller's original string.
"""

from __future__ import annotations

import bisect
import functools
import json
import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Regex
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, pre_tokenizers, trainers

END_OF_TEXT = "<|endoftext|>"
PAD, CLS, MASK = "[PAD]", "[CLS]", "[MASK]"
UNKNOWN = "[UNK]"
LANGUAGE_MODEL_SPECIAL_TOKENS = (END_OF_TEXT,)
CLASSIFIER_SPECIAL_TOKENS = (END_OF_TEXT, PAD, CLS, MASK)

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class TokenizerError(Exception):
    """A tokenizer file is missing or unreadable; the message names the path."""


@dataclass(frozen=True)
class TokenSpan:
    """One token of a text and where it came from.

    `start:end` are character offsets into the original string, covering every
    character at least one of whose bytes is in the token. A byte-level token
    that holds only part of a multi-byte character (an emoji is 4 bytes) still
    points at that whole character, so neighbouring tokens can share one
    character. `byte_start:byte_end` index the UTF-8 bytes of the text and
    never overlap. `text` is the token's own bytes decoded, with bytes of a
    split character shown as escapes (e.g. "\\xf0\\x9f").
    """

    id: int
    text: str
    start: int
    end: int
    byte_start: int
    byte_end: int


def is_fragment(text: str, span: TokenSpan) -> bool:
    """Whether a byte-level token holds only part of a character's bytes (它 is 3 bytes in UTF-8)."""
    return span.byte_end - span.byte_start < len(text[span.start:span.end].encode("utf-8"))


def sanitize(text: str) -> str:
    """Replace lone surrogates with U+FFFD (same length, so offsets are unchanged)."""
    return _LONE_SURROGATE.sub("\ufffd", text)


# ---------------------------------------------------------------- real tokenizers


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's table from each byte to a printable character; byte-level tokens are spelled in it."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            table[byte] = chr(byte)
        else:
            table[byte] = chr(256 + extra)
            extra += 1
    return table


_BYTE_OF_CHAR = {char: byte for byte, char in _bytes_to_unicode().items()}


class TextTokenizer:
    """A trained `tokenizers.Tokenizer` with offsets that map back to the original text."""

    def __init__(self, tokenizer: HFTokenizer):
        # spans are the text's own tokens: a file that pads (BERT's pads to 128 with [PAD]) or truncates
        # would add tokens that are not in the text, or hide the ones a model cuts and reports itself
        tokenizer.no_padding()
        tokenizer.no_truncation()
        # a text is read as text: "<|im_start|>" typed by a person is tokens of its characters, never the control
        # token a chat template writes (which `TextTokenizer.ids_of_special` gives)
        tokenizer.encode_special_tokens = True
        self._tokenizer = tokenizer
        # read from the pieces, not the whole file: a 262,144-piece vocabulary's JSON is 33 MB
        pre = json.loads(tokenizer.pre_tokenizer.__getstate__()) if tokenizer.pre_tokenizer is not None else {}
        self.is_byte_level = any(p.get("type") == "ByteLevel" for p in [pre, *pre.get("pretokenizers", [])])
        model = type(tokenizer.model).__name__
        # what one token is, as the Tokens tab labels it: a file's model type, in the words a lesson uses
        self.kind = ("byte-level BPE" if self.is_byte_level else "WordPiece" if model == "WordPiece"
                     else "characters" if model == "WordLevel" and self._one_character_words() else model)
        self.special_tokens = tuple(t.content for _, t in sorted(tokenizer.get_added_tokens_decoder().items())
                                    if t.special)

    def _one_character_words(self) -> bool:
        words = [t for t in self._tokenizer.get_vocab(with_added_tokens=False) if not t.startswith(("[", "<"))]
        return all(len(t) == 1 for t in words)  # the specials ([UNK], <s>, ...) aside

    @functools.cached_property
    def merges(self) -> list[tuple[str, str]]:
        """The BPE's merges in rank order ([] for other models); read when first asked for (the merge replay)."""
        if not isinstance(self._tokenizer.model, models.BPE):
            return []
        merges = json.loads(self._tokenizer.model.__getstate__()).get("merges", [])
        return [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges]

    def merge_ids(self) -> dict | None:
        """This byte-level BPE as numbers, for a page that tokenizes as a person types (ui/tokens.js):
        {"bytes": the id of each byte 0..255, "merges": [left id, right id, ...] in rank order, "first": the id
        the first merge makes (each next merge's is one more)}. None for a tokenizer that page cannot replay
        exactly: another model, a normalizer, a pre-tokenizer other than GPT-2's byte-level split, BPE options
        it lacks (dropout, suffixes), added tokens that are not special (`encode` reads the special ones as
        text), or merged tokens whose ids are not in rank order."""
        pre = json.loads(self._tokenizer.pre_tokenizer.__getstate__()) if self._tokenizer.pre_tokenizer else {}
        if (pre != {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
                or self._tokenizer.normalizer is not None or not isinstance(self._tokenizer.model, models.BPE)
                or not all(t.special for t in self._tokenizer.get_added_tokens_decoder().values())):
            return None
        model = json.loads(self._tokenizer.model.__getstate__())
        if any(model.get(option) for option in ("dropout", "continuing_subword_prefix", "end_of_word_suffix",
                                                "byte_fallback", "ignore_merges")):
            return None
        vocab = model["vocab"]
        pairs = [m.split(" ") if isinstance(m, str) else m for m in model["merges"]]
        made = [vocab[left + right] for left, right in pairs]
        if not made or made != list(range(made[0], made[0] + len(made))):
            return None
        return {"bytes": [vocab[char] for _, char in sorted(_bytes_to_unicode().items())],
                "merges": [vocab[piece] for pair in pairs for piece in pair], "first": made[0]}

    def character_ids(self) -> dict | None:
        """This character tokenizer as numbers, for the same page: {"chars": {character: id}, "unknown": the id
        of [UNK]}. None for any other tokenizer, or one that reads a text otherwise than a character at a time."""
        pre = json.loads(self._tokenizer.pre_tokenizer.__getstate__()) if self._tokenizer.pre_tokenizer else {}
        if (self.kind != "characters" or self._tokenizer.normalizer is not None or self._tokenizer.post_processor
                or pre != {"type": "Split", "pattern": {"Regex": r"[\s\S]"}, "behavior": "Isolated", "invert": False}
                or self.token_to_id(UNKNOWN) is None):
            return None
        chars = {t: i for t, i in self._tokenizer.get_vocab(with_added_tokens=False).items() if len(t) == 1}
        return {"chars": chars, "unknown": self.token_to_id(UNKNOWN)}

    # -- files

    @classmethod
    def from_tokenizer_json(cls, text: str) -> TextTokenizer:
        return cls(HFTokenizer.from_str(text))

    @classmethod
    def load(cls, path: str | os.PathLike) -> TextTokenizer:
        """Load a tokenizer.json (or a folder containing one)."""
        path = Path(path)
        if path.is_dir():
            path = path / "tokenizer.json"
        try:
            return cls.from_tokenizer_json(path.read_text(encoding="utf-8"))
        except FileNotFoundError as error:
            raise TokenizerError(f"No tokenizer file at {path}.") from error
        except Exception as error:  # tokenizers raises bare Exception on bad JSON
            raise TokenizerError(f"Could not read tokenizer file {path}: {error}") from error

    def save(self, path: str | os.PathLike) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._tokenizer.save(str(path))

    def to_tokenizer_json(self) -> str:
        return self._tokenizer.to_str()

    # -- vocabulary

    @property
    def vocab_size(self) -> int:
        return self._tokenizer.get_vocab_size(with_added_tokens=True)

    def token_to_id(self, token: str) -> int | None:
        return self._tokenizer.token_to_id(token)

    def id_to_token(self, token_id: int) -> str | None:
        return self._tokenizer.id_to_token(token_id)

    # -- encoding

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """The ids a model reads: the text's tokens, inside any its file adds around them (a BERT
        WordPiece file: [CLS] ... [SEP], as in pre-training; Gemma's <bos>; our own tokenizers add none),
        unless `add_special_tokens` is False (a part of a longer prompt)."""
        return self._tokenizer.encode(sanitize(text), add_special_tokens=add_special_tokens).ids

    def encode_template(self, text: str) -> list[int]:
        """The ids of text a template wrote (a chat template's "<|im_start|>user"): its special tokens are the
        control tokens themselves. A person's text is never read so (`encode`)."""
        ids = []
        pattern = "|".join(re.escape(t) for t in sorted(self.special_tokens, key=len, reverse=True))
        for i, part in enumerate(re.split(f"({pattern})", text) if pattern else [text]):
            if i % 2:
                ids.append(self.token_to_id(part))
            elif part:
                ids.extend(self.encode(part, add_special_tokens=False))
        return ids

    def decode(self, ids: list[int]) -> str:
        return self._tokenizer.decode(list(ids), skip_special_tokens=False)

    def tokens(self, text: str) -> list[TokenSpan]:
        """Every token `encode` gives, with its character and byte offsets; one the file adds
        around the text ([CLS], [SEP]) is an empty span where it stands (start == end)."""
        clean = sanitize(text)
        encoding = self._tokenizer.encode(clean)
        if self.is_byte_level:
            return _spans_from_pieces(clean, encoding.ids, [self._token_bytes(t) for t in encoding.tokens])
        return _spans_from_char_offsets(clean, encoding.ids, encoding.tokens, encoding.offsets)

    def _token_bytes(self, token: str) -> bytes:
        if token in self.special_tokens:
            return token.encode("utf-8")
        return bytes(_BYTE_OF_CHAR[char] for char in token)

    # -- merge replay

    def merge_piece_text(self, piece: str) -> str:
        """A merge-list entry (spelled in the byte alphabet, "Ġ" for a space) as the text it stands for, the
        bytes of a split character as escapes ("\\xe7\\x9a"), as token spans show them."""
        return self._token_bytes(piece).decode("utf-8", errors="backslashreplace")

    def tokens_after_merges(self, text: str, k: int) -> list[TokenSpan]:
        """Segment `text` using only the first `k` merges of this BPE (k = 0 gives bytes).

        Each pre-tokenized word starts as single symbols; the applicable merge
        with the lowest rank is applied everywhere in the word, repeatedly,
        until no merge with rank < k applies. With all merges this equals
        `tokens(text)`.
        """
        if not self.merges:
            return self.tokens(text)
        rank = {pair: r for r, pair in enumerate(self.merges[:max(k, 0)])}
        clean = sanitize(text)
        pieces = []  # special tokens typed in the text are text here too, as `encode` reads them
        for word, _ in self._tokenizer.pre_tokenizer.pre_tokenize_str(clean):
            pieces.extend(_apply_ranked_merges(list(word), rank))
        ids = [self.token_to_id(piece) for piece in pieces]
        return _spans_from_pieces(clean, ids, [self._token_bytes(p) for p in pieces])


def _apply_ranked_merges(symbols: list[str], rank: dict[tuple[str, str], int]) -> list[str]:
    while len(symbols) > 1:
        pairs = [(rank.get(pair), pair) for pair in zip(symbols, symbols[1:]) if pair in rank]
        if not pairs:
            break
        _, best = min(pairs)
        symbols = _merge_pair(symbols, best)
    return symbols


def _merge_pair(symbols: list[str], pair: tuple[str, str]) -> list[str]:
    """Replace every non-overlapping occurrence of `pair`, left to right, by one symbol."""
    merged, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            merged.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            merged.append(symbols[i])
            i += 1
    return merged


def _byte_starts(text: str) -> list[int]:
    """Byte offset at which each character starts, plus the total length at the end."""
    starts, position = [], 0
    for char in text:
        starts.append(position)
        position += len(char.encode("utf-8"))
    starts.append(position)
    return starts


def _spans_from_pieces(text: str, ids: list[int], pieces: list[bytes]) -> list[TokenSpan]:
    """Spans for tokens whose bytes, concatenated, are exactly the UTF-8 of `text`."""
    byte_starts = _byte_starts(text)
    spans, position = [], 0
    for token_id, piece in zip(ids, pieces):
        byte_end = position + len(piece)
        start = bisect.bisect_right(byte_starts, position) - 1
        end = bisect.bisect_left(byte_starts, byte_end)
        spans.append(TokenSpan(token_id, piece.decode("utf-8", errors="backslashreplace"),
                               start, end, position, byte_end))
        position = byte_end
    return spans


def _spans_from_char_offsets(text, ids, tokens, offsets) -> list[TokenSpan]:
    byte_starts = _byte_starts(text)
    spans, position = [], 0
    for token_id, token, (start, end) in zip(ids, tokens, offsets):
        if start == end:  # added, not read ([CLS], [SEP] come as (0, 0)): no characters, where it stands
            start = end = position
        spans.append(TokenSpan(token_id, token, start, end, byte_starts[start], byte_starts[end]))
        position = end
    return spans


def train_byte_level_bpe(texts: Iterable[str], vocab_size: int,
                         special_tokens: Iterable[str] = LANGUAGE_MODEL_SPECIAL_TOKENS,
                         show_progress: bool = False) -> TextTokenizer:
    """Train a GPT-2-style byte-level BPE: any text encodes, nothing is ever unknown.

    The 256 byte symbols are always in the vocabulary, so `vocab_size` must be
    larger than 256 plus the special tokens; the rest are learned merges.
    """
    tokenizer = HFTokenizer(models.BPE())
    # No prefix space: a word at the start of a text stays itself, and
    # encode(a + b) == encode(a) + encode(b) at word boundaries.
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(special_tokens),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=show_progress)
    tokenizer.train_from_iterator((sanitize(t) for t in texts), trainer=trainer)
    return TextTokenizer(tokenizer)


def train_char_level(texts: Iterable[str], special_tokens: Iterable[str] = LANGUAGE_MODEL_SPECIAL_TOKENS,
                     show_progress: bool = False, min_count: int = 0) -> TextTokenizer:
    """Train a character-level tokenizer: one id per character seen at least `min_count` times, `[UNK]` for the rest.

    Chinese has thousands of characters seen once or twice: a model cannot learn them, and
    each would cost a row of the embedding table, so they share `[UNK]`."""
    tokenizer = HFTokenizer(models.WordLevel(unk_token=UNKNOWN))
    # Every single character (newlines included) is its own "word".
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tokenizer.decoder = decoders.Fuse()  # join characters back without spaces
    trainer = trainers.WordLevelTrainer(vocab_size=1 << 20, min_frequency=min_count,
                                        special_tokens=[UNKNOWN, *special_tokens], show_progress=show_progress)
    tokenizer.train_from_iterator((sanitize(t) for t in texts), trainer=trainer)
    return TextTokenizer(tokenizer)


# ---------------------------------------------------------------- BPE from scratch


@dataclass(frozen=True)
class MergeStep:
    """One BPE merge: the pair, how often it occurred then, the new token, the vocabulary size after."""

    pair: tuple[str, str]
    count: int
    token: str
    vocab_size: int


@dataclass(frozen=True)
class BpeTraining:
    """BPE learned from scratch on a small text, step by step (see `train_bpe_steps`)."""

    text: str
    start_vocab_size: int
    steps: tuple[MergeStep, ...]

    @property
    def vocab_sizes(self) -> list[int]:
        """Vocabulary size after 0, 1, ..., len(steps) merges (the "grows then shrinks" curve)."""
        return [self.start_vocab_size, *(step.vocab_size for step in self.steps)]

    def segmentation(self, k: int) -> list[str]:
        """The text as tokens after the first `k` merges; "".join gives the text back."""
        words = _scratch_words(self.text)
        for step in self.steps[:k]:
            words = [_merge_pair(word, step.pair) for word in words]
        return [token for word in words for token in word]


def _scratch_words(text: str) -> list[list[str]]:
    """Words with their trailing whitespace, as lists of characters.

    Merges happen only inside one of these, so no token crosses a word
    boundary; a token may end in a space ("sea "), never start one word and
    continue into the next.
    """
    return [list(word) for word in re.findall(r"\S+\s*|\s+", text)]


def train_bpe_steps(text: str, n_merges: int, min_count: int = 2) -> BpeTraining:
    """Learn up to `n_merges` BPE merges on `text`, recording every step.

    Each step merges the most frequent adjacent pair (ties: the pair seen
    first in the text). Training stops early when the best pair occurs fewer
    than `min_count` times: 2 is the usual rule (a pair seen once generalises
    nothing); 1 keeps merging until every word is a single token.

    The vocabulary size counts the distinct tokens present in the segmented
    text. A merge adds its new token, and removes a part once no copy of that
    part is left outside merged tokens. So the size first grows (new tokens,
    parts still used elsewhere), then shrinks (parts vanish) down to the number
    of distinct words -- on the sailor rhyme the shrinking half needs
    `min_count=1`, because its rare words only merge with count-1 pairs.
    """
    words = Counter(tuple(word) for word in _scratch_words(text))
    start_vocab_size = _distinct_tokens(words)
    steps = []
    for _ in range(n_merges):
        pair_counts = _pair_counts(words)
        if not pair_counts or max(pair_counts.values()) < min_count:
            break
        pair = max(pair_counts, key=pair_counts.get)
        words = Counter({tuple(_merge_pair(list(word), pair)): n for word, n in words.items()})
        steps.append(MergeStep(pair, pair_counts[pair], pair[0] + pair[1], _distinct_tokens(words)))
    return BpeTraining(text, start_vocab_size, tuple(steps))


def _pair_counts(words: Counter) -> Counter:
    counts = Counter()
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] += n
    return counts


def _distinct_tokens(words: Counter) -> int:
    return len({token for word in words for token in word})
