"""Sentiment test accuracy: our transformer beside a lexicon rule and a bag-of-words classifier.

    pip install -r benchmarks/requirements.txt
    python benchmarks/sentiment.py [--checkpoint assets/sentiment]

All three read the same test split of the movie-review snippets (review id % 10 == 0):
* ours: the shipped `EncoderClassifier`, argmax of its two classes;
* VADER: the lexicon-and-rules scorer, positive when its compound score is >= 0;
* TF-IDF + LR: unigram+bigram TF-IDF features and logistic regression fitted on the train
  split, its regularisation C chosen on the validation split (never on test).
The line before the last gives 95% bootstrap intervals (resampling the test sentences): for our
accuracy, and for its difference from TF-IDF + LR on the same sentences (paired), so that a gap of
a point or two can be read against the noise of a 1,054-sentence test set.
Last line: {"accuracy": ..., "vader": ..., "tfidf_lr": ...}.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from transformer_core import load_model  # noqa: E402
from transformer_core.training import data  # noqa: E402
from transformer_core.analysis.sentiment import correct, special_ids  # noqa: E402
from transformer_core.tokenization import TextTokenizer  # noqa: E402

C_GRID = (0.3, 1, 3, 10, 30, 100)
RESAMPLES = 2000


# Each scorer returns one bool per review (right or wrong), so that intervals can resample them.


def ours(checkpoint: Path, reviews: list[data.Review]) -> np.ndarray:
    model, tokenizer = load_model(checkpoint), TextTokenizer.load(checkpoint)
    pad_id, _ = special_ids(tokenizer)
    ids = [tokenizer.encode(r.text)[: model.config.max_len] for r in reviews]
    return correct(model, ids, [r.label for r in reviews], pad_id).numpy()


def vader(reviews: list[data.Review]) -> np.ndarray:
    analyzer = SentimentIntensityAnalyzer()
    return np.array([(analyzer.polarity_scores(r.text)["compound"] >= 0) == bool(r.label) for r in reviews])


def tfidf_lr(train: list[data.Review], validation: list[data.Review], test: list[data.Review]) -> tuple[np.ndarray, float]:
    """(right or wrong per test review, the C picked on validation)."""
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)
    x_train = vectorizer.fit_transform([r.text for r in train])

    def fit(c):
        return LogisticRegression(C=c, max_iter=2000).fit(x_train, [r.label for r in train])

    def right(model, reviews):
        return model.predict(vectorizer.transform([r.text for r in reviews])) == np.array([r.label for r in reviews])

    best_c = max(C_GRID, key=lambda c: right(fit(c), validation).mean())
    return right(fit(best_c), test), best_c


def interval(values: np.ndarray, seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of the mean of per-review values."""
    rows = np.random.default_rng(seed).integers(0, len(values), size=(RESAMPLES, len(values)))
    return tuple(np.percentile(values[rows].mean(axis=1), [2.5, 97.5]))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint", default="assets/sentiment")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    train, validation, test = (data.movie_reviews(s) for s in data.SPLITS)
    t0 = time.perf_counter()
    right = {"accuracy": ours(Path(args.checkpoint), test)}
    seconds = time.perf_counter() - t0
    right["vader"] = vader(test)
    right["tfidf_lr"], c = tfidf_lr(train, validation, test)
    print(f"test sentences: {len(test)}; ours took {seconds:.1f}s; TF-IDF+LR used C={c} (picked on validation)")
    ours_low, ours_high = interval(right["accuracy"].astype(float))
    gap_low, gap_high = interval(right["accuracy"].astype(float) - right["tfidf_lr"])
    print(f"95% bootstrap intervals: ours {ours_low:.3f}-{ours_high:.3f}; "
          f"ours minus TF-IDF+LR {gap_low:+.3f} to {gap_high:+.3f} (paired, {RESAMPLES} resamples)")
    print(json.dumps({k: round(float(v.mean()), 4) for k, v in right.items()}))


if __name__ == "__main__":
    main()
