"""Train an EncoderDecoder on a toy translation: `python -m transformer_core.training.train_translate --help`.

Lesson: the encoder-decoder learns from (source, target) pairs with teacher
forcing: the decoder reads the true target shifted right (<s> first) and must
predict every next token at once, so one batch trains every position. The same
`training.train` loop as the language model does the rest.

    python -m transformer_core.training.train_translate --task copy --out assets/translate-copy
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

import torch

from .. import distributed
from ..device import describe
from ..model.models import ConfigError
from ..tasks import PIG_LATIN_WORDS, PRESETS, TASKS, TOY_LENGTHS, get_task, measure, play_lines
from ..tokenization import TokenizerError
from ..weights.hub import CheckpointError, save_checkpoint
from .cli import exit_on
from .loop import TrainConfig
from .translation import build_model, fit, warm_start


def model_card(args, model, history, scores) -> str:
    c, last = model.config, history[-1]
    params = sum(p.numel() for p in model.parameters())
    task = get_task(args.task)
    if task.name == "pig_latin":
        data = (f"English sentences of {PIG_LATIN_WORDS[0]}-{PIG_LATIN_WORDS[1]} words drawn from the Shakespeare "
                "train split (words of at most 12 letters; one distinct word in ten, chosen by a hash, is kept out "
                "of training), with some capitals, punctuation anywhere, apostrophes, hyphens and numbers, and their "
                "pig latin (rules in `transformer_core/tasks.py`)")
        figures = (f"- Exact-match accuracy on 1,000 held-out sentences of seen words: {scores['test']:.4f}\n"
                   f"- Exact-match accuracy on 1,000 held-out sentences each holding unseen words: "
                   f"{scores['unseen']:.4f}\n"
                   f"- Exact-match accuracy on the {len(play_lines('test')):,} distinct spoken lines of the test plays "
                   f"(Hamlet, Macbeth, The Tempest; `tasks.play_lines`) that it takes: {scores['real']:.4f}")
    else:
        data = (f"random strings of the symbols 0-9, length {TOY_LENGTHS[0]}-{TOY_LENGTHS[1]}, "
                f"and their {task.name} (e.g. 3141592 -> {task.transform('3141592')})")
        figures = f"- Exact-match accuracy (greedy) on 1,000 held-out sources: {scores['test']:.4f}"
    origin = (f"fine-tuned from the checkpoint `{args.init_from}` (all its weights, and the rows of the tokens it "
              "already had; its card says how it was trained)" if args.init_from else "trained from scratch")
    return f"""# {Path(args.out).name}

An `EncoderDecoder` (the original transformer: encoder, masked decoder, cross-attention; pre-LN,
{c.positions} positions) {origin} by our own command on the **{task.name}** task,
character by character.

- Command: `{' '.join(shlex.quote(a) for a in ['python', '-m', 'transformer_core.training.train_translate', *sys.argv[1:]])}`
- Data: {data}. Training pairs are drawn fresh every step from the training stream; the held-out
  test set comes from its own seed (`transformer_core.tasks.examples(task, "test", 1000)`).
- Tokens: source = characters + `</s>`; the decoder reads `<s>` + target and predicts target + `</s>`.
- Size: {params:,} parameters; d_model={c.d_model}, n_head={c.n_head}, {c.n_layer} encoder + {c.n_layer} decoder
  layers, d_ff={c.d_ff}, max_len={c.max_len}, vocabulary={c.src_vocab_size}.
- Training: {last['step']} steps of {args.batch_size} pairs in {last['seconds'] / 60:.1f} min (wall clock, resumed
  runs included) on {describe('cpu')}; final train loss {last['train_loss']:.4f},
  validation loss {last['val_loss']:.4f} nats/token.
{figures}
- Measured again by `python benchmarks/translate.py`.
"""


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", choices=sorted(TASKS), required=True)
    p.add_argument("--out", required=True, help="checkpoint folder to write")
    p.add_argument("--preset", choices=sorted(PRESETS), default="small")
    p.add_argument("--positions", choices=["learned", "sinusoidal"], default="learned")
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--eval-every", type=int, default=200)
    p.add_argument("--minutes", type=float, default=None, help="stop after this much training time")
    p.add_argument("--threads", type=int, default=1, help="CPU threads (the machine is shared)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--resume", default=None, help="resume state file (written at every evaluation)")
    p.add_argument("--init-from", default=None, metavar="CHECKPOINT",
                   help="start from this trained checkpoint of the same preset (new tokens start random)")
    args = p.parse_args(argv)

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    task = get_task(args.task)
    with exit_on(ConfigError):
        model, codec = build_model(task, args.preset, args.positions, args.dropout)
    if args.init_from:
        with exit_on(CheckpointError, TokenizerError):
            new_tokens = warm_start(model, codec, args.init_from)
        print(f"started from {args.init_from}; new tokens: {''.join(new_tokens)!r}", flush=True)
    cfg = TrainConfig(steps=args.steps, lr=args.lr, min_lr=args.lr / 10, warmup=args.warmup,
                      eval_every=args.eval_every, eval_batches=5, seed=args.seed,
                      time_budget_s=None if args.minutes is None else 60 * args.minutes)
    history = fit(model, codec, task, cfg, args.batch_size, resume_path=args.resume)
    if not distributed.is_main():
        return  # rank 0 measures, and writes the checkpoint and its card
    scores = measure(model, codec, task)
    out = Path(args.out)
    save_checkpoint(model, out, codec.tokenizer, model_card(args, model, history, scores))
    (out / "history.json").write_text(json.dumps(history, indent=1))
    print(json.dumps({"task": task.name, "scores": scores, "final": history[-1]}))


if __name__ == "__main__":
    distributed.run(main)
