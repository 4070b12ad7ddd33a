"""Tests for transformer_core.tokenization: offsets, merge replay, BPE from scratch, bad input."""

import json
import re
from pathlib import Path

import pytest

from transformer_core.training import train_tokenizer
from transformer_core.tokenization import (
    CLASSIFIER_SPECIAL_TOKENS,
    END_OF_TEXT,
    UNKNOWN,
    TextTokenizer,
    TokenizerError,
    sanitize,
    train_bpe_steps,
    train_byte_level_bpe,
    train_char_level,
)

SHAKESPEARE_BPE = Path(__file__).resolve().parents[2] / "assets" / "shakespeare-bpe" / "tokenizer.json"

VARIED = [
    "To be, or not to be, that is the question:",
    "naïve café, e\u0301 with a combining accent",
    "日本語のテキストと中文",
    "family 👩‍👩‍👧 and a smile 🙂🙂",
    "مرحبا بالعالم and עברית",
    "x = [i ** 2 for i in range(10)]  # 1234567890\n\tif x: return {'a': 3.14}",
    "   leading and trailing spaces   \n\n\n",
    "NUL\x00 bell\x07 delete\x7f",
    f"first{END_OF_TEXT}second {END_OF_TEXT}",
]

SAILOR = ("a sailor went to sea sea sea to see what he could see see see but all that he could "
          "see see see was the bottom of the deep blue sea sea sea")

HUNDRED_KB = ("Shall I compare thee to a summer's day? 🙂 日本 " * 2500)[:100_000]
BAD_INPUTS = ["", "\x00", "a\ud800b\udfff", "\u202eright-to-left override", "שלום עולם", HUNDRED_KB]


@pytest.fixture(scope="module")
def bpe():
    return TextTokenizer.load(SHAKESPEARE_BPE)


@pytest.fixture(scope="module")
def chars():
    return train_char_level(["hello world\n"])


def _reconstruct(text, spans):
    """The text from char spans, taking a shared (split) character only once."""
    pieces, covered = [], 0
    for span in spans:
        pieces.append(text[max(span.start, covered):span.end])
        covered = max(covered, span.end)
    return "".join(pieces)


def test_shipped_tokenizer_is_byte_level_with_4096_tokens(bpe):
    assert bpe.is_byte_level and bpe.vocab_size == 4096
    assert bpe.special_tokens == (END_OF_TEXT,)
    assert len(bpe.merges) == 4096 - 256 - 1


@pytest.mark.parametrize("text", VARIED)
def test_decode_inverts_encode(bpe, text):
    assert bpe.decode(bpe.encode(text)) == text


@pytest.mark.parametrize("text", VARIED)
def test_byte_offsets_tile_the_utf8_of_the_text(bpe, text):
    spans = bpe.tokens(text)
    assert [s.id for s in spans] == bpe.encode(text)
    utf8 = text.encode("utf-8")
    assert b"".join(utf8[s.byte_start:s.byte_end] for s in spans) == utf8
    assert all(a.byte_end == b.byte_start for a, b in zip(spans, spans[1:]))


@pytest.mark.parametrize("text", VARIED)
def test_char_spans_overlap_only_on_a_character_split_between_tokens(bpe, text):
    spans = bpe.tokens(text)
    assert _reconstruct(text, spans) == text
    for a, b in zip(spans, spans[1:]):
        if b.start < a.end:  # shared character: b must begin inside that character's bytes
            assert b.start == a.end - 1
            assert len(text[b.start].encode("utf-8")) > 1


def test_char_spans_tile_plain_text_exactly(bpe):
    text = "Now is the winter of our discontent\nMade glorious summer"
    spans = bpe.tokens(text)
    assert "".join(text[s.start:s.end] for s in spans) == text
    assert all(s.text == text[s.start:s.end] for s in spans)


def test_tokens_of_one_split_emoji_all_point_at_it(bpe):
    spans = bpe.tokens("a🙂")
    emoji_spans = [s for s in spans if s.byte_start >= 1]
    assert len(emoji_spans) > 1  # not a whole token in a Shakespeare vocabulary
    assert {(s.start, s.end) for s in emoji_spans} == {(1, 2)}
    assert sum(s.byte_end - s.byte_start for s in emoji_spans) == 4


def test_special_tokens_are_a_parameter_and_typed_ones_stay_text():
    tokenizer = train_byte_level_bpe(["[CLS] good film [PAD]"] * 3, 300, CLASSIFIER_SPECIAL_TOKENS)
    assert tokenizer.special_tokens == CLASSIFIER_SPECIAL_TOKENS
    cls_id = tokenizer.token_to_id("[CLS]")
    assert cls_id is not None
    # a person who types "[CLS]" (or a chat template's "<|im_start|>") gets its characters, never the control token
    assert cls_id not in tokenizer.encode("[CLS]good")
    spans = tokenizer.tokens("[CLS]good")
    assert "".join(s.text for s in spans) == "[CLS]good"
    assert [s.id for s in tokenizer.tokens_after_merges("[CLS]good", len(tokenizer.merges))] == [s.id for s in spans]


@pytest.mark.parametrize("text", VARIED)
def test_replay_with_all_merges_equals_the_tokenizer(bpe, text):
    assert bpe.tokens_after_merges(text, len(bpe.merges)) == bpe.tokens(text)


def test_replay_with_no_merges_gives_bytes(bpe):
    text = "Hello, 世界 🙂!"
    spans = bpe.tokens_after_merges(text, 0)
    assert len(spans) == len(text.encode("utf-8"))
    assert bpe.decode([s.id for s in spans]) == text


def test_replay_uses_fewer_tokens_as_merges_are_added(bpe):
    text = "Friends, Romans, countrymen, lend me your ears"
    counts = [len(bpe.tokens_after_merges(text, k)) for k in (0, 50, 500, len(bpe.merges))]
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]


def test_char_tokenizer_shares_the_interface_and_has_an_unknown_token(chars):
    assert not chars.is_byte_level and chars.merges == []
    unknown = chars.token_to_id(UNKNOWN)
    spans = chars.tokens("hello 🙂\n")
    assert [s.id for s in spans][-2] == unknown
    assert (spans[-2].start, spans[-2].end, spans[-2].byte_start, spans[-2].byte_end) == (6, 7, 6, 10)
    assert chars.decode(chars.encode("hello\nworld")) == "hello\nworld"
    assert chars.decode(chars.encode("hi")) == f"h{UNKNOWN}"
    assert chars.tokens_after_merges("hello", 3) == chars.tokens("hello")


def test_save_load_and_json_round_trip(bpe, tmp_path):
    path = tmp_path / "tok" / "tokenizer.json"
    bpe.save(path)
    text = VARIED[3]
    assert TextTokenizer.load(path).encode(text) == bpe.encode(text)
    assert TextTokenizer.load(path.parent).encode(text) == bpe.encode(text)
    assert TextTokenizer.from_tokenizer_json(bpe.to_tokenizer_json()).encode(text) == bpe.encode(text)


def test_a_bert_wordpiece_file_gives_the_texts_tokens_between_cls_and_sep_unpadded_and_uncut(tmp_path):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##watch", "##able",
                                         "film", "didn", "'", "t"])}
    wordpiece = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    wordpiece.normalizer = normalizers.BertNormalizer(lowercase=True)
    wordpiece.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    wordpiece.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]",
                                                             special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    wordpiece.enable_padding(length=16)  # as all-MiniLM-L6-v2's file is set up (there: 128)
    wordpiece.enable_truncation(3)
    wordpiece.save(str(tmp_path / "tokenizer.json"))
    tokenizer = TextTokenizer.load(tmp_path)
    text = "Unwatchable FILM, didn't 🙂"
    spans = tokenizer.tokens(text)
    assert [s.text for s in spans] == ["[CLS]", "un", "##watch", "##able", "film", "[UNK]", "didn", "'", "t", "[UNK]",
                                       "[SEP]"]
    read = ["", "Un", "watch", "able", "FILM", ",", "didn", "'", "t", "🙂", ""]
    assert [text[s.start:s.end] for s in spans] == read
    assert (spans[0].start, spans[-1].start, spans[-1].byte_start) == (0, len(text), len(text.encode()))
    assert tokenizer.encode(text) == [s.id for s in spans]
    assert [s.text for s in tokenizer.tokens("")] == ["[CLS]", "[SEP]"]
    saved = json.loads(tokenizer.to_tokenizer_json())
    assert saved["padding"] is None and saved["truncation"] is None  # a file it saves reads the same anywhere


def test_missing_or_corrupt_tokenizer_file_names_the_path(tmp_path):
    with pytest.raises(TokenizerError, match="nowhere.json"):
        TextTokenizer.load(tmp_path / "nowhere.json")
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text("{not json")
    with pytest.raises(TokenizerError, match="corrupt.json"):
        TextTokenizer.load(corrupt)


def test_bpe_from_scratch_merges_the_most_frequent_pair_first():
    training = train_bpe_steps(SAILOR, 3)
    assert [(s.pair, s.count, s.token) for s in training.steps] == [
        (("s", "e"), 13, "se"), (("e", " "), 12, "e "), (("se", "e "), 7, "see ")]


def test_bpe_from_scratch_stops_when_no_pair_occurs_twice():
    training = train_bpe_steps(SAILOR, 1000)
    assert all(s.count >= 2 for s in training.steps)
    assert len(train_bpe_steps(SAILOR, 1000, min_count=1).steps) > len(training.steps)


def test_bpe_vocabulary_counts_distinct_tokens_and_grows_then_shrinks():
    training = train_bpe_steps(SAILOR, 1000, min_count=1)
    sizes = training.vocab_sizes
    for k in range(len(training.steps) + 1):
        assert sizes[k] == len(set(training.segmentation(k)))
    peak = sizes.index(max(sizes))
    assert sizes[0] < sizes[peak] and sizes[-1] < sizes[peak]
    assert sizes[-1] == len(set(re.findall(r"\S+\s*", SAILOR)))  # in the end every word is one token


def test_bpe_segmentation_reconstructs_the_text_and_never_crosses_words():
    training = train_bpe_steps(SAILOR, 1000, min_count=1)
    for k in range(len(training.steps) + 1):
        tokens = training.segmentation(k)
        assert "".join(tokens) == SAILOR
        assert all(" " not in token.rstrip(" ") for token in tokens)


@pytest.mark.parametrize("text", BAD_INPUTS, ids=["empty", "nul", "surrogates", "rtl-override", "hebrew", "100kb"])
def test_bad_input_is_handled_everywhere(bpe, chars, text):
    clean = sanitize(text)
    assert len(clean) == len(text)
    assert bpe.decode(bpe.encode(text)) == clean
    assert _reconstruct(clean, bpe.tokens(text)) == clean
    assert bpe.tokens_after_merges(text, len(bpe.merges)) == bpe.tokens(text)
    assert _reconstruct(clean, chars.tokens(text)) == clean
    training = train_bpe_steps(text, 5)
    assert "".join(training.segmentation(len(training.steps))) == text


def test_empty_text_gives_empty_results(bpe):
    assert bpe.encode("") == [] and bpe.tokens("") == [] and bpe.decode([]) == ""
    training = train_bpe_steps("", 10)
    assert training.steps == () and training.vocab_sizes == [0] and training.segmentation(0) == []


def test_lone_surrogate_becomes_replacement_character(bpe):
    spans = bpe.tokens("a\ud800b")
    assert bpe.decode([s.id for s in spans]) == "a\ufffdb"
    assert [(s.start, s.end) for s in spans if s.byte_start >= 1 and s.byte_end <= 4] == [(1, 2)] * 3


def test_train_tokenizer_command_trains_on_a_local_file(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat\n" * 50)
    out = tmp_path / "out" / "tokenizer.json"
    train_tokenizer.main(["--corpus", str(corpus), "--vocab-size", "300", "--out", str(out)])
    tokenizer = TextTokenizer.load(out)
    assert tokenizer.is_byte_level and tokenizer.special_tokens == (END_OF_TEXT,)
    assert len(tokenizer.encode("the cat sat")) < len("the cat sat")


@pytest.mark.parametrize("name, kind", [("shakespeare-bpe", "byte-level BPE"), ("sentiment-pretrained", "WordPiece"),
                                        ("shakespeare-char", "characters"), ("translate-reverse", "characters")])
def test_a_tokenizer_says_what_one_of_its_tokens_is(name, kind):
    assert TextTokenizer.load(SHAKESPEARE_BPE.parents[1] / name).kind == kind
