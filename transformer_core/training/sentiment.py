"""Training the sentiment classifier, as a library: the labelled splits, masked-token pre-training batches
(BERT's corruption), classification batches (soft rating targets, word dropout, a teacher's transfer texts)
and early stopping on validation accuracy.

The command line is train_sentiment.py; train_pretrained.py fine-tunes with the same pieces.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch
import torch.nn.functional as F

from ..analysis.sentiment import accuracy, mlm_logits, pad_batch
from ..tokenization import END_OF_TEXT, TextTokenizer
from . import data, data_zh, hub_data

MASK_RATE = 0.15  # BERT: of these, 80% become [MASK], 10% a random token, 10% stay
IGNORE = -100  # cross_entropy's "no target here"


class StopEarly(Exception):
    """Validation accuracy stopped improving; training ends with the best weights."""


def review_loader(corpus: str, imdb_repo: str = hub_data.IMDB_REPO) -> Callable[[str], list[data.Review]]:
    """split -> reviews, for the movie-review snippets or IMDb (a Hub repo id or a local copy)."""
    if corpus == "reviews":
        return data.movie_reviews
    if corpus == "reviews-zh":
        return data_zh.chinese_reviews
    return lambda split: hub_data.imdb_reviews(split, imdb_repo)


def labelled(load, encode: Callable[[str], list[int]], max_len: int,
             empty: list[int]) -> dict[str, tuple[list[list[int]], list[int], list[float]]]:
    """split -> (token id lists cut to max_len, labels, mean human ratings); `empty` stands in for no tokens."""
    out = {}
    for split in data.SPLITS:
        reviews = load(split)
        out[split] = ([encode(r.text)[:max_len] or empty for r in reviews], [r.label for r in reviews],
                      [r.rating for r in reviews])
    return out


def unlabelled_streams(load, tokenizer: TextTokenizer, split: str, shakespeare: bool,
                       peoples_daily: bool = False) -> dict[str, torch.Tensor]:
    """Token streams for masked-token pre-training: the split's review texts (+ its Shakespeare,
    + for the train split of the Chinese reviews the People's Daily, which no score reads)."""
    eot = tokenizer.token_to_id(END_OF_TEXT)
    streams = {}
    if shakespeare:
        streams["shakespeare"] = torch.tensor(tokenizer.encode(data.shakespeare(split)), dtype=torch.long)
    if peoples_daily and split == "train":
        streams["peoples_daily"] = torch.tensor([i for t in data_zh.peoples_daily() for i in [*tokenizer.encode(t), eot]])
    streams["reviews"] = torch.tensor([i for r in load(split) for i in [*tokenizer.encode(r.text), eot]])
    return streams


def mask_tokens(x: torch.Tensor, mask_id: int, vocab_size: int, g: torch.Generator):
    """BERT corruption of ids (B, T) -> (corrupted ids, targets with IGNORE where nothing was hidden)."""
    chosen = torch.rand(x.shape, generator=g) < MASK_RATE
    targets = torch.where(chosen, x, torch.full_like(x, IGNORE))
    roll = torch.rand(x.shape, generator=g)
    x = torch.where(chosen & (roll < 0.8), torch.full_like(x, mask_id), x)
    random_ids = torch.randint(0, vocab_size, x.shape, generator=g)
    x = torch.where(chosen & (roll >= 0.8) & (roll < 0.9), random_ids, x)
    return x, targets


def mlm_batches(streams: dict[str, dict[str, torch.Tensor]], batch_size: int, context: int, mask_id: int,
                vocab_size: int, device):
    """get_batch: windows of `context` tokens, an equal share from each stream, BERT-masked."""

    def get_batch(split: str, g: torch.Generator):
        rows = []
        for source in streams[split].values():
            stream = source if len(source) > context else torch.cat([source] * (context // len(source) + 2))
            starts = torch.randint(0, len(stream) - context, (batch_size // len(streams[split]),), generator=g)
            rows += [stream[s : s + context] for s in starts.tolist()]
        return [t.to(device) for t in mask_tokens(torch.stack(rows), mask_id, vocab_size, g)]

    return get_batch


def mlm_loss(model, batch):
    x, targets = batch
    h = model.encode(x)
    hidden = targets != IGNORE
    return F.cross_entropy(mlm_logits(model, h[hidden]).float(), targets[hidden])


def rating_targets(ratings: list[float], temperature: float) -> torch.Tensor:
    """Soft targets (n, 2) from mean human ratings: P(positive) = sigmoid(rating / temperature).

    A snippet the raters put at +0.2 is barely positive; a hard label asks the model to be as sure of
    it as of a +3.5 rave (Peterson et al., 2019: training on human uncertainty generalizes better)."""
    p = torch.sigmoid(torch.tensor(ratings) / temperature)
    return torch.stack([1 - p, p], dim=1)


def classification_batches(examples, batch_size: int, pad_id: int, mask_id: int, token_dropout: float, device,
                           rating_temperature: float = 0.0, transfer: tuple[list[list[int]], torch.Tensor] | None = None):
    """get_batch: random labelled texts, right-padded; in training a share of tokens becomes [MASK].

    Targets are class ids, or with `rating_temperature` > 0 the soft targets of `rating_targets`.
    With `transfer` (token id lists, a teacher's (n, n_class) probabilities) each training batch
    also holds `batch_size` transfer texts, the teacher's probabilities their targets."""
    targets = {split: (rating_targets(ratings, rating_temperature) if rating_temperature > 0
                       else torch.tensor(labels))
               for split, (_, labels, ratings) in examples.items()}
    if transfer is not None and rating_temperature == 0:  # class ids become one-hot, to stack with probabilities
        targets["train"] = F.one_hot(targets["train"], transfer[1].shape[1]).float()

    def get_batch(split: str, g: torch.Generator):
        ids = examples[split][0]
        pick = torch.randint(0, len(ids), (batch_size,), generator=g).tolist()
        rows, y = [ids[i] for i in pick], targets[split][pick]
        if split == "train" and transfer is not None:
            extra = torch.randint(0, len(transfer[0]), (batch_size,), generator=g).tolist()
            rows, y = rows + [transfer[0][i] for i in extra], torch.cat([y, transfer[1][extra]])
        x, lengths = pad_batch(rows, pad_id)
        if split == "train" and token_dropout > 0:  # word dropout: no single token can carry the label
            dropped = (torch.rand(x.shape, generator=g) < token_dropout) & (x != pad_id)
            x = torch.where(dropped, torch.full_like(x, mask_id), x)
        return x.to(device), lengths.to(device), y.to(device)

    return get_batch


def classification_loss(label_smoothing: float):
    def loss_fn(model, batch):
        x, lengths, y = batch
        return F.cross_entropy(model(x, lengths).float(), y, label_smoothing=label_smoothing)

    return loss_fn


class KeepBest:
    """on_step callback: every `every` steps and at the last step measure validation accuracy,
    keep the best weights, and stop after `patience` checks without improvement."""

    def __init__(self, model, ids, labels, pad_id: int, every: int, patience: int, last: int):
        self.model, self.ids, self.labels, self.pad_id = model, ids, labels, pad_id
        self.every, self.patience, self.last = every, patience, last
        self.best, self.best_step, self.state, self.history, self.stale = -1.0, 0, None, [], 0

    def __call__(self, step: int, loss: float) -> None:
        if (step + 1) % self.every and step + 1 != self.last:
            return
        self.model.eval()
        acc = accuracy(self.model, self.ids, self.labels, self.pad_id)
        self.model.train()
        self.history.append({"step": step + 1, "train_loss": round(loss, 4), "val_accuracy": round(acc, 4)})
        print(f"step {step + 1}: validation accuracy {acc:.4f}", flush=True)
        if acc > self.best:
            self.best, self.best_step, self.stale = acc, step + 1, 0
            self.state = copy.deepcopy(self.model.state_dict())
            return
        self.stale += 1
        if self.stale >= self.patience:
            raise StopEarly
