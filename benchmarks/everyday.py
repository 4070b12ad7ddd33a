"""Everyday sentences: does the classifier a person gets read short plain sentences right?

    python -m benchmarks.everyday --lang zh      (or --lang en; --model-dir DIR: a folder laid out like assets/)

The probe sets `everyday_zh.tsv` and `everyday_en.tsv` (category, text, label) are short sentences of daily life
(food, films, books, phones, hotels, weather, service), written for this benchmark before any model was trained
on everyday sentences, and never trained on (`train_everyday` drops any training text equal to one): praise,
complaints, 太…了 / "too" and "so", 还行 / "okay", negation, 不错 / "not bad". They are a gate beside validation,
not a set to tune on: a model is kept or not by a rule fixed before its training run (see the model cards).

Each sentence is read the way the Sentiment tab reads it with no classifier chosen (`lab.sentiment.classify`:
the text's language picks the classifier); every installed classifier that reads the language is scored too.
Last line: {"lang", "n", "default": the classifier the tab picks, "accuracy": its share right, "by_category",
"wrong": its misread sentences, "classifiers": {name: share right}}.
"""

from __future__ import annotations

import argparse
import csv
import json
from collections import defaultdict
from pathlib import Path

from lab import models, sentiment, store
from transformer_core.analysis.sentiment import LABELS, predict_proba, special_ids

PROBES = {lang: Path(__file__).resolve().parent / f"everyday_{lang}.tsv" for lang in ("en", "zh")}
BAR = 0.95  # the share the default classifier of each language must read right (issue 60)


def probes(lang: str) -> list[dict]:
    """Rows of a probe set: category, text, label ("positive" / "negative")."""
    with PROBES[lang].open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def share_right(name: str, rows: list[dict]) -> float:
    """Checkpoint `name`'s share of the rows labelled right (argmax of its two classes)."""
    model, tokenizer = models.load(name)
    pad, _ = special_ids(tokenizer)
    ids = [tokenizer.encode(r["text"])[: model.config.max_len] for r in rows]
    labels = predict_proba(model, ids, pad).argmax(-1).tolist()
    return sum(LABELS[y] == r["label"] for y, r in zip(labels, rows)) / len(rows)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lang", choices=sorted(PROBES), default="zh")
    p.add_argument("--model-dir", default=str(store.DEFAULT_MODEL_DIR),
                   help="a folder laid out like assets/ (a candidate checkpoint beside the shipped ones)")
    args = p.parse_args(argv)
    store.set_model_dir(args.model_dir)
    rows = probes(args.lang)
    runs = [sentiment.classify(r["text"]) for r in rows]
    defaults = sorted({run.name for run in runs})
    by_category, wrong = defaultdict(list), []
    for r, run in zip(rows, runs):
        right = run.verdict == r["label"]
        by_category[r["category"]].append(right)
        if not right:
            wrong.append(f'{r["text"]} ({r["label"]}: P {run.probs[r["label"]]:.2f})')
        print(f'{"ok " if right else "BAD"} {run.probs["positive"]:.2f} {r["label"]:8s} {r["text"]}', flush=True)
    accuracy = sum(map(sum, by_category.values())) / len(rows)
    readers = [name for name in sentiment.classifiers().values() if models.checkpoint(name).reads(args.lang)]
    print(json.dumps({"lang": args.lang, "n": len(rows), "default": ", ".join(defaults), "accuracy": round(accuracy, 4),
                      "bar": BAR, "by_category": {c: round(sum(v) / len(v), 3) for c, v in by_category.items()},
                      "wrong": wrong, "classifiers": {n: round(share_right(n, rows), 4) for n in readers}},
                     ensure_ascii=False))


if __name__ == "__main__":
    main()
