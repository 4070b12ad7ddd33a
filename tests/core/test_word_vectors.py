"""PPMI + SVD word vectors: counts, PMI and the vectors the sentiment classifier can start from."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from transformer_core.training.word_vectors import WordVectorError, cooccurrence, ppmi, ppmi_vectors


def test_cooccurrence_counts_pairs_within_the_window_both_ways_and_not_across_sequences():
    counts = cooccurrence([[0, 1, 2], [2, 3]], vocab_size=4, window=1).to_dense()
    expected = torch.zeros(4, 4)
    for a, b in [(0, 1), (1, 2), (2, 3)]:
        expected[a, b] = expected[b, a] = 1
    torch.testing.assert_close(counts, expected)  # no (2, 2) pair: the sequences are apart
    assert cooccurrence([[0, 1, 2]], 4, window=2).to_dense()[0, 2] == 1


def test_ppmi_keeps_only_pairs_seen_more_often_than_chance():
    # 0 and 1 always together; 2 and 3 always together: across the groups PMI is -inf, so no entry
    pmi = ppmi(cooccurrence([[0, 1]] * 5 + [[2, 3]] * 5, 4, 1)).to_dense()
    assert pmi[0, 1] > 0 and pmi[2, 3] > 0
    assert pmi[0, 2] == 0 and (pmi >= 0).all()


def test_tokens_in_the_same_contexts_get_similar_vectors():
    # 4 and 5 both sit between 0 and 1; 6 sits between 2 and 3; token 7 never occurs
    corpus = [[0, 4, 1], [0, 5, 1], [2, 6, 3]] * 20
    vectors = ppmi_vectors(corpus, vocab_size=8, dim=4, window=1, std=0.05)
    cos = F.cosine_similarity
    assert cos(vectors[4], vectors[5], dim=0) > 0.9 > cos(vectors[4], vectors[6], dim=0)
    assert vectors[7].abs().sum() == 0
    assert abs(vectors.std().item() - 0.05) < 1e-6
    torch.testing.assert_close(vectors, ppmi_vectors(corpus, 8, 4, 1, 0.05))  # seeded: the same every time


@pytest.mark.parametrize("sequences, kwargs", [
    ([[0, 1, 2]], {"window": 0}),
    ([[0, 1, 2]], {"window": -3}),
    ([[0, 1, 2]], {"std": 0.0}),
    ([[0, 1, 2]], {"dim": 9}),  # more dimensions than tokens
    ([[0], [], [1]], {}),  # no pairs at all
])
def test_settings_or_text_that_give_no_vectors_raise_a_typed_error_not_nans(sequences, kwargs):
    with pytest.raises(WordVectorError):
        ppmi_vectors(sequences, **{"vocab_size": 8, "dim": 4, **kwargs})
