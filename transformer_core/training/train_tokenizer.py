"""Train a tokenizer on a corpus and save it as tokenizer.json.

Lesson: a tokenizer is trained, like a model, on text it will later read --
only on the *train* split, so test text cannot shape the vocabulary.

    python -m transformer_core.training.train_tokenizer --corpus shakespeare --vocab-size 4096 \\
        --out assets/shakespeare-bpe/tokenizer.json

--corpus is `shakespeare` (train works), `reviews` (movie-review train
snippets plus Shakespeare train), `tang` (Tang poems, train split),
`reviews-zh` (Chinese review train texts plus People's Daily),
`peoples-daily`, or a .txt file / folder of your own. `--min-count` sends
characters seen fewer times to [UNK] (character tokenizers):

    python -m transformer_core.training.train_tokenizer --corpus tang --kind char --min-count 5 \\
        --out assets/tang-poems-char/tokenizer.json
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from tqdm import tqdm

from transformer_core.training import data, data_zh, hub_data
from transformer_core.training.cli import exit_on
from transformer_core.tokenization import (
    CLASSIFIER_SPECIAL_TOKENS,
    LANGUAGE_MODEL_SPECIAL_TOKENS,
    train_byte_level_bpe,
    train_char_level,
)


def corpus_texts(corpus: str) -> list[str]:
    """The training documents of a named corpus or of a local path."""
    if corpus == "shakespeare":
        return list(data.shakespeare_works("train").values())
    if corpus == "reviews":
        return [r.text for r in data.movie_reviews("train")] + list(data.shakespeare_works("train").values())
    if corpus == "tang":
        return [p.text for p in data_zh.tang_poems("train")]
    if corpus == "reviews-zh":
        return [r.text for r in data_zh.chinese_reviews("train")] + data_zh.peoples_daily()
    if corpus == "peoples-daily":
        return data_zh.peoples_daily()
    return [hub_data.local_text(corpus)]


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m transformer_core.training.train_tokenizer",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True, help="shakespeare, reviews, tang, reviews-zh, peoples-daily, or a .txt file / folder")
    parser.add_argument("--vocab-size", type=int, default=4096, help="byte-level BPE vocabulary size")
    parser.add_argument("--kind", choices=("bpe", "char"), default="bpe", help="byte-level BPE or characters")
    parser.add_argument("--min-count", type=int, default=0,
                        help="characters seen fewer times become [UNK] (--kind char)")
    parser.add_argument("--special-tokens", nargs="*", default=None,
                        help="default: <|endoftext|>, plus [PAD] [CLS] [MASK] for --corpus reviews and reviews-zh")
    parser.add_argument("--out", required=True, help="where to write tokenizer.json")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = _parse_args(argv)
    special = args.special_tokens
    if special is None:
        special = CLASSIFIER_SPECIAL_TOKENS if args.corpus in ("reviews", "reviews-zh") else LANGUAGE_MODEL_SPECIAL_TOKENS
    print(f"Loading corpus {args.corpus!r} ...", flush=True)
    with exit_on(data.DataError):  # the message says how to fix it
        texts = corpus_texts(args.corpus)
    documents: Iterator[str] = tqdm(texts, desc="Reading corpus", unit="doc")
    if args.kind == "bpe":
        tokenizer = train_byte_level_bpe(documents, args.vocab_size, special, show_progress=True)
    else:
        tokenizer = train_char_level(documents, special, show_progress=True, min_count=args.min_count)
    tokenizer.save(args.out)
    print(f"Saved {args.kind} tokenizer with {tokenizer.vocab_size} tokens to {args.out}")


if __name__ == "__main__":
    main()
