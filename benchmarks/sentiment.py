"""Sentiment test accuracy: our transformer beside a lexicon rule and a bag-of-words classifier.

    pip install -r benchmarks/requirements.txt
    python benchmarks/sentiment.py [--checkpoint assets/sentiment]

All three read the same test split of the movie-review snippets (review id % 10 == 0):
* ours: the shipped `EncoderClassifier`, argmax of its two classes;
* VADER: the lexicon-and-rules scorer, positive when its compound score is >= 0;
* TF-IDF + LR: unigram+bigram TF-IDF features and logistic regression fitted on the train
  split, its regularisation C chosen on the validation split (never on test).
Last line: {"accuracy": ..., "vader": ..., "tfidf_lr": ...}.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from transformer_core import data, load_model  # noqa: E402
from transformer_core.sentiment import accuracy, special_ids  # noqa: E402
from transformer_core.tokenization import TextTokenizer  # noqa: E402

C_GRID = (0.3, 1, 3, 10, 30, 100)


def ours(checkpoint: Path, reviews: list[data.Review]) -> float:
    model, tokenizer = load_model(checkpoint), TextTokenizer.load(checkpoint)
    pad_id, _ = special_ids(tokenizer)
    ids = [tokenizer.encode(r.text)[: model.config.max_len] for r in reviews]
    return accuracy(model, ids, [r.label for r in reviews], pad_id)


def vader(reviews: list[data.Review]) -> float:
    analyzer = SentimentIntensityAnalyzer()
    return sum((analyzer.polarity_scores(r.text)["compound"] >= 0) == bool(r.label) for r in reviews) / len(reviews)


def tfidf_lr(train: list[data.Review], validation: list[data.Review], test: list[data.Review]) -> tuple[float, float]:
    """(test accuracy, the C picked on validation)."""
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)
    x_train = vectorizer.fit_transform([r.text for r in train])

    def fit(c):
        return LogisticRegression(C=c, max_iter=2000).fit(x_train, [r.label for r in train])

    def score(model, reviews):
        return model.score(vectorizer.transform([r.text for r in reviews]), [r.label for r in reviews])

    best_c = max(C_GRID, key=lambda c: score(fit(c), validation))
    return score(fit(best_c), test), best_c


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint", default="assets/sentiment")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    train, validation, test = (data.movie_reviews(s) for s in data.SPLITS)
    t0 = time.perf_counter()
    result = {"accuracy": ours(Path(args.checkpoint), test)}
    seconds = time.perf_counter() - t0
    result["vader"] = vader(test)
    result["tfidf_lr"], c = tfidf_lr(train, validation, test)
    print(f"test sentences: {len(test)}; ours took {seconds:.1f}s; TF-IDF+LR used C={c} (picked on validation)")
    print(json.dumps({k: round(v, 4) for k, v in result.items()}))


if __name__ == "__main__":
    main()
