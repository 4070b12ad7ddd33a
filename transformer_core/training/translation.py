"""Training an encoder-decoder on a toy translation, as a library: a fresh model of a preset size, batches of
fresh pairs, the teacher-forced loss, warm starts.

The command line is train_translate.py; the app's live-training process uses this. The tasks, the sizes and
the scores a model card and the app report live in transformer_core/tasks.py.
"""

from __future__ import annotations

import random
from pathlib import Path

import torch
import torch.nn.functional as F

from ..decoding.seq2seq import IGNORE, Codec, char_tokenizer
from ..device import device_of
from ..model.models import EncoderDecoder, EncoderDecoderConfig
from ..tokenization import TextTokenizer
from ..weights.hub import CheckpointError, load_model
from ..tasks import PRESETS, Task
from .loop import TrainConfig, scored_targets, train

TOY_MAX_LEN = 32  # room for length-generalisation tests up to 20 symbols (+ </s>)
PIG_LATIN_MAX_LEN = 160  # 10 words of up to 12 letters, numbers, marks, "ay"s, </s>: 125 at most in 200k samples
LIVE_BATCH = 64  # pairs per step when training live in the app


def max_len_for(task: Task) -> int:
    return PIG_LATIN_MAX_LEN if task.name == "pig_latin" else TOY_MAX_LEN


def build_model(task: Task, preset: str, positions: str = "learned", dropout: float = 0.0,
                max_len: int | None = None) -> tuple[EncoderDecoder, Codec]:
    """A fresh EncoderDecoder sized by `preset`, and the codec for the task's alphabet."""
    codec = Codec(char_tokenizer(task.symbols))
    size = PRESETS[preset]
    vocab = codec.tokenizer.vocab_size  # source and target share one alphabet
    config = EncoderDecoderConfig(src_vocab_size=vocab, tgt_vocab_size=vocab, d_model=size.d_model, n_head=size.n_head,
                                  n_layer=size.n_layer, d_ff=size.d_ff, dropout=dropout, positions=positions,
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
