"""Translate benchmarks: exact match of the shipped encoder-decoders, live-training time, length generalisation.

    python benchmarks/translate.py [--threads 1] [--skip-live]

Prints the length-generalisation curves and the live-training details first, then
on the last line one JSON object: exact-match accuracies (fractions) of the shipped
models on 1,000 held-out sources each (pig_latin_unseen: sentences holding words
never seen in training), pig_latin_real on real text (every distinct spoken line of
1-10 words in the test plays, apostrophes, hyphens and all: `tasks.play_lines`; the
training sentences are drawn from words of the train plays only), and
live_train_s_to_99, the training seconds a fresh "small" copy model needs to reach 99%
exact match with the app's live settings (null if it does not within the time budget).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from transformer_core import load_model  # noqa: E402
from transformer_core.decoding.seq2seq import Codec, exact_match  # noqa: E402
from transformer_core.tasks import TEST_SIZE, TOY_TASKS, accuracy_by_length, examples, get_task, pig_latin, play_lines  # noqa: E402
from transformer_core.tokenization import TextTokenizer  # noqa: E402
from transformer_core.training.translation import (  # noqa: E402
    LIVE_BATCH,
    build_model,
    fit,
    live_config,
)

ASSETS = Path(__file__).resolve().parent.parent / "assets"
CHECK_EVERY = 25  # steps between accuracy checks during the live run
TARGET = 0.99


def shipped(name: str):
    folder = ASSETS / name
    return load_model(folder), Codec(TextTokenizer.load(folder / "tokenizer.json"))


class _Reached(Exception):
    """Stops the live run once the target accuracy is reached."""


def live_seconds_to_target(seconds: float, steps: int = 1000) -> dict:
    """Train copy from scratch as the app does; time (excluding the checks) until 99% exact match."""
    task = get_task("copy")
    torch.manual_seed(0)
    model, codec = build_model(task, "small")
    probe, test = examples(task, "validation", 200), examples(task, "test", TEST_SIZE)
    # wall seconds are what a lecture waits; CPU seconds are what a quiet machine would wait
    # (one thread, CPU-bound), whatever the neighbours are doing
    start, cpu_start, checking, cpu_checking = time.perf_counter(), time.process_time(), 0.0, 0.0
    reached = {}

    def on_step(step: int, loss: float) -> None:
        nonlocal checking, cpu_checking
        if (step + 1) % CHECK_EVERY:
            return
        t0, c0 = time.perf_counter(), time.process_time()
        model.eval()
        if exact_match(model, codec, probe) >= TARGET and exact_match(model, codec, test) >= TARGET:
            reached.update(step=step + 1, seconds=round(t0 - start - checking, 1),
                           cpu_seconds=round(c0 - cpu_start - cpu_checking, 1))
            raise _Reached
        model.train()
        checking += time.perf_counter() - t0
        cpu_checking += time.process_time() - c0

    try:
        fit(model, codec, task, live_config(steps, seconds), LIVE_BATCH, on_step=on_step, progress=False)
    except _Reached:
        pass
    model.eval()
    return {**reached, "test_accuracy": exact_match(model, codec, test)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--live-seconds", type=float, default=60)
    p.add_argument("--skip-live", action="store_true", help="leave live_train_s_to_99 null")
    args = p.parse_args()
    torch.set_num_threads(args.threads)

    curves = {}
    for positions, name in (("learned", "translate-copy"), ("sinusoidal", "translate-copy-sinusoidal")):
        model, codec = shipped(name)
        curves[positions] = accuracy_by_length(model, codec, get_task("copy"), range(1, 21), n=200)
    print(json.dumps({"length_generalisation_copy": curves}))

    live = None if args.skip_live else live_seconds_to_target(args.live_seconds)
    print(json.dumps({"live_training": live, "threads": args.threads}))

    result = {}
    for task in TOY_TASKS:
        model, codec = shipped(f"translate-{task}")
        result[task] = exact_match(model, codec, examples(task, "test", TEST_SIZE))
    model, codec = shipped("translate-pig-latin")
    result["pig_latin"] = exact_match(model, codec, examples("pig_latin", "test", TEST_SIZE))
    result["pig_latin_unseen"] = exact_match(model, codec, examples("pig_latin", "unseen", TEST_SIZE))
    real = [(line, pig_latin(line)) for line in play_lines("test")]
    result["pig_latin_real"] = round(exact_match(model, codec, real), 4)
    result["live_train_s_to_99"] = None if live is None else live.get("seconds")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
