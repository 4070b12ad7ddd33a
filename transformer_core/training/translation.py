"""Training an encoder-decoder on a toy translation, as a library: model sizes, batches of fresh
pairs, the teacher-forced loss, warm starts, and the scores a model card and the app report.

The command line is train_translate.py; the app's live training and the Translate tab use this.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from ..decoding.seq2seq import IGNORE, Codec, char_tokenizer, exact_match
from ..device import device_of
from ..model.models import EncoderDecoder, EncoderDecoderConfig
from ..tokenization import TextTokenizer
from ..weights.hub import CheckpointError, load_model
from .loop import TrainConfig, scored_targets, train
from .tasks import Task, examples, play_lines, random_symbols

@dataclass(frozen=True)
class Preset:
    """A model size: every preset has n_layer encoder and n_layer decoder blocks."""

    d_model: int
    n_head: int
    n_layer: int
    d_ff: int


PRESETS = {
    "tiny": Preset(32, 2, 1, 64),
    "small": Preset(64, 4, 2, 256),
    "medium": Preset(128, 4, 2, 512),
    "large": Preset(128, 4, 3, 512),
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
