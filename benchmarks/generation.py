"""Greedy decoding speed: our KV cache vs full recomputation vs transformers' GPT-2.

    python -m benchmarks.generation [--new-tokens 256] [--threads 1] [--repeats 3] [--lm assets/shakespeare-lm]

One run, one machine, batch 1, greedy, 256 new tokens after a 16-token prompt:
  (a) `transformer_core.generate` with the KV cache;
  (b) the same, recomputing the whole sequence every step (use_cache=False);
  (c) `transformers.GPT2LMHeadModel.generate` (cache on) with the identical config
      and the very same weights (copied into ours by `decoder_lm_from_gpt2`).
The model has GPT-2-small proportions (d_head 64, d_ff = 4 d_model, n_layer = n_head,
GPT-2's 50,257-token vocabulary) scaled down to run on a CPU: d_model 256, 4 layers,
4 heads, 512 positions, randomly initialised. Each timing is the best of --repeats runs
(a shared machine only ever makes a run slower). If the shipped Shakespeare model is in
assets/, its tokens/s with and without the cache are reported too.
Last line: JSON {"tokens_per_s", "kv_speedup": a/b, "vs_transformers": a/c, ...}.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from transformer_core import decoder_lm_from_gpt2, generate, load_model

CONFIG = dict(n_embd=256, n_layer=4, n_head=4, n_positions=512, vocab_size=50257)
PROMPT_LEN = 16
SHIPPED = Path(__file__).resolve().parent.parent / "assets" / "shakespeare-lm"


def best_seconds(run, repeats: int) -> tuple[float, object]:
    """Fastest wall time of `repeats` calls of run(), and run()'s result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - t0)
    return best, result


def ours_tokens_per_s(model, prompt: list[int], new_tokens: int, use_cache: bool, repeats: int):
    seconds, tokens = best_seconds(lambda: generate(model, prompt, new_tokens, use_cache=use_cache), repeats)
    return new_tokens / seconds, tokens


def transformers_tokens_per_s(hf, prompt: list[int], new_tokens: int, repeats: int):
    ids = torch.tensor([prompt])

    def run():
        with torch.no_grad():
            out = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                              min_new_tokens=new_tokens, do_sample=False, use_cache=True, pad_token_id=0)
        return out[0, len(prompt):].tolist()

    seconds, tokens = best_seconds(run, repeats)
    return new_tokens / seconds, tokens


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--new-tokens", type=int, default=256)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--lm", default=str(SHIPPED), help="shipped LM checkpoint folder to time as well, if present")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    import transformers

    hf_config = transformers.GPT2Config(**CONFIG)
    hf = transformers.GPT2LMHeadModel(hf_config).eval()
    ours = decoder_lm_from_gpt2(hf.state_dict(), hf_config.to_dict())
    prompt = torch.randint(0, CONFIG["vocab_size"], (PROMPT_LEN,)).tolist()
    n = args.new_tokens

    cached, cached_tokens = ours_tokens_per_s(ours, prompt, n, True, args.repeats)
    theirs, their_tokens = transformers_tokens_per_s(hf, prompt, n, args.repeats)
    recompute, recompute_tokens = ours_tokens_per_s(ours, prompt, n, False, 1)  # slow: once is enough
    result = {
        "tokens_per_s": round(cached, 1),
        "kv_speedup": round(cached / recompute, 2),
        "vs_transformers": round(cached / theirs, 2),
        "recompute_tokens_per_s": round(recompute, 1),
        "transformers_tokens_per_s": round(theirs, 1),
        "same_tokens_as_transformers": cached_tokens == their_tokens,
        "same_tokens_with_and_without_cache": cached_tokens == recompute_tokens,
        "config": {**CONFIG, "d_ff": 4 * CONFIG["n_embd"], "params": sum(p.numel() for p in ours.parameters())},
        "prompt_tokens": PROMPT_LEN,
        "new_tokens": n,
        "threads": args.threads,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "cpu": platform.processor() or platform.machine(),
    }
    if (Path(args.lm) / "model.safetensors").is_file():
        lm = load_model(args.lm)
        lm_prompt = torch.randint(0, lm.config.vocab_size, (PROMPT_LEN,)).tolist()
        result["shipped_lm"] = {
            "path": args.lm,
            "tokens_per_s_cache": round(ours_tokens_per_s(lm, lm_prompt, n, True, args.repeats)[0], 1),
            "tokens_per_s_no_cache": round(ours_tokens_per_s(lm, lm_prompt, n, False, 1)[0], 1),
            "context": lm.config.max_len,
            "params": sum(p.numel() for p in lm.parameters()),
        }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
