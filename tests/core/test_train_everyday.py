"""The everyday-sentence stage's data: rated sentences split once, and no probe or minimal-pair sentence in it."""

from __future__ import annotations

from transformer_core.training import data, train_everyday
from benchmarks.everyday import probes


def test_everyday_sentences_are_short_clear_labelled_by_the_rating_and_split_once(corpus):
    train, validation = (corpus(data.everyday_sentences, split) for split in ("train", "validation"))
    assert len(train) > 8 * len(validation) > 0
    assert not {r.text for r in train} & {r.text for r in validation}
    for r in train + validation:
        assert abs(r.rating) >= data.EVERYDAY_CLEAR and r.label == int(r.rating > 0)
        assert len(r.text.split()) <= data.EVERYDAY_WORDS and "&amp;" not in r.text
    assert {r.label for r in train} == {0, 1}


def test_no_probe_or_minimal_pair_sentence_is_trained_or_validated_on():
    hidden = train_everyday.held_out()
    assert {row["text"] for lang in ("en", "zh") for row in probes(lang)} <= hidden
    assert "这本书很好看。" in hidden  # a minimal pair's sentence
    probe = probes("zh")[0]["text"]
    rows = [data.Review(0, 1.0, probe, 1), data.Review(1, 1.0, "物流很快。", 1)]
    kept, dropped = train_everyday.without(rows, hidden)
    assert [r.text for r in kept] == ["物流很快。"] and dropped == 1
