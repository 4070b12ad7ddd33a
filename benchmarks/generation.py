"""Greedy decoding speed: our KV cache vs full recomputation vs transformers' GPT-2.

    python -m benchmarks.generation [--new-tokens 256] [--threads 1] [--repeats 5] [--lm assets/shakespeare-lm]

One machine, batch 1, greedy, 256 new tokens after a 16-token prompt:
  (a) `transformer_core.generate` with the KV cache;
  (b) the same, recomputing the whole sequence every step (use_cache=False);
  (c) `transformers.GPT2LMHeadModel.generate` (cache on) with the identical config
      and the very same weights (copied into ours by `decoder_lm_from_gpt2`).
Both generators stop only at the length (no end-of-text token), so they do the same work.
The model has GPT-2-small proportions (d_head 64, d_ff = 4 d_model, n_layer = n_head,
GPT-2's 50,257-token vocabulary) scaled down to run on a CPU: d_model 256, 4 layers,
4 heads, 512 positions, randomly initialised.
On a shared machine other jobs slow whole stretches of time, so runs are paired and
interleaved: each repeat times (a) and (c) back to back (alternating which goes first),
and (b) beside (a) in the first --recompute-repeats repeats; the ratios are the medians
of the per-pair ratios, the tokens/s the medians of the runs. If the shipped Shakespeare
model is in assets/, its tokens/s with and without the cache are reported too.
`--versus CHECKPOINT` times that LM beside `--lm`, interleaved in pairs (both cached), and reports
each one's tokens/s and the median per-pair ratio: on a loaded machine the ratio is what carries over
(e.g. `--lm assets/tang-poems-char --versus assets/shakespeare-lm`: characters of the poetry LM per
second against tokens of the Shakespeare LM per second).
Last line: JSON {"tokens_per_s", "kv_speedup": a/b, "vs_transformers": a/c, ...}.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import torch

from transformer_core import generate, load_model
from transformer_core.weights.gpt2 import decoder_lm_from_gpt2

CONFIG = dict(n_embd=256, n_layer=4, n_head=4, n_positions=512, vocab_size=50257)
PROMPT_LEN = 16
SHIPPED = Path(__file__).resolve().parent.parent / "assets" / "shakespeare-lm"


def timed(run) -> tuple[float, list[int]]:
    """Wall seconds of one call of run(), and its tokens."""
    t0 = time.perf_counter()
    tokens = run()
    return time.perf_counter() - t0, tokens


def ours(model, prompt: list[int], new_tokens: int, use_cache: bool = True):
    return lambda: generate(model, prompt, new_tokens, use_cache=use_cache)


def theirs(hf, prompt: list[int], new_tokens: int):
    ids = torch.tensor([prompt])
    hf.generation_config.eos_token_id = None  # like ours: stop only at the length

    def run():
        with torch.no_grad():
            out = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                              do_sample=False, use_cache=True, pad_token_id=0)
        return out[0, len(prompt):].tolist()

    return run


def interleaved(cached, other, repeats: int) -> tuple[list[float], list[float], list[int], list[int]]:
    """Seconds of `repeats` (cached, other) pairs run back to back, alternating which goes first,
    and each one's tokens from the last pair."""
    cached_s, other_s = [], []
    for i in range(repeats):
        if i % 2:
            b, other_tokens = timed(other)
            a, cached_tokens = timed(cached)
        else:
            a, cached_tokens = timed(cached)
            b, other_tokens = timed(other)
        cached_s.append(a)
        other_s.append(b)
    return cached_s, other_s, cached_tokens, other_tokens


def ratio(slow: list[float], fast: list[float]) -> float:
    """Median over pairs of how many times faster `fast` ran."""
    return statistics.median(s / f for s, f in zip(slow, fast))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--new-tokens", type=int, default=256)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--recompute-repeats", type=int, default=3, help="pairs timing the slow no-cache run")
    p.add_argument("--lm", default=str(SHIPPED), help="shipped LM checkpoint folder to time as well, if present")
    p.add_argument("--versus", default=None, help="another LM checkpoint to time beside --lm, pair by pair")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    import transformers

    hf_config = transformers.GPT2Config(**CONFIG)
    hf = transformers.GPT2LMHeadModel(hf_config).eval()
    model = decoder_lm_from_gpt2(hf.state_dict(), hf_config.to_dict())
    prompt = torch.randint(0, CONFIG["vocab_size"], (PROMPT_LEN,)).tolist()
    n = args.new_tokens

    ours(model, prompt, 8)(), theirs(hf, prompt, 8)()  # warm-up: first-call allocations
    cached_s, their_s, cached_tokens, their_tokens = interleaved(ours(model, prompt, n), theirs(hf, prompt, n),
                                                                 args.repeats)
    kv_cached_s, recompute_s, _, recompute_tokens = interleaved(
        ours(model, prompt, n), ours(model, prompt, n, use_cache=False), args.recompute_repeats
    )
    result = {
        "tokens_per_s": round(n / statistics.median(cached_s), 1),
        "kv_speedup": round(ratio(recompute_s, kv_cached_s), 2),
        "vs_transformers": round(ratio(their_s, cached_s), 2),
        "vs_transformers_range": [round(min(t / o for t, o in zip(their_s, cached_s)), 2),
                                  round(max(t / o for t, o in zip(their_s, cached_s)), 2)],
        "recompute_tokens_per_s": round(n / statistics.median(recompute_s), 1),
        "transformers_tokens_per_s": round(n / statistics.median(their_s), 1),
        "same_tokens_as_transformers": cached_tokens == their_tokens,
        "same_tokens_with_and_without_cache": cached_tokens == recompute_tokens,
        "config": {**CONFIG, "d_ff": 4 * CONFIG["n_embd"], "params": sum(p.numel() for p in model.parameters())},
        "prompt_tokens": PROMPT_LEN,
        "new_tokens": n,
        "repeats": args.repeats,
        "threads": args.threads,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "cpu": platform.processor() or platform.machine(),
    }
    if (Path(args.lm) / "model.safetensors").is_file():
        lm = load_model(args.lm)
        lm_prompt = torch.randint(0, lm.config.vocab_size, (PROMPT_LEN,)).tolist()
        lm_cached_s, lm_recompute_s, _, _ = interleaved(ours(lm, lm_prompt, n), ours(lm, lm_prompt, n, use_cache=False),
                                                        args.recompute_repeats)
        result["shipped_lm"] = {
            "path": args.lm,
            "tokens_per_s_cache": round(n / statistics.median(lm_cached_s), 1),
            "tokens_per_s_no_cache": round(n / statistics.median(lm_recompute_s), 1),
            "context": lm.config.max_len,
            "params": sum(p.numel() for p in lm.parameters()),
        }
        if args.versus:
            other = load_model(args.versus)
            other_prompt = torch.randint(0, other.config.vocab_size, (PROMPT_LEN,)).tolist()
            lm_s, other_s, _, _ = interleaved(ours(lm, lm_prompt, n), ours(other, other_prompt, n), args.repeats)
            result["shipped_lm"]["versus"] = {
                "path": args.versus,
                "tokens_per_s_cache": round(n / statistics.median(other_s), 1),
                "lm_tokens_per_s_cache": round(n / statistics.median(lm_s), 1),
                "lm_speedup": round(ratio(other_s, lm_s), 2),
            }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
