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
import random
import shlex
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

from .. import distributed
from .cli import exit_on
from ..device import describe, device_of
from ..weights.hub import CheckpointError, load_model, save_checkpoint
from ..model.models import ConfigError, EncoderDecoder, EncoderDecoderConfig
from ..decoding.seq2seq import IGNORE, Codec, char_tokenizer, exact_match
from ..tokenization import TextTokenizer, TokenizerError
from .tasks import PIG_LATIN_WORDS, TASKS, TOY_LENGTHS, Task, examples, get_task, play_lines, random_symbols
from .loop import TrainConfig, scored_targets, train

# model sizes: (d_model, n_head, n_layer, d_ff); every preset has n_layer encoder and n_layer decoder blocks
PRESETS = {
    "tiny": (32, 2, 1, 64),
    "small": (64, 4, 2, 256),
    "medium": (128, 4, 2, 512),
    "large": (128, 4, 3, 512),
}
TOY_MAX_LEN = 32  # room for length-generalisation tests up to 20 symbols (+ </s>)
PIG_LATIN_MAX_LEN = 160  # 10 words of up to 12 letters, numbers, marks, "ay"s, </s>: 125 at most in 200k samples
TEST_SIZE = 1000
LIVE_BATCH = 64  # pairs per step when training live in the app


def max_len_for(task: Task) -> int:
    return PIG_LATIN_MAX_LEN if task.name == "pig_latin" else TOY_MAX_LEN


def build_model(task: Task, preset: str, positions: str = "learned", dropout: float = 0.0,
                max_len: int | None = None) -> tuple[EncoderDecoder, Codec]:
    """A fresh EncoderDecoder sized by `preset`, and the codec for the task's alphabet."""
    codec = Codec(char_tokenizer(task.symbols))
    d_model, n_head, n_layer, d_ff = PRESETS[preset]
    vocab = codec.tokenizer.vocab_size  # source and target share one alphabet
    config = EncoderDecoderConfig(src_vocab_size=vocab, tgt_vocab_size=vocab, d_model=d_model, n_head=n_head,
                                  n_layer=n_layer, d_ff=d_ff, dropout=dropout, positions=positions,
                                  max_len=max_len or max_len_for(task))
    return EncoderDecoder(config), codec


PER_TOKEN = ("src_embed.tok.weight", "tgt_embed.tok.weight", "generator.weight", "generator.bias")  # a row per token


def warm_start(model: EncoderDecoder, codec: Codec, folder: str | Path) -> list[str]:
    """Start `model` from a trained checkpoint of the same shape whose vocabulary may lack some tokens.

    Every weight is copied; of the per-token tables, the rows of the tokens both vocabularies hold
    (matched by the token, not the id: a larger alphabet renumbers). Returns the new tokens, whose
    rows stay as initialised. Fine-tuning then teaches what is new (a model that knows pig latin
    learns to copy apostrophes and digits far faster than a fresh one learns the whole rule)."""
    old, old_tokens = load_model(folder), TextTokenizer.load(Path(folder) / "tokenizer.json")
    state = model.state_dict()
    if any(state[k].shape != v.shape for k, v in old.state_dict().items() if k not in PER_TOKEN):
        raise CheckpointError(f"{folder} is not shaped like this model ({model.config}); choose its --preset")
    tokens = [codec.tokenizer.id_to_token(i) for i in range(codec.tokenizer.vocab_size)]
    rows = [(new, old_tokens.token_to_id(t)) for new, t in enumerate(tokens) if old_tokens.token_to_id(t) is not None]
    new_ids, old_ids = (torch.tensor(ids) for ids in zip(*rows))
    for name, weight in old.state_dict().items():
        if name in PER_TOKEN:
            state[name][new_ids] = weight[old_ids]
        else:
            state[name] = weight
    model.load_state_dict(state)
    return [t for t in tokens if old_tokens.token_to_id(t) is None]


def pair_batches(task: Task, codec: Codec, batch_size: int, device):
    """get_batch for `train`: fresh random pairs every step (the data is unlimited)."""

    def get_batch(split: str, g: torch.Generator):
        rng = random.Random(int(torch.randint(2**62, (1,), generator=g)))
        pairs = [task.pair(task.sample(rng, split)) for _ in range(batch_size)]
        return [t.to(device) for t in codec.batch(pairs)]

    return get_batch


def seq2seq_loss(model, batch) -> torch.Tensor:
    """Mean cross-entropy of every target token given the source and the true target before it."""
    src, src_lengths, tgt_in, tgt_out = batch
    logits = model(src, tgt_in, src_lengths)
    return F.cross_entropy(logits.float().flatten(0, 1), tgt_out.flatten(), ignore_index=IGNORE)


def fit(model: EncoderDecoder, codec: Codec, task: Task, cfg: TrainConfig, batch_size: int,
        on_step=None, resume_path=None, progress: bool = True) -> list[dict]:
    """Train `model` on `task` in place with the shared loop; returns its history."""
    device = device_of(model)
    return train(model, cfg, pair_batches(task, codec, batch_size, device), seq2seq_loss,
                 resume_path=resume_path, on_step=on_step, progress=progress, terms=scored_targets)


def live_config(steps: int, seconds: float, seed: int = 0) -> TrainConfig:
    """Training settings for a live run: fast learning rate, short warm-up, stop at `seconds`."""
    return TrainConfig(steps=steps, lr=3e-3, min_lr=3e-4, warmup=min(50, steps // 10), eval_every=steps,
                       eval_batches=2, seed=seed, time_budget_s=seconds)


def measure(model, codec: Codec, task: Task) -> dict[str, float]:
    """Exact-match accuracy on the 1,000 held-out test sources (for pig latin also unseen-word sentences
    and the lines of the test plays)."""
    scores = {"test": exact_match(model, codec, examples(task, "test", TEST_SIZE))}
    if task.name == "pig_latin":
        scores["unseen"] = exact_match(model, codec, examples(task, "unseen", TEST_SIZE))
        scores["real"] = exact_match(model, codec, [task.pair(line) for line in play_lines("test")])
    return scores


def accuracy_by_length(model, codec: Codec, task: Task, lengths: range, n: int = 100,
                       seed: int = 0) -> dict[int, float]:
    """Exact match of a toy-task model on n held-out sources of each length (beyond training too)."""
    scores = {}
    for length in lengths:
        rng = random.Random(f"{task.name}/length/{length}/{seed}")
        scores[length] = exact_match(model, codec, [task.pair(random_symbols(rng, (length, length))) for _ in range(n)])
    return scores


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
  test set comes from its own seed (`transformer_core.training.tasks.examples(task, "test", 1000)`).
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
