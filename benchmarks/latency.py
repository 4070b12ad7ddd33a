"""Wall time of the Attention and Masking tabs' handlers, the way a click runs them: `python -m benchmarks.latency`.

Only those two tabs are timed (and the attention grid figure alone). Each handler is
timed end to end, in wall time and in CPU time of the calling thread (what a request costs
the process when many share it: the wall time of a busy machine includes waiting): validation, forward pass with trace, every figure built and encoded
as the JSON Gradio sends (the cached handlers return figures encoded); a figure returned
as an object (the grid case) has its encoding timed separately. The text is Shakespeare's
validation play cut to an exact token count. Prints median and p95 per case; the last
line is one JSON object. Another tab: add a case to `cases` in `main`. The app's caches
(Gradio's and lab's) are emptied before every timed call, so these are the costs of a
view nobody asked for before.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from transformer_core import DecoderLM, DecoderLMConfig, save_checkpoint
from transformer_core.training import data
from transformer_core.weights.hub import read_config
from transformer_core.tokenization import TextTokenizer
from lab import store
from lab.cache import clear_all
from ui import attention, masking
from views.attention import layer_head_grid

LM = "shakespeare-lm"


def text_of(tokenizer, n: int) -> str:
    """A validation-text prefix that is exactly n tokens long."""
    source = data.shakespeare("validation")[:20 * n]
    spans = tokenizer.tokens(source)
    return source[: spans[n - 1].end]


def forget() -> None:
    clear_all()  # lab's runs and the handlers' outputs


def measure(fn, repeats: int) -> dict:
    fn()  # warm-up: model load, first-call allocations
    times, cpu, figures = [], [], []
    for _ in range(repeats):
        forget()  # every repeat computes: a cached answer is not what a new text costs
        t0, c0 = time.perf_counter(), time.thread_time()
        out = fn()
        times.append(1000 * (time.perf_counter() - t0))
        cpu.append(1000 * (time.thread_time() - c0))
        t0 = time.perf_counter()
        for fig in out if isinstance(out, tuple) else (out,):
            if hasattr(fig, "to_json") and not hasattr(fig, "plot"):  # a figure object, not encoded yet
                fig.to_json()
        figures.append(1000 * (time.perf_counter() - t0))
    return {"median_ms": statistics.median(times), "p95_ms": float(np.percentile(times, 95)),
            "cpu_median_ms": statistics.median(cpu), "json_median_ms": statistics.median(figures)}


def stand_in(folder: Path) -> None:
    """A random DecoderLM with the shipped LM's shape, for timing before the checkpoint exists."""
    tokenizer = TextTokenizer.load(store.DEFAULT_MODEL_DIR / "shakespeare-bpe" / "tokenizer.json")
    config = DecoderLMConfig(vocab_size=tokenizer.vocab_size, d_model=192, n_layer=6, n_head=6, d_ff=768, max_len=256)
    save_checkpoint(DecoderLM(config).eval(), folder / LM, tokenizer, "random stand-in for timing")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--stand-in", action="store_true",
                   help=f"time a random model shaped like {LM} (when the checkpoint is not there yet)")
    p.add_argument("--threads", type=int, default=store.SERVING_THREADS,
                   help="torch CPU threads per call (default: as app.py serves)")
    args = p.parse_args(argv)
    if args.threads < 1:
        p.error(f"--threads {args.threads}: must be at least 1")
    store.set_threads(args.threads)

    tmp = tempfile.TemporaryDirectory()
    if args.stand_in:
        stand_in(Path(tmp.name))
        store.set_model_dir(tmp.name)
    config = read_config(store.model_dir() / LM)
    tokenizer = store.tokenizer(LM)
    label = next(lab for lab, name in attention.checkpoints().items() if name == LM)
    grid_attn = torch.softmax(torch.randn(6, 8, 128, 128), dim=-1)
    labels = [f"t{i}" for i in range(128)]
    # case name -> (its p95 key in the JSON line, the call timed)
    texts = {n: text_of(tokenizer, n) for n in (12, 32, 128)}
    cases = {
        f"attention_{n}": (f"attention_p95_ms_{n}",
                           lambda n=n: attention.attention(label, texts[n], "decoder", 2, 1, n // 2))
        for n in (12, 32, 128)
    }
    cases["masking"] = ("masking_p95_ms", lambda: masking.masking(
        texts[32], "To be, or not", "sliding_window", 3, 2, "0", True, 2, 1, 10))
    cases["grid_6x8_128"] = ("grid_6x8_128_p95_ms", lambda: layer_head_grid(grid_attn, labels, labels))

    summary = {}
    for name, (key, fn) in cases.items():
        r = measure(fn, args.repeats)
        summary[key] = round(r["p95_ms"], 1)
        summary[f"{name}_median_ms"] = round(r["median_ms"], 1)
        summary[f"{name}_cpu_median_ms"] = round(r["cpu_median_ms"], 1)
        summary[f"{name}_json_median_ms"] = round(r["json_median_ms"], 1)
        print(f"{name:16s} median {r['median_ms']:7.1f} ms   p95 {r['p95_ms']:7.1f} ms   "
              f"CPU median {r['cpu_median_ms']:6.1f} ms   (+ figure JSON {r['json_median_ms']:.1f} ms)", flush=True)
    summary.update(model=LM + (" (random stand-in)" if args.stand_in else ""),
                   shape=f"{config['n_layer']} layers x {config['n_head']} heads, d_model {config['d_model']}",
                   torch_threads=torch.get_num_threads(), repeats=args.repeats)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
