"""An interpolated Kneser-Ney character n-gram model: the baseline a character transformer must beat.

Lesson: before a transformer, the best cheap language model counted. An order-n model
predicts a character from the n-1 before it, discounting every count by D and handing
the saved mass to the order below; the lower orders count *in how many contexts* a
string was seen (continuation counts), not how often, so a character that only ever
follows one other one ("Francisco" -> "cisco") is not guessed everywhere else.
The lowest order mixes with the uniform distribution, so nothing has probability 0.

D is Ney's estimate n1 / (n1 + 2 n2) per order (n1, n2: how many strings were counted
once, twice). Texts are plain strings whose characters are the symbols, so a caller maps
rare characters to one placeholder first, exactly as the transformer's tokenizer does.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict

import numpy as np


class KneserNey:
    """Interpolated Kneser-Ney of order `order` over the characters of `text`, with `alphabet_size` symbols."""

    def __init__(self, text: str, order: int, alphabet_size: int):
        if order < 1:
            raise ValueError(f"order must be at least 1, got {order}")
        self.order, self.alphabet_size = order, alphabet_size
        # counts[k]: strings of length k -> raw count (k = order) or continuation count (k < order)
        raw = Counter(text[i : i + order] for i in range(len(text) - order + 1))
        self.counts = {order: raw}
        for k in range(order - 1, 0, -1):
            # how many distinct characters precede each string of length k
            self.counts[k] = Counter(gram[1:] for gram in self.counts[k + 1])
        self.totals, self.types, self.discounts = {}, {}, {}
        for k, counts in self.counts.items():
            totals, types = Counter(), Counter()
            for gram, n in counts.items():
                totals[gram[:-1]] += n
                types[gram[:-1]] += 1
            self.totals[k], self.types[k] = totals, types
            n1, n2 = sum(1 for n in counts.values() if n == 1), sum(1 for n in counts.values() if n == 2)
            self.discounts[k] = n1 / (n1 + 2 * n2) if n1 else 0.5
        self._followers = None

    def prob(self, history: str, char: str) -> float:
        """P(char | the last order-1 characters of history)."""
        p = 1.0 / self.alphabet_size
        for k in range(1, self.order + 1):
            context = history[len(history) - k + 1 :] if k > 1 else ""
            if k > 1 and len(context) < k - 1:
                break
            total = self.totals[k].get(context)
            if not total:  # an unseen context: longer ones are unseen too
                break
            d = self.discounts[k]
            p = max(self.counts[k].get(context + char, 0) - d, 0.0) / total + d * self.types[k][context] / total * p
        return p

    def bits(self, text: str, history: str = "") -> float:
        """Total -log2 P of every character of `text`, each given what precedes it (after `history`)."""
        full, start = history + text, len(history)
        return -sum(math.log2(self.prob(full[max(0, i - self.order + 1) : i], full[i]))
                    for i in range(start, len(full)))

    def distribution(self, history: str, alphabet: list[str]) -> np.ndarray:
        """P(c | history) for every c of `alphabet` (the symbols a sample may draw, the same list on every
        call), as one vector."""
        if self._followers is None:
            self._followers = {k: defaultdict(list) for k in self.counts}
            for k, counts in self.counts.items():
                for gram in counts:
                    self._followers[k][gram[:-1]].append(gram[-1])
            self._index, self._arrays = {c: i for i, c in enumerate(alphabet)}, {}
        probs = np.full(len(alphabet), 1.0 / self.alphabet_size)
        for k in range(1, self.order + 1):
            context = history[len(history) - k + 1 :] if k > 1 else ""
            if (k > 1 and len(context) < k - 1) or not self.totals[k].get(context):
                break
            total, d = self.totals[k][context], self.discounts[k]
            if (k, context) not in self._arrays:  # the followers' places and counts, once per context
                chars = [c for c in self._followers[k][context] if c in self._index]
                self._arrays[k, context] = (np.array([self._index[c] for c in chars], dtype=np.int64),
                                            np.array([self.counts[k][context + c] for c in chars], dtype=float))
            places, counts = self._arrays[k, context]
            probs *= d * self.types[k][context] / total
            probs[places] += np.maximum(counts - d, 0.0) / total
        return probs

    def sample(self, history: str, n: int, temperature: float, rng: random.Random, alphabet: list[str],
               stop: str | None = None) -> str:
        """Up to n characters drawn one at a time from P(c | history)^(1/temperature), renormalised;
        stops after `stop` if it is drawn."""
        out = ""
        for _ in range(n):
            weights = self.distribution(history + out, alphabet) ** (1.0 / temperature)
            out += rng.choices(alphabet, weights.tolist())[0]
            if stop is not None and out.endswith(stop):
                break
        return out
