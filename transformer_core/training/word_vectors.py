"""Word vectors from counting, without labels: PPMI + truncated SVD.

Lesson: a word is known by the company it keeps. Count how often two tokens
occur within `window` positions of each other in unlabelled text, turn the
counts into positive pointwise mutual information (how much more often than
chance, floored at 0), and keep the top `dim` directions of that matrix (a
truncated SVD). Tokens used in similar contexts get similar vectors: the
count-based cousin of word2vec (Levy & Goldberg, 2014).

The sentiment classifier starts its embedding table from these vectors, so a
word seen once or twice with a label lands near the words it resembles instead
of at a random point.
"""

from __future__ import annotations

import torch

CONTEXT_SMOOTHING = 0.75  # word2vec's trick: raise context counts to 3/4 so rare contexts don't dominate PMI


class WordVectorError(ValueError):
    """Word vectors that can't be made from these settings or this text."""


def cooccurrence(sequences: list[list[int]], vocab_size: int, window: int) -> torch.Tensor:
    """Sparse (V, V) counts of token pairs at most `window` apart, both orders, within each sequence."""
    rows, cols = [torch.empty(0, dtype=torch.long)], [torch.empty(0, dtype=torch.long)]
    for seq in sequences:
        s = torch.as_tensor(seq, dtype=torch.long)
        for k in range(1, min(window, len(s) - 1) + 1):
            rows += [s[:-k], s[k:]]
            cols += [s[k:], s[:-k]]
    index = torch.stack([torch.cat(rows), torch.cat(cols)])
    return torch.sparse_coo_tensor(index, torch.ones(index.shape[1]), (vocab_size, vocab_size),
                                   check_invariants=True).coalesce()


def ppmi(counts: torch.Tensor) -> torch.Tensor:
    """Positive PMI of sparse co-occurrence counts: max(0, log P(w, c) / (P(w) P_3/4(c)))."""
    i, j = counts.indices()
    n = counts.values()
    total = n.sum()
    p_word = torch.zeros(counts.shape[0]).index_add_(0, i, n) / total
    context = torch.zeros(counts.shape[1]).index_add_(0, j, n) ** CONTEXT_SMOOTHING
    p_context = context / context.sum()
    pmi = torch.log(n / total / (p_word[i] * p_context[j]))
    keep = pmi > 0
    return torch.sparse_coo_tensor(counts.indices()[:, keep], pmi[keep], counts.shape,
                                   check_invariants=True).coalesce()


def check_settings(vocab_size: int, dim: int, window: int, std: float) -> None:
    """Raise WordVectorError unless `ppmi_vectors` can take these settings (callers check before reading text)."""
    if window < 1 or std <= 0 or not 1 <= dim <= vocab_size:
        raise WordVectorError(f"need window >= 1, std > 0 and 1 <= dim <= vocab_size ({vocab_size}); "
                              f"got window={window}, std={std}, dim={dim}")


def ppmi_vectors(sequences: list[list[int]], vocab_size: int, dim: int, window: int = 4,
                 std: float = 0.05, seed: int = 0) -> torch.Tensor:
    """(V, dim) word vectors U sqrt(S) of the PPMI matrix, scaled to standard deviation `std`.

    Tokens that never occur get zero vectors. The randomised SVD is seeded, so the result is fixed.
    """
    check_settings(vocab_size, dim, window, std)
    matrix = ppmi(cooccurrence(sequences, vocab_size, window))
    if matrix.values().numel() == 0:
        raise WordVectorError("the text has no token pair seen more often than chance: nothing to count")
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        u, s, _ = torch.svd_lowrank(matrix, q=dim, niter=6)
    vectors = u * s.sqrt()
    return vectors * (std / vectors.std())
