"""Test-set quality of a language model: bits per character on the Shakespeare test plays.

    python -m benchmarks.lm_quality [--model assets/shakespeare-lm] [--stride 128]

bits/char = total negative log-likelihood of the test text in bits / its number of
characters. Unlike loss per token it does not depend on the tokenizer, so a
character model and a BPE model can be compared. Each play (Hamlet, Macbeth, The
Tempest) is scored separately, after the "\\n\\n" that separates works in the
training text, with a sliding window: windows of the full context length move by
`stride` tokens and each scores only the tokens the previous window did not, so
every token is scored exactly once with at least context - stride tokens before it
(all of them for the first window). Last line: JSON {"bits_per_char", "params", ...}.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import torch

from transformer_core import load_model
from transformer_core.training import data
from transformer_core.tokenization import TextTokenizer

DEFAULT_MODEL = Path(__file__).resolve().parent.parent / "assets" / "shakespeare-lm"
WORK_SEPARATOR = "\n\n"  # what precedes every work in the training text


def windows(n_tokens: int, context: int, stride: int) -> list[tuple[int, int, int]]:
    """(begin, end, first scored target) for windows ids[begin:end] over n_tokens ids.

    Targets are positions 1..n_tokens-1 (each predicted from all ids before it);
    the windows' scored targets tile that range without overlap.
    """
    if not 0 < stride <= context:
        raise ValueError(f"stride must be in 1..context ({context}), got {stride}")
    out, scored_to = [], 1
    end = min(context, n_tokens)
    while scored_to < n_tokens:
        begin = max(0, end - context)
        out.append((begin, end, scored_to))
        scored_to = end
        end = min(end + stride, n_tokens)
    return out


@torch.no_grad()
def sliding_window_nll(model, ids: list[int], first_target: int, stride: int, batch_size: int = 8) -> tuple[float, int]:
    """Total NLL in nats of ids[first_target:] given everything before, and how many tokens that is."""
    context = model.config.max_len
    todo = [w for w in windows(len(ids), context, stride) if w[1] > first_target]
    ids_t = torch.tensor(ids)
    total, count = 0.0, 0
    for i in range(0, len(todo), batch_size):
        chunk = todo[i : i + batch_size]
        # windows in one batch have equal length except possibly a short text's single window
        for length in sorted({end - begin for begin, end, _ in chunk}):
            group = [w for w in chunk if w[1] - w[0] == length]
            x = torch.stack([ids_t[begin:end] for begin, end, _ in group])
            logprobs = torch.log_softmax(model(x).double(), dim=-1)  # (B, T, V)
            for row, (begin, end, scored_from) in enumerate(group):
                start = max(scored_from, first_target)
                targets = ids_t[start:end]
                # the prediction for position t sits at window index t - begin - 1
                picked = logprobs[row, start - begin - 1 : end - begin - 1].gather(-1, targets[:, None])
                total -= float(picked.sum())
                count += len(targets)
    return total, count


def bits_per_char(model, tokenizer: TextTokenizer, texts: dict[str, str], stride: int, batch_size: int = 8) -> dict:
    """Bits per character of each text and of all together, every character scored once."""
    prefix = tokenizer.encode(WORK_SEPARATOR)
    per_text, nats, chars, tokens = {}, 0.0, 0, 0
    for name, text in texts.items():
        ids = prefix + tokenizer.encode(text)
        nll, n = sliding_window_nll(model, ids, len(prefix), stride, batch_size)
        per_text[name] = round(nll / math.log(2) / len(text), 4)
        nats, chars, tokens = nats + nll, chars + len(text), tokens + n
    bits = nats / math.log(2)
    return {
        "bits_per_char": round(bits / chars, 4),
        "bits_per_token": round(bits / tokens, 4),
        "chars": chars,
        "tokens": tokens,
        "chars_per_token": round(chars / tokens, 3),
        "per_text": per_text,
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(DEFAULT_MODEL), help="checkpoint folder (with tokenizer.json)")
    p.add_argument("--stride", type=int, default=None, help="window step in tokens (default: context / 2)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    model = load_model(args.model)
    tokenizer = TextTokenizer.load(Path(args.model) / "tokenizer.json")
    stride = args.stride or model.config.max_len // 2
    t0 = time.perf_counter()
    result = bits_per_char(model, tokenizer, data.shakespeare_works("test"), stride, args.batch_size)
    result.update(
        params=sum(p.numel() for p in model.parameters()),
        model=str(args.model),
        context=model.config.max_len,
        stride=stride,
        seconds=round(time.perf_counter() - t0, 1),
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
