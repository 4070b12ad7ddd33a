"""Test-set quality of a language model: bits per character on the Shakespeare test plays or the Tang test poems.

    python -m benchmarks.lm_quality [--model assets/shakespeare-lm] [--stride 128]
    python -m benchmarks.lm_quality --corpus tang [--model assets/tang-poems-char]

bits/char = total negative log-likelihood of the test text in bits / its number of
characters. Unlike loss per token it does not depend on the tokenizer, so a
character model and a BPE model can be compared. Each play (Hamlet, Macbeth, The
Tempest) is scored separately, after the "\\n\\n" that separates works in the
training text, with a sliding window: windows of the full context length move by
`stride` tokens and each scores only the tokens the previous window did not, so
every token is scored exactly once with at least context - stride tokens before it
(all of them for the first window). Last line: JSON {"bits_per_char", "params", ...}.

With `--corpus tang` the test text is the Tang test poems joined as in training (lines by
"\n", poems by a blank line), and two more things are measured:
* the baseline: an interpolated Kneser-Ney character n-gram (`benchmarks/kneser_ney.py`) of
  each order 2-5 fitted on the train poems, the order with the lowest bits/char on the
  validation poems scored on the test poems. Both models read the same symbols: a
  character the model's tokenizer maps to [UNK] is one placeholder symbol for the n-gram too;
* structure: 100 test poems drawn with a fixed seed among those whose first line has
  clauses of one length (5 or 7 characters); each model, prompted with that line, samples
  at temperature 0.8 (seed = the sample's number) up to 64 characters or the end of the
  poem; the score is the share of the clauses it closed (with a mark or a line break)
  that keep the prompt's clause length.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import time
from pathlib import Path

import torch

from benchmarks.kneser_ney import KneserNey
from transformer_core import load_model
from transformer_core.decoding.generation import generate
from transformer_core.decoding.sampling import Sampler, SamplingConfig
from transformer_core.training import data, data_zh
from transformer_core.tokenization import TextTokenizer

DEFAULT_MODEL = Path(__file__).resolve().parent.parent / "assets" / "shakespeare-lm"
DEFAULT_TANG_MODEL = Path(__file__).resolve().parent.parent / "assets" / "tang-poems-char"
NGRAM_ORDERS = (2, 3, 4, 5)
UNKNOWN_CHAR = "\x00"  # the n-gram's one symbol for every character the tokenizer reads as [UNK]
STRUCTURE_SAMPLES, STRUCTURE_TEMPERATURE, STRUCTURE_NEW_CHARS = 100, 0.8, 64
_CLOSED_CLAUSE = re.compile(f"([^{data_zh.CLAUSE_END}\n]+)[{data_zh.CLAUSE_END}\n]")
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


# ---------------------------------------------------------------- Tang poems


def with_unknowns(text: str, tokenizer: TextTokenizer) -> str:
    """The text with every character the tokenizer has no id for replaced by UNKNOWN_CHAR."""
    return "".join(c if tokenizer.token_to_id(c) is not None else UNKNOWN_CHAR for c in text)


def ngram_baseline(tokenizer: TextTokenizer) -> tuple[KneserNey, dict]:
    """The Kneser-Ney model of the order best on the validation poems, and its figures."""
    alphabet = alphabet_of(tokenizer)
    train = with_unknowns(data_zh.tang_text("train"), tokenizer)
    validation = with_unknowns(data_zh.tang_text("validation"), tokenizer)
    history = data_zh.POEM_SEPARATOR  # what precedes every poem in the training text
    models, validation_bits = {}, {}
    for order in NGRAM_ORDERS:
        models[order] = KneserNey(train, order, len(alphabet))
        validation_bits[order] = round(models[order].bits(validation, history) / len(validation), 4)
        print(json.dumps({"ngram_order": order, "validation_bits_per_char": validation_bits[order]}), flush=True)
    best = min(validation_bits, key=validation_bits.get)
    test = with_unknowns(data_zh.tang_text("test"), tokenizer)
    return models[best], {"order": best, "validation_bits_per_char": validation_bits,
                          "bits_per_char": round(models[best].bits(test, history) / len(test), 4)}


def alphabet_of(tokenizer: TextTokenizer) -> list[str]:
    """The symbols a character model reads: its single-character tokens, and UNKNOWN_CHAR for [UNK]."""
    chars = sorted(t for t in (tokenizer.id_to_token(i) for i in range(tokenizer.vocab_size)) if len(t) == 1)
    return [*chars, UNKNOWN_CHAR]


def structure_prompts(n: int = STRUCTURE_SAMPLES, seed: int = 0) -> list[tuple[str, int]]:
    """(first line, its clause length) of n test poems whose first line has clauses of one length, 5 or 7."""
    candidates = []
    for poem in data_zh.tang_poems("test"):
        lengths = {len(c) for c in data_zh.clauses(poem.lines[0])}
        if len(lengths) == 1 and lengths <= {5, 7} and poem.lines[0][-1] in data_zh.CLAUSE_END:
            candidates.append((poem.lines[0], lengths.pop()))
    return random.Random(seed).sample(candidates, n)


def clause_lengths_kept(samples: list[tuple[str, int]]) -> dict:
    """Share of the closed clauses of generated poem text (cut at the poem's end) of the prompt's length."""
    kept = total = 0
    for text, length in samples:
        poem, ended, _ = text.partition(data_zh.POEM_SEPARATOR)
        closed = _CLOSED_CLAUSE.findall(poem + ("\n" if ended else ""))  # a poem's end closes its last line
        total += len(closed)
        kept += sum(len(c) == length for c in closed)
    return {"clauses_kept": round(kept / max(total, 1), 4), "clauses": total}


@torch.no_grad()
def lm_samples(model, tokenizer: TextTokenizer, prompts: list[tuple[str, int]]) -> list[tuple[str, int]]:
    out = []
    for i, (line, length) in enumerate(prompts):
        ids = tokenizer.encode(data_zh.POEM_SEPARATOR + line + "\n")
        sampler = Sampler(SamplingConfig(temperature=STRUCTURE_TEMPERATURE, seed=i))
        out.append((tokenizer.decode(generate(model, ids, STRUCTURE_NEW_CHARS, choose=sampler)), length))
    return out


def ngram_samples(ngram: KneserNey, tokenizer: TextTokenizer, prompts: list[tuple[str, int]]) -> list[tuple[str, int]]:
    alphabet = alphabet_of(tokenizer)
    return [(ngram.sample(data_zh.POEM_SEPARATOR + with_unknowns(line, tokenizer) + "\n", STRUCTURE_NEW_CHARS,
                          STRUCTURE_TEMPERATURE, random.Random(i), alphabet, stop=data_zh.POEM_SEPARATOR), length)
            for i, (line, length) in enumerate(prompts)]


def tang_quality(model, tokenizer: TextTokenizer, stride: int, batch_size: int) -> dict:
    """Bits/char on the test poems and clause structure, for the model and the n-gram baseline."""
    result = bits_per_char(model, tokenizer, {"test poems": data_zh.tang_text("test")}, stride, batch_size)
    result["unknown_share"] = round(with_unknowns(data_zh.tang_text("test"), tokenizer).count(UNKNOWN_CHAR)
                                    / result["chars"], 4)
    ngram, result["ngram"] = ngram_baseline(tokenizer)
    result["ratio_to_ngram"] = round(result["bits_per_char"] / result["ngram"]["bits_per_char"], 4)
    prompts = structure_prompts()
    samples = lm_samples(model, tokenizer, prompts)
    result["structure"] = clause_lengths_kept(samples)
    result["ngram"]["structure"] = clause_lengths_kept(ngram_samples(ngram, tokenizer, prompts))
    result["structure"]["example"] = prompts[0][0] + "\n" + samples[0][0].split(data_zh.POEM_SEPARATOR)[0]
    return result


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None, help="checkpoint folder (with tokenizer.json); default: the corpus's")
    p.add_argument("--corpus", choices=["shakespeare", "tang"], default="shakespeare")
    p.add_argument("--stride", type=int, default=None, help="window step in tokens (default: context / 2)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    args.model = args.model or str(DEFAULT_TANG_MODEL if args.corpus == "tang" else DEFAULT_MODEL)
    model = load_model(args.model)
    tokenizer = TextTokenizer.load(Path(args.model) / "tokenizer.json")
    stride = args.stride or model.config.max_len // 2
    t0 = time.perf_counter()
    if args.corpus == "tang":
        result = tang_quality(model, tokenizer, stride, args.batch_size)
    else:
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
