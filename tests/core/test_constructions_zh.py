"""Tests for transformer_core.training.constructions_zh (the labelled grammar added to the Chinese
classifier's train split) and its `--constructions` flag."""

import csv
from pathlib import Path

import pytest

from transformer_core.training import constructions_zh as grammar
from transformer_core.training.constructions_zh import NEGATIVE, POSITIVE
from transformer_core.training.train_sentiment import add_constructions, parse_args

BENCHMARKS = Path(__file__).resolve().parent.parent.parent / "benchmarks"
PAIR_FILES = ("minimal_pairs_zh.tsv", "minimal_pairs_zh_fresh.tsv")


def pair_sentences() -> set[str]:
    rows = [r for name in PAIR_FILES for r in csv.DictReader((BENCHMARKS / name).open(encoding="utf-8"), delimiter="\t")]
    return {r[key] for r in rows for key in ("text_a", "text_b")}


def test_sentences_are_distinct_seeded_balanced_and_by_category_share():
    rows = grammar.sentences(2000, seed=3)
    assert rows == grammar.sentences(2000, seed=3) != grammar.sentences(2000, seed=4)
    assert len(rows) == len({text for text, _ in rows}) == 2000
    positives = sum(label == POSITIVE for _, label in rows)
    assert 0.4 < positives / len(rows) < 0.6
    assert sum("，" in text and text.endswith("。") and any(but in text for _, but in grammar.CONCEDE)
               for text, _ in rows) >= 0.2 * len(rows)  # the contrast share, at least
    assert sum(text.endswith("？") for text, _ in rows) == round(grammar.SHARES["rhetorical"] * 2000)


def test_no_minimal_pair_is_a_training_sentence_and_no_pair_noun_is_used():
    pairs = pair_sentences()
    assert len(pairs) >= 2 * 88
    assert not pairs & {text for text, _ in grammar.sentences(20_000)}
    assert not [n for n in grammar.NOUNS if any(n in sentence for sentence in pairs)]


@pytest.mark.parametrize("text, label", [
    ("键盘很好用。", POSITIVE), ("键盘不好用。", NEGATIVE), ("键盘一点也不贵。", POSITIVE), ("键盘有划痕。", NEGATIVE),
    ("键盘没有划痕。", POSITIVE), ("键盘用了三天就坏了。", NEGATIVE), ("键盘用了三年都没坏。", POSITIVE),
    ("键盘有点慢。", NEGATIVE), ("难道键盘不好用吗？", POSITIVE), ("这样的键盘也叫好用？", NEGATIVE),
    ("哪里还有比这更差的键盘？", NEGATIVE), ("键盘真好用，用了三天就坏了。", NEGATIVE), ("键盘真好用。", POSITIVE),
])
def test_each_construction_carries_the_label_its_grammar_gives(text, label):
    rows = dict(grammar._statements(grammar._clauses()) + grammar._rhetorical() + grammar._sarcasm())
    assert rows[text] == label


def test_contrast_takes_the_second_clauses_label():
    clauses = [("键盘很好用", POSITIVE), ("键盘很贵", NEGATIVE)]
    for text, label in grammar._contrasts(clauses, __import__("random").Random(0), 50):
        second = text.rstrip("。").split("，")[1]
        assert label == (POSITIVE if second.endswith("好用") else NEGATIVE), text


def test_the_flag_adds_labelled_sentences_to_the_train_split_only_for_chinese():
    args = parse_args(["--out", "x", "--tokenizer", "t", "--corpus", "reviews-zh", "--constructions", "30"])
    train = ([[1]], [0], [-1.0])
    add_constructions(train, args, lambda text: [ord(ch) for ch in text], eot=0)
    ids, labels, ratings = train
    assert len(ids) == len(labels) == len(ratings) == 31
    assert ratings[1:] == [1.0 if label else -1.0 for label in labels[1:]]
    assert ids[1:] == [[ord(ch) for ch in text] for text, _ in grammar.sentences(30, args.seed)]
    with pytest.raises(SystemExit):
        parse_args(["--out", "x", "--tokenizer", "t", "--corpus", "reviews", "--constructions", "30"])
