"""The real LLMs' teaching figures, measured with the app's own use cases (lab/heads.py, lab/inside.py), for the
model cards and the lessons:

    python -m benchmarks.llm_lessons [--llm-dir DIR]

For each LLM: the head that links "it" to "animal" most in Alammar's sentence, and its weight (for Gemma also
"它" -> "动物" in the Chinese sentence, with how its tokenizer splits it); the five best induction heads and their
scores (a random sequence repeated, lab/heads.roles); the first token's share of attention per layer, the mean
over five texts (lab/inside.sink); the layer from which the lens's top guess after the prompt is the model's
answer and stays so (" Paris" for SmolLM2; Gemma is asked in Chinese too). Each LLM must be made first
(`python -m tools.llms`). Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lab import heads, inside, llms, store  # noqa: E402

ANIMAL = "The animal didn't cross the street because it was too tired."
ANIMAL_ZH = "这只动物没有过马路，因为它太累了。"
SINK_TEXTS = ["The capital of France is", ANIMAL, "Once upon a time, in a small village by the sea, there lived",
              "def add(a, b):\n    return a + b\n", "To be, or not to be, that is the question:"]
LENS_PROMPTS = {llms.SMOLLM2.name: ["The capital of France is"],
                llms.GEMMA3.name: ["The capital of France is", "中国的首都是北京。法国的首都是"]}


def best_link(name: str, text: str, query: str, key: str) -> dict:
    found = heads.find_head(name, text, query, key)
    head, weight = found.ranked[0]
    return {"head": found.names[0], "weight": round(float(weight), 3), "mean_over_heads": round(found.mean, 3),
            "tokens": found.run.k_labels, "kv_head": head.head // (found.weights.shape[1] // _kv_heads(name))}


def _kv_heads(name: str) -> int:
    config = store.config(name)
    return config.get("n_kv_head") or config["n_head"]


def induction(name: str, n: int = 5) -> list[tuple[str, float]]:
    run = heads.roles(name)
    (group, scores), = run.scores["induction"].items()
    order = np.argsort(scores, axis=None)[::-1][:n]
    return [(f"L{i // scores.shape[1]} H{i % scores.shape[1]}", round(float(scores.flat[i]), 3)) for i in order]


def sink_share(name: str) -> list[float]:
    shares = np.stack([inside.sink(name, text).share for text in SINK_TEXTS])
    return [round(float(s), 3) for s in shares.mean(0)]


def lens_layer(name: str, prompt: str) -> dict:
    """The block from which the final answer is the lens's top guess after the prompt's last token and stays
    top (-1: already from the embedding)."""
    run = heads.lens(name, prompt)
    ranks = run.final_rank[:, -1].tolist()
    first = len(ranks) - 1
    while first > 0 and ranks[first - 1] == 0:
        first -= 1
    return {"prompt": prompt, "answer": run.guesses[-1][-1], "top1_from_block": first - 1,
            "p_final": round(float(run.final_probs[-1, -1]), 3)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm-dir", type=Path, default=None, help="default: checkpoints/ in the data cache")
    args = parser.parse_args(argv)
    store.set_llm_dir(args.llm_dir or llms.default_dir())
    missing = [name for name in llms.LLMS if name in store.unavailable()]
    if missing:
        sys.exit(f"not made: {missing} (python -m tools.llms)")
    out = {}
    for name in llms.LLMS:
        figures = {"it_animal": best_link(name, ANIMAL, "it", "animal"), "induction_top5": induction(name),
                   "first_token_share_per_layer": sink_share(name),
                   "lens": [lens_layer(name, prompt) for prompt in LENS_PROMPTS[name]]}
        if name == llms.GEMMA3.name:
            figures["ta_dongwu"] = best_link(name, ANIMAL_ZH, "它", "动物")
        out[name] = figures
        print(name, json.dumps(figures, ensure_ascii=False, indent=1), flush=True)
    print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    main()
