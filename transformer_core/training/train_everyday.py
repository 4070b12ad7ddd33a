"""Everyday sentences: a second fine-tuning stage for the multilingual-e5 sentiment classifiers.

    python -m transformer_core.training.train_everyday --out-dir runs/everyday

Lesson: a classifier learns what its data shows. The first stage (train_multilingual) trained every block on long
book, product and movie reviews, where 太…了 is mostly a complaint; it learned the construction over the word and
read "这部电影太棒了！" as negative. Short sentences of daily life were missing from its data. This stage continues
from the shipped checkpoints (`--start`) on a sample of the reviews again *plus* everyday sentences, and trains only the top
`--layers` blocks and the head: the embeddings and the blocks below keep their weights, so what the encoder knew of
a word (棒 is praise) is not trained away, and their outputs are computed once and cached.

Everyday sentences, never the probe sets of `benchmarks/everyday_*.tsv` (a text equal to a probe or a minimal-pair
sentence is dropped from training and validation, and the count printed):
* English: tweets and Amazon review snippets that people rated (`data.everyday_sentences`, vaderSentiment's data);
* Chinese: sentences of the construction grammar (`constructions_zh`: plain and negated praise and complaints,
  太…了, 虽然…但是, rhetorical questions, sarcasm), over goods and parts that no probe or pair names.
`sentiment-crosslingual` gets the English ones only: it still never sees a Chinese label.
It trains where the models run (a CUDA GPU when there is one; TRANSFORMER_CORE_DEVICE picks another).
The epoch kept is the one with the best validation accuracy (the reviews' validation splits and a tenth of the
everyday sentences); whether the checkpoint ships is a rule stated on its card before the run.

    python -m transformer_core.training.train_everyday --mix runs/everyday --out-dir runs/mixed

Then, where the second stage read everyday sentences better but the reviews worse, the two stages' weights can be
mixed (`--mix`: weight-space interpolation, WiSE-FT's idea): (1 - a) * first + a * second for every weight, a in
MIXES. The a kept is the largest whose reviews' validation accuracy, in each language, is no lower than the first
stage's: as much of the everyday reading as costs the reviews nothing, decided on validation only.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import shutil
import time
from pathlib import Path

import torch

from ..device import DeviceError, default_device, describe
from ..tokenization import TextTokenizer
from ..weights.hub import load_model
from ..weights.int8 import save_int8
from . import constructions_zh, data
from .cli import exit_on
from .train_multilingual import LANGUAGES, States, accuracy, checkpoint_scores, fine_tune, frozen_states, pair_texts, parts

_BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
PROBE_FILES = ("everyday_en.tsv", "everyday_zh.tsv")
GRAMMAR_SEED = 0
RECIPES = {"sentiment-multilingual": ("zh_train", "en_train", "en_everyday_train", "zh_everyday_train"),
           "sentiment-crosslingual": ("en_train", "en_everyday_train")}


def held_out() -> set[str]:
    """Texts no training or validation part may hold: the everyday probes and every minimal-pair sentence."""
    import csv

    texts = set()
    for name in PROBE_FILES:
        with (_BENCHMARKS / name).open(encoding="utf-8", newline="") as f:
            texts.update(row["text"].strip() for row in csv.DictReader(f, delimiter="\t"))
    return texts | {text.strip() for rows in pair_texts().values() for text, _ in rows}


def everyday_parts(grammar: int) -> dict[str, list[data.Review]]:
    """The everyday sentences, split: English by a hash of the text (data.py), Chinese: `grammar` sentences of
    the construction grammar, a tenth of them for validation."""
    drawn = constructions_zh.sentences(grammar, GRAMMAR_SEED)
    chinese = [data.Review(i, 1.0 if label else -1.0, text, label) for i, (text, label) in enumerate(drawn)]
    cut = len(chinese) // 10
    return {"en_everyday_train": data.everyday_sentences("train"), "en_everyday_val": data.everyday_sentences("validation"),
            "zh_everyday_train": chinese[cut:], "zh_everyday_val": chinese[:cut]}


def without(reviews: list[data.Review], texts: set[str]) -> tuple[list[data.Review], int]:
    kept = [r for r in reviews if r.text.strip() not in texts]
    return kept, len(reviews) - len(kept)


def identity(folder: Path) -> str:
    """The start checkpoint's weights, hashed: the frozen blocks' cached outputs are of these weights."""
    return hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()[:12]


MIXES = (0.0, 0.2, 0.4, 0.5, 0.6, 0.8, 1.0)


def mixed(first: torch.nn.Module, second: torch.nn.Module, a: float) -> torch.nn.Module:
    """A copy of `first` whose every weight is (1 - a) * first's + a * second's (the same network, two trainings)."""
    model = copy.deepcopy(first)
    theirs = second.state_dict()
    model.load_state_dict({k: (1 - a) * w + a * theirs[k] for k, w in first.state_dict().items()})
    return model.eval()


def mix(args, log) -> dict:
    """Each mix's validation accuracy per part; the kept mix written to `args.out_dir` with its card."""
    hidden = held_out()
    reviews = {**parts(args.per_language, 0, 0), **everyday_parts(args.grammar)}
    figures = {}
    for name in args.only:
        start, trained = Path(args.start) / name, Path(args.mix) / name
        first, second = load_model(start, args.device).eval(), load_model(trained, args.device).eval()
        tokenizer = TextTokenizer.load(start)
        below = first.config.n_layer - args.layers
        validation = [f"{part[:-6]}_val" for part in RECIPES[name]]
        states = {part: frozen_states(first, tokenizer, f"{name}-{identity(start)}-{part}",
                                      without(reviews[part], hidden)[0], args.max_tokens, below) for part in validation}
        scores = {a: {part: accuracy(mixed(first, second, a), below, states[part]) for part in validation} for a in MIXES}
        for a, by_part in scores.items():
            log(f"{name} mix {a}: " + ", ".join(f"{part} {v:.4f}" for part, v in by_part.items()))
        kept = max(a for a in MIXES if all(scores[a][part] >= scores[0.0][part] for part in ("zh_val", "en_val")
                                          if part in scores[a]))
        model = mixed(first, second, kept)
        out = Path(args.out_dir) / name
        save_int8(model, out, extra_config={"languages": json.loads((start / "config.json").read_text())["languages"]})
        shutil.copy(start / "tokenizer.json", out / "tokenizer.json")
        card_text = (trained / "README.md").read_text(encoding="utf-8")
        table = "\n".join(f"| {a} | " + " | ".join(f"{v:.4f}" for v in by_part.values()) + (" | **kept** |" if a == kept else " | |")
                          for a, by_part in scores.items())
        section = (f"\n## Mixed with the first stage (`--mix`)\nEvery weight is (1 - a) * first stage + a * second stage; "
                   f"the a kept is the largest whose reviews' validation accuracy in each language is no lower than the "
                   f"first stage's (a = 0), decided on validation only: **a = {kept}**.\n\n"
                   f"| a | " + " | ".join(validation) + " | |\n|" + "---|" * (len(validation) + 2) + f"\n{table}\n")
        marker = "\n## Second stage: everyday sentences"
        (out / "README.md").write_text(card_text.replace(marker, section + marker, 1), encoding="utf-8")
        figures[name] = {"kept": kept, "scores": scores}
        log(json.dumps({name: figures[name]}))
    return figures


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--start", default="assets", help="the folder holding the first-stage checkpoints")
    p.add_argument("--out-dir", default="runs/everyday", help="where the checkpoints go (copied to assets/ if they ship)")
    p.add_argument("--layers", type=int, default=4, help="the top blocks trained (the head always)")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--lr", type=float, default=3e-5)
    p.add_argument("--per-language", type=int, default=3000,
                   help="training reviews per language seen again beside the everyday sentences (0: all)")
    p.add_argument("--grammar", type=int, default=4000, help="Chinese grammar sentences (a tenth for validation)")
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--only", nargs="*", default=list(RECIPES), choices=list(RECIPES))
    p.add_argument("--mix", default=None, help="a folder of second-stage checkpoints to mix with --start's (see above)")
    args = p.parse_args(argv)
    with exit_on(DeviceError):  # TRANSFORMER_CORE_DEVICE, as every training command reads it
        args.device = default_device()
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    t0 = time.time()

    def log(line):
        print(f"[{time.time() - t0:6.0f} s] {line}", flush=True)

    if args.mix:
        print(json.dumps(mix(args, log)))
        return

    hidden = held_out()
    everyday = everyday_parts(args.grammar)
    reviews = {**parts(args.per_language, 0, 0), **everyday}
    for part in list(reviews):
        reviews[part], dropped = without(reviews[part], hidden)
        if dropped:
            log(f"{part}: {dropped} texts dropped (a probe or minimal-pair sentence)")
    device = args.device
    hardware = f"{describe(device)}, torch {torch.__version__}"
    summary = {}
    for name in args.only:
        start = Path(args.start) / name
        model, tokenizer = load_model(start, device).eval(), TextTokenizer.load(start)
        below = model.config.n_layer - args.layers
        wanted = {*RECIPES[name], *(f"{part[:-6]}_val" for part in RECIPES[name])}
        states = {part: frozen_states(model, tokenizer, f"{name}-{identity(start)}-{part}", reviews[part],
                                      args.max_tokens, below) for part in sorted(wanted)}
        log(f"{name}: states after block {below} of {sum(map(len, states.values()))} texts")
        before = {part: accuracy(model, below, states[part]) for part in sorted(wanted) if not part.endswith("_train")}
        train = sum((states[part] for part in RECIPES[name][1:]), states[RECIPES[name][0]])
        val_parts = [f"{part[:-6]}_val" for part in RECIPES[name]]
        val = sum((states[part] for part in val_parts[1:]), states[val_parts[0]])
        validation_before = accuracy(model, below, val)
        t = time.time()
        scores = fine_tune(model, below, train, val, args.epochs, args.lr, lambda line: log(f"{name} {line}"))
        f = {"validation_before": validation_before, "validation_by_epoch": scores, "train_texts": len(train), "train_minutes": (time.time() - t) / 60,
             "before": before, "after": {part: accuracy(model, below, states[part]) for part in before}}
        out = Path(args.out_dir) / name
        config = json.loads((start / "config.json").read_text(encoding="utf-8"))
        folder = save_int8(model, out, extra_config={"languages": config.get("languages", LANGUAGES)})
        if out.resolve() != start.resolve():
            shutil.copy(start / "tokenizer.json", out / "tokenizer.json")
        stored = load_model(folder)
        for pair_file, rows in pair_texts().items():
            f[pair_file] = checkpoint_scores(stored, tokenizer, rows, args.max_tokens)[0]
        f["megabytes"] = round((folder / "model.safetensors").stat().st_size / 1e6, 1)
        f["start"] = identity(start)
        f["everyday_texts"] = {part: len(reviews[part]) for part in RECIPES[name] if "everyday" in part}
        (out / "README.md").write_text(card(name, (start / "README.md").read_text(encoding="utf-8"), args, f, hardware),
                                       encoding="utf-8")
        summary[name] = f
        log(json.dumps({name: f}))
    print(json.dumps({"seconds": round(time.time() - t0), "layers": args.layers, "epochs": args.epochs, "lr": args.lr,
                      "grammar": args.grammar, "hardware": hardware, **summary}))


def card(name: str, first_stage: str, args, f: dict, hardware: str) -> str:
    """The checkpoint's card: this stage's section, then the first stage's card as it was (its title dropped)."""
    command = (f"python -m transformer_core.training.train_everyday --out-dir {args.out_dir} --layers {args.layers} "
               f"--epochs {args.epochs} --lr {args.lr} --per-language {args.per_language} --grammar {args.grammar} "
               f"--max-tokens {args.max_tokens} --threads {args.threads} --only {name}")
    english = f["everyday_texts"].get("en_everyday_train", 0)
    chinese = f["everyday_texts"].get("zh_everyday_train", 0)
    languages = "Chinese and English" if chinese else "English"
    reviews = (f"{args.per_language:,} of each training split (a seeded sample)" if args.per_language
               else "every review of each training split")
    below = 12 - args.layers
    body = first_stage.split("\n", 1)[1] if first_stage.startswith("# ") else first_stage
    return f"""# {name}

multilingual-e5-small fine-tuned for sentiment in two stages: the first on {languages} reviews (the card's older
part, below), the second on those reviews again and everyday sentences, so that short sentences of daily life
("这部电影太棒了！", "Not bad at all!") read as people mean them.

## Second stage: everyday sentences
- Start: the first-stage checkpoint (weights sha256 {f['start']}...). Trained: the top {args.layers} of 12 blocks and the
  head; the embeddings and blocks 0-{below - 1} keep their weights, so their outputs are computed once and cached.
- Train ({f['train_texts']:,} texts): {reviews}, seen again so that the reviews are not forgotten,
  {english:,} everyday English texts (tweets and Amazon review snippets rated by people, |mean rating| >= 1, at most 30
  words: `data.everyday_sentences`, vaderSentiment 3.3.2's data){f", {chinese:,} Chinese sentences of the construction grammar (`constructions_zh`, seed 0)" if chinese else "; no Chinese label, as in the first stage"}.
  No text equal to an everyday probe (`benchmarks/everyday_*.tsv`) or a minimal-pair sentence.
- Validation: the reviews' validation splits and a tenth of the everyday texts ({'the' if chinese else 'English'} everyday ones):
  {f['validation_before']:.3f} before this stage; by epoch {', '.join(f'{v:.3f}' for v in f['validation_by_epoch'])}
  (the best epoch is kept).
- AdamW, learning rate {args.lr} (linear warm-up over a tenth of the steps, then linear decay), weight decay 0.01, batches
  of 32 texts of similar length, {args.epochs} epochs, texts cut at {args.max_tokens} tokens. {f['train_minutes']:.1f} minutes of
  training on {hardware}.
- Command: `{command}`.
- Minimal pairs (this checkpoint, int8): English {f['minimal_pairs.tsv']:.3f}, Chinese {f['minimal_pairs_zh.tsv']:.3f},
  Chinese fresh {f['minimal_pairs_zh_fresh.tsv']:.3f}. Size: {f['megabytes']} MB.
{body}"""


if __name__ == "__main__":
    main()
