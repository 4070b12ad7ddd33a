"""Speed of the head tools, and what they find in the shipped models: `python -m benchmarks.heads`.

Timed (median of --repeats, after one warm-up), on the server side only, engine calls:
  find_head_ms        rank every head of the pre-trained encoder at ("it", "animal"), re-slicing a traced run
  importance_lm_s     importance map of shakespeare-lm at 128 tokens (36 heads, zero ablation)
  importance_encoder_s  importance map of sentiment-pretrained at 40 tokens (72 heads)
  logit_lens_ms       shakespeare-lm at 128 tokens: traced forward + lens (lens_only_ms: the lens alone)
  edit_off_ns         one trace point passed when nothing records or edits (about 30 per shakespeare-lm forward)
  *_cpu_s, *_cpu_ms   the same work in CPU time of all threads, which a busy shared machine inflates less
The last line is one JSON object.

`--app` times the same views as the app's server answers them: the Attention tab's handlers
(ui/heads.py: the use case in lab/heads.py, the figures, their JSON for the browser), no cache
answering (find_head re-slices the attention run the page already has, as in the app), with
CPU times beside wall times and the load average. benchmarks/browser.py times them click-to-drawn.

`--grow` trains a two-layer attention-only model (MLPs held at zero) on random sequences
repeated twice, CPU-cheap (one thread, a few hundred steps), and prints its induction score
and the two halves' loss before and after: does a small model grow an induction head when
its data rewards copying?

`--findings` instead prints, for every checkpoint in assets/ with a config.json, which head
links "it" to its antecedent in the two seed sentences (where the tokenizer keeps those words),
which heads matter most on a Shakespeare line, and which head roles its heads show
(thresholds: transformer_core.ROLE_THRESHOLD), one JSON object per model, then a summary line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from transformer_core import (
    ROLE_THRESHOLD, DecoderLM, DecoderLMConfig, EncoderDecoder, Head, TextTokenizer, head_roles, importance_map,
    load_model, logit_lens, rank_heads, repeated_random_tokens,
)
from transformer_core.decoding.seq2seq import Codec
from transformer_core.model import trace
from transformer_core.training import data
from transformer_core.tasks import get_task

ASSETS = Path(__file__).resolve().parents[1] / "assets"
SEEDS = (("The animal didn't cross the street because it was too tired", "animal"),
         ("The restaurant refused to serve me a ham sandwich because it only cooks vegetarian food", "restaurant"))
LINE = "Now is the winter of our discontent made glorious summer by this sun of York"


def median_of(fn, repeats: int, clock=time.perf_counter) -> float:
    fn()  # warm-up: first-call allocations
    times = []
    for _ in range(repeats):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times)


def prefix_ids(tokenizer: TextTokenizer, n: int) -> list[int]:
    """The first n tokens of Shakespeare's validation text."""
    return tokenizer.encode(data.shakespeare("validation")[: 20 * n])[:n]


def timings(repeats: int) -> dict:
    lm = load_model(ASSETS / "shakespeare-lm")
    lm_ids = torch.tensor(prefix_ids(TextTokenizer.load(ASSETS / "shakespeare-lm" / "tokenizer.json"), 128))
    encoder = load_model(ASSETS / "sentiment-pretrained")
    enc_tok = TextTokenizer.load(ASSETS / "sentiment-pretrained" / "tokenizer.json")
    enc_ids = torch.tensor(enc_tok.encode(data.shakespeare("validation")[:400])[:40])
    sentence = SEEDS[0][0]
    spans = enc_tok.tokens(sentence)
    it, animal = [s.text for s in spans].index("it"), [s.text for s in spans].index("animal")
    _, run = encoder.run_with_trace(torch.tensor([enc_tok.encode(sentence)]))
    _, lm_run = lm.run_with_trace(lm_ids[None])
    tensor = torch.zeros(1, 6, 128, 32)
    n_calls = 100_000
    t0 = time.perf_counter()
    for _ in range(n_calls):
        trace.point("layers.0.self_attn.weighted", tensor)
    edit_off_ns = (time.perf_counter() - t0) / n_calls * 1e9
    with torch.no_grad():
        forward_ms = 1000 * median_of(lambda: lm(lm_ids[None]), repeats)
    return {
        "find_head_ms": round(1000 * median_of(lambda: rank_heads(run, it, animal), repeats), 2),
        "importance_lm_s": round(median_of(lambda: importance_map(lm, lm_ids), repeats), 3),
        "importance_encoder_s": round(median_of(lambda: importance_map(encoder, enc_ids), repeats), 3),
        # CPU seconds (all threads): on a shared machine wall time counts other programs' turns,
        # CPU time counts only this work; on a quiet machine wall ~ CPU / threads
        "importance_lm_cpu_s": round(median_of(lambda: importance_map(lm, lm_ids), repeats, time.process_time), 3),
        "importance_encoder_cpu_s": round(median_of(lambda: importance_map(encoder, enc_ids), repeats,
                                                    time.process_time), 3),
        "logit_lens_ms": round(1000 * median_of(lambda: logit_lens(lm, lm.run_with_trace(lm_ids[None])[1]),
                                                repeats), 1),
        "lens_only_ms": round(1000 * median_of(lambda: logit_lens(lm, lm_run), repeats), 1),
        "logit_lens_cpu_ms": round(1000 * median_of(lambda: logit_lens(lm, lm.run_with_trace(lm_ids[None])[1]),
                                                    repeats, time.process_time), 1),
        "edit_off_ns": round(edit_off_ns, 1),
        "lm_forward_128_ms": round(forward_ms, 1),
        "torch_threads": torch.get_num_threads(),
        "load_average_1min": round(os.getloadavg()[0], 1),  # a shared machine's timings need this beside them
        "repeats": repeats,
    }


def app_timings(repeats: int) -> dict:
    from lab import cache, store
    from ui import heads as handlers
    from ui.handlers import _serialized

    store.set_model_dir(ASSETS)
    lm_text = data.shakespeare("validation")[:2000]  # cut to 128 tokens by the app's input policy
    enc_text = " ".join(data.shakespeare("validation")[:400].split()[:30])  # about 40 word pieces
    lm, enc = "shakespeare-lm (language model)", "sentiment-pretrained (classifier)"
    handlers.find_head(enc, SEEDS[0][0], "encoder", "it", "animal")  # the page's attention run, kept

    def fresh(fn, *args):
        def run():
            cache.clear_all()
            _serialized(fn(*args))
        return run

    def find():  # find_head's answer uncached: `_ranking` is the cached part, find_head adds the picker
        _serialized(handlers._ranking.__wrapped__(enc, SEEDS[0][0], "encoder", "it", "street"))

    def both(name: str, fn, scale: float = 1.0, digits: int = 3) -> dict:
        return {f"{name}": round(scale * median_of(fn, repeats), digits),
                f"{name.rsplit('_', 1)[0]}_cpu_{name.rsplit('_', 1)[1]}":
                    round(scale * median_of(fn, repeats, time.process_time), digits)}

    lm_ids = len(store.tokenizer("shakespeare-lm").tokens(lm_text[:20_000]))
    return {
        **both("app_find_head_ms", find, 1000, 1),
        **both("app_importance_lm_s", fresh(handlers.importance.__wrapped__, lm, lm_text, "zero")),
        **both("app_importance_encoder_s", fresh(handlers.importance.__wrapped__, enc, enc_text, "zero")),
        **both("app_logit_lens_ms", fresh(handlers.logit_lens.__wrapped__, lm, lm_text), 1000, 1),
        "lm_text_tokens_before_the_cut": lm_ids,
        "torch_threads": torch.get_num_threads(),
        "load_average_1min": round(os.getloadavg()[0], 1),
        "repeats": repeats,
    }


# --- findings per shipped model ----------------------------------------------------------------


def _is_special(token: str | None) -> bool:
    return token is None or (len(token) > 2 and token[0] in "[<" and token[-1] in "]>")


def _top(ranked, k: int = 3) -> list[list]:
    return [[str(head), round(value, 3)] for head, value in ranked[:k]]


def seed_links(model, tokenizer: TextTokenizer) -> dict:
    """For each seed sentence: the head that puts most of "it"'s attention on the antecedent."""
    out = {}
    for sentence, word in SEEDS:
        spans = tokenizer.tokens(sentence)
        texts = [s.text.strip().lower() for s in spans]
        if "it" not in texts:
            out[word] = "tokenizer does not keep 'it' as one token"
            continue
        query = texts.index("it")
        # the antecedent's tokens: every token inside its characters (a word cut into pieces sums them)
        start = sentence.lower().index(word)
        keys = [i for i, s in enumerate(spans) if s.start < start + len(word) and s.end > start and s.end > s.start]
        if len(spans) > model.config.max_len:
            out[word] = f"{len(spans)} tokens exceed the model's context of {model.config.max_len}"
            continue
        _, run = model.run_with_trace(torch.tensor([tokenizer.encode(sentence)]))
        ranking = rank_heads(run, query, keys)
        out[word] = {"pieces": [spans[k].text for k in keys], "top": _top(ranking.ranked),
                     "mean_over_heads": round(ranking.mean, 3)}
    return out


def roles_of(model, tokenizer: TextTokenizer) -> dict:
    vocab = [i for i in range(tokenizer.vocab_size) if not _is_special(tokenizer.id_to_token(i))]
    n = min(50, model.config.max_len // 2)
    roles = head_roles(model, repeated_random_tokens(n, vocab, batch=4, seed=0))
    found = {}
    for head, role, score in roles.labels():
        found.setdefault(role, []).append([str(head), round(score, 2)])
    best = {role: _top(sorted(((h, float(s[h.layer, h.head])) for h in _heads(s, g)), key=lambda x: -x[1]), 1)[0]
            for role, by_group in roles.scores.items() for g, s in by_group.items()}
    out = {"n": n, "labelled": found, "best_per_role": best}
    if roles.losses is not None:
        out["loss_first_half"] = round(float(roles.losses[: n - 1].mean()), 3)
        out["loss_second_half"] = round(float(roles.losses[n:].mean()), 3)
    return out


def _heads(scores: torch.Tensor, group: str) -> list[Head]:
    return [Head(group, l, h) for l in range(scores.shape[0]) for h in range(scores.shape[1])]


def importance_of(name: str, model, tokenizer: TextTokenizer) -> dict:
    if isinstance(model, EncoderDecoder):
        codec = Codec(tokenizer)
        task = get_task(name.removeprefix("translate-").removesuffix("-sinusoidal").replace("-", "_"))
        source = LINE if task.name == "pig_latin" else task.example  # the digit tasks read digits only
        src = codec.source_ids(source)
        tgt = [codec.bos] + tokenizer.encode(task.pair(source)[1]) + [codec.eos]
        result = importance_map(model, src, target=tgt)
        text = source
    else:
        ids = tokenizer.encode(LINE)[: model.config.max_len]
        result = importance_map(model, ids)
        text = tokenizer.decode(ids)
    return {"text": text, "measure": result.measure, "baseline": round(result.baseline, 3),
            "top": _top(result.ranked())}


def findings() -> list[dict]:
    out = []
    for folder in sorted(p.parent for p in ASSETS.glob("*/config.json")):
        model = load_model(folder)
        tokenizer = TextTokenizer.load(folder / "tokenizer.json")
        entry = {"model": folder.name, "heads": model.config.n_layer * model.config.n_head}
        if not isinstance(model, EncoderDecoder):
            entry["seed_links"] = seed_links(model, tokenizer)
        else:
            entry["seed_links"] = "character-level translator: 'it' and its antecedent are not tokens"
        entry["importance"] = importance_of(folder.name, model, tokenizer)
        entry["roles"] = roles_of(model, tokenizer)
        if isinstance(model, DecoderLM):
            ids = torch.tensor([tokenizer.encode(LINE)[: model.config.max_len]])
            lens = logit_lens(model, model.run_with_trace(ids)[1])
            # per layer: share of positions whose final prediction is already the top guess
            entry["lens_final_is_top_by_layer"] = [round(float((r == 0).float().mean()), 2) for r in lens.final_rank]
        out.append(entry)
        print(json.dumps(entry), flush=True)
    return out


def grow_induction_head(steps: int = 4000, vocab: int = 64, n: int = 16, seed: int = 0) -> dict:
    """Train a 2-layer, 4-head attention-only DecoderLM on random n-token sequences repeated twice."""
    torch.manual_seed(seed)
    config = DecoderLMConfig(vocab_size=vocab, d_model=64, n_head=4, n_layer=2, d_ff=1, max_len=2 * n, dropout=0.0)
    model = DecoderLM(config)
    with torch.no_grad():
        for block in model.layers:  # attention only: the MLPs write 0 and never learn
            for p in block.ff.parameters():
                p.zero_()
                p.requires_grad_(False)
    probe = repeated_random_tokens(n, range(vocab), batch=16, seed=10_000)

    def measure() -> dict:
        model.eval()
        roles = head_roles(model, probe)
        model.train()
        # per layer: a real induction head sits in layer 1, reading what a layer-0 head wrote;
        # a layer-0 head cannot match "the token before this key", whatever its score says
        best = {role: [round(float(v), 3) for v in roles.scores[role]["decoder"].max(-1).values]
                for role in ("induction", "previous-token", "duplicate-token")}
        return {"best_per_layer": best,
                "loss_first_half": round(float(roles.losses[: n - 1].mean()), 3),
                "loss_second_half": round(float(roles.losses[n:].mean()), 3)}

    before = measure()
    optimizer = torch.optim.AdamW((p for p in model.parameters() if p.requires_grad), lr=3e-3)
    t0 = time.perf_counter()
    for step in range(steps):
        # the half's length changes every step: a fixed offset (a positional head) cannot
        # solve it, only reading what followed the earlier copy of the current token can
        batch = repeated_random_tokens(4 + step % (n - 3), range(vocab), batch=32, seed=step)
        loss = F.cross_entropy(model(batch)[:, :-1].transpose(1, 2), batch[:, 1:])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"steps": steps, "train_s": round(time.perf_counter() - t0, 1), "before": before, "after": measure()}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--findings", action="store_true", help="what the tools find in every shipped model")
    p.add_argument("--grow", action="store_true", help="does a 2-layer attention-only model grow an induction head?")
    p.add_argument("--app", action="store_true", help="the Attention tab's head views as the server answers them")
    args = p.parse_args(argv)
    if args.threads is not None:
        if args.threads < 1:
            p.error(f"--threads {args.threads}: must be at least 1")
        torch.set_num_threads(args.threads)
    if args.grow:
        print(json.dumps(grow_induction_head()))
        return
    if args.app:
        print(json.dumps(app_timings(args.repeats)))
        return
    if args.findings:
        entries = findings()
        print(json.dumps({"models": len(entries), "role_threshold": ROLE_THRESHOLD}))
        return
    print(json.dumps(timings(args.repeats)))


if __name__ == "__main__":
    main()
