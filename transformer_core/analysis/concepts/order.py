"""Idea 3: attention ignores order. Without positions an encoder is permutation-equivariant and a mean-pooled
classifier permutation-invariant; with them, shuffling the words changes the verdict."""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from torch import nn

from ...model.models import EncoderClassifier, EncoderClassifierConfig
from ...device import device_of
from .common import ConceptInputError, draw_matrices

def without_positions(model: nn.Module) -> nn.Module:
    """The same model with positions switched off: same class, config positions="none",
    every weight copied except the position table."""
    twin = type(model)(replace(model.config, positions="none"))
    state = {name: t for name, t in model.state_dict().items() if not name.endswith("embed.pos.weight")}
    twin.load_state_dict(state, strict=True)  # strict: nothing else may differ
    return twin.to(device_of(model)).eval()


def random_classifier(vocab_size: int, seed: int = 0) -> EncoderClassifier:
    """A small untrained classifier (learned positions, mean pooling) for when no trained one is shipped.

    The same seed gives the same weights, also when requests run side by side."""
    config = EncoderClassifierConfig(vocab_size=vocab_size, d_model=64, n_head=4, n_layer=2, d_ff=128,
                                     dropout=0.0, max_len=128, positions="learned")
    return draw_matrices(EncoderClassifier(config), seed, std=0.02)  # GPT-2's scale


def shuffled_order(n_words: int, seed: int = 0) -> list[int]:
    """A seeded shuffle of range(n_words) that moves at least one word (when n_words > 1)."""
    order = torch.randperm(n_words, generator=torch.Generator().manual_seed(seed)).tolist()
    if n_words > 1 and order == sorted(order):
        order = order[1:] + order[:1]
    return order


def token_permutation(word_lengths: list[int], word_order: list[int]) -> list[int]:
    """Shuffling words moves their tokens as blocks: position i of the shuffled
    sequence holds token perm[i] of the original."""
    if sorted(word_order) != list(range(len(word_lengths))):
        raise ConceptInputError(f"word order must be a permutation of 0..{len(word_lengths) - 1}, got {word_order}")
    starts = [sum(word_lengths[:w]) for w in range(len(word_lengths))]
    return [starts[w] + j for w in word_order for j in range(word_lengths[w])]


@dataclass
class OrderVariant:
    """One model on the sentence and its shuffle.

    h, h_shuffled: (T, d_model) encoder outputs; mismatch (T,) = |h_shuffled[i] - h[perm[i]]|,
    zero for every i when the encoder is permutation-equivariant; probs (n_class,) verdicts.
    """

    name: str
    h: torch.Tensor
    h_shuffled: torch.Tensor
    mismatch: torch.Tensor
    probs: torch.Tensor
    probs_shuffled: torch.Tensor


@torch.no_grad()
def order_experiment(model: EncoderClassifier, ids: list[int], perm: list[int]) -> list[OrderVariant]:
    """Encode ids and ids[perm] with positions off and on; compare outputs position by position."""
    if sorted(perm) != list(range(len(ids))):
        raise ConceptInputError("perm must be a permutation of the token positions")
    if len(ids) > model.config.max_len:
        raise ConceptInputError(f"{len(ids)} tokens is more than this model's {model.config.max_len} positions",
                                "more_tokens_than_positions", n=len(ids), max_len=model.config.max_len)
    device = device_of(model)
    x = torch.tensor([ids], device=device)
    x_shuffled = x[:, perm]
    variants = []
    for name, m in (("no positions", without_positions(model)), ("with positions", model)):
        h, h_shuffled = m.encode(x)[0].float().cpu(), m.encode(x_shuffled)[0].float().cpu()
        variants.append(OrderVariant(
            name, h, h_shuffled, (h_shuffled - h[perm]).norm(dim=-1),
            m(x).softmax(-1)[0].float().cpu(), m(x_shuffled).softmax(-1)[0].float().cpu(),
        ))
    return variants
