"""Train a DecoderLM on Shakespeare (or your own text): `python -m transformer_core.training.train_lm --help`.

Lesson: a language model learns by predicting every next token of random windows
of the corpus at once; the causal mask is what makes that an honest exercise.
Train with `--mask none` to watch a model cheat by reading the answer.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from . import data, data_zh, hub_data

from .. import distributed
from .cli import exit_on
from ..device import DeviceError, default_device, describe
from ..weights.hub import save_checkpoint
from ..model.masks import no_mask
from ..model.models import ConfigError, DecoderLM, DecoderLMConfig
from ..tokenization import TextTokenizer
from .loop import TrainConfig, train


def corpus_ids(tokenizer: TextTokenizer, corpus: str) -> dict[str, torch.Tensor]:
    """Token ids of the train and validation text as 1-D tensors."""
    if corpus == "shakespeare":
        texts = {split: data.shakespeare(split) for split in ("train", "validation")}
    elif corpus == "tang":
        texts = {split: data_zh.tang_text(split) for split in ("train", "validation")}
    else:
        texts = hub_data.split_text(hub_data.local_text(corpus))
    return {split: torch.tensor(tokenizer.encode(texts[split]), dtype=torch.long) for split in ("train", "validation")}


def window_batches(ids: dict[str, torch.Tensor], batch_size: int, context: int, device):
    """get_batch for `train`: random windows x and the same windows shifted by one, y."""

    def get_batch(split: str, g: torch.Generator):
        source = ids[split]
        starts = torch.randint(0, len(source) - context - 1, (batch_size,), generator=g)
        x = torch.stack([source[s : s + context] for s in starts.tolist()])
        y = torch.stack([source[s + 1 : s + context + 1] for s in starts.tolist()])
        return x.to(device), y.to(device)

    return get_batch


def lm_loss(mask_kind: str):
    def loss_fn(model, batch):
        x, y = batch
        mask = no_mask(x.shape[1]) if mask_kind == "none" else None  # None: the model's causal mask
        logits = model(x, mask=mask)
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), y.view(-1))

    return loss_fn


_SPLITS = {
    "shakespeare": "Shakespeare: test = Hamlet, Macbeth, The Tempest; validation = Julius Caesar; train = the other works",
    "tang": "the Complete Tang Poems of npm chinese-poetry 2.0.1 (MIT), simplified by OpenCC t2s, exact duplicate "
            "poems dropped; split by a hash of the poem id: 5% test, 5% validation, 90% train",
}


def model_card(args, config, history, params, seconds, device) -> str:
    last = history[-1]
    return f"""# {Path(args.out).name}

A `DecoderLM` (GPT-style, pre-LN, learned positions, tied embeddings) trained by our own command on the
{args.corpus} train split, with {'**no** causal mask (the cheating demo)' if args.mask == 'none' else 'the causal mask'}.

- Command: `{' '.join(shlex.quote(a) for a in ['python', '-m', 'transformer_core.training.train_lm', *sys.argv[1:]])}`
- Data: train split for training, validation split for the validation loss
  ({_SPLITS.get(args.corpus, "the first 80% of the text; validation and test: the next 10% each")}).
- Size: {params:,} parameters; d_model={config.d_model}, n_layer={config.n_layer}, n_head={config.n_head},
  context={config.max_len} tokens, vocabulary={config.vocab_size}.
- Training: {last['step']} steps of {args.batch_size} x {args.context} tokens in {seconds / 60:.1f} min
  on {describe(device)}.
- Final train loss {last['train_loss']:.3f}, validation loss {last['val_loss']:.3f} nats/token.
- Test-set quality: see `benchmarks/lm_quality.py` (bits per character on the test {'poems' if args.corpus == 'tang' else 'plays'}).
"""


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="checkpoint folder to write")
    p.add_argument("--tokenizer", default="assets/shakespeare-bpe/tokenizer.json")
    p.add_argument("--corpus", default="shakespeare", help="'shakespeare', 'tang' (Tang poems) or a text file/folder")
    p.add_argument("--d-model", type=int, default=192)
    p.add_argument("--n-layer", type=int, default=6)
    p.add_argument("--n-head", type=int, default=6)
    p.add_argument("--context", type=int, default=256)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--steps", type=int, default=1400)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--minutes", type=float, default=None, help="stop after this much training time")
    p.add_argument("--mask", choices=["causal", "none"], default="causal")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--resume", default=None, help="resume state file (written at every evaluation)")
    args = p.parse_args(argv)

    torch.manual_seed(args.seed)
    tokenizer = TextTokenizer.load(args.tokenizer)
    with exit_on(ConfigError, DeviceError):
        device = default_device()
        config = DecoderLMConfig(vocab_size=tokenizer.vocab_size, d_model=args.d_model, n_layer=args.n_layer,
                                 n_head=args.n_head, d_ff=4 * args.d_model, max_len=args.context, dropout=args.dropout)
    ids = corpus_ids(tokenizer, args.corpus)
    print(f"train tokens {len(ids['train']):,}, validation tokens {len(ids['validation']):,}")
    model = DecoderLM(config).to(device)
    params = sum(p.numel() for p in model.parameters())
    cfg = TrainConfig(steps=args.steps, lr=args.lr, min_lr=args.lr / 10, warmup=args.warmup,
                      eval_every=args.eval_every, eval_batches=10, seed=args.seed,
                      time_budget_s=None if args.minutes is None else 60 * args.minutes)
    t0 = time.perf_counter()
    history = train(model, cfg, window_batches(ids, args.batch_size, args.context, device), lm_loss(args.mask),
                    resume_path=args.resume)
    seconds = time.perf_counter() - t0
    if not distributed.is_main():
        return  # rank 0 writes the checkpoint and its card
    out = Path(args.out)
    save_checkpoint(model.cpu(), out, tokenizer, model_card(args, config, history, params, seconds, device))
    (out / "history.json").write_text(json.dumps(history, indent=1))
    print(json.dumps({"params": params, "final": history[-1], "minutes": round(seconds / 60, 1)}))


if __name__ == "__main__":
    distributed.run(main)
