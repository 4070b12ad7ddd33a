"""Idea 6: one forward pass of a tiny EncoderDecoder, every tensor in order, down to the loss."""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ...model.models import EncoderDecoder, EncoderDecoderConfig
from .common import ConceptInputError, draw_matrices

TINY = dict(d_model=8, n_head=2, n_layer=1, d_ff=32, max_len=8, dropout=0.0)
TINY_VOCAB = 5
TINY_INIT_STD = 0.4  # GPT-2's 0.02 would make every score ~0 and every attention row uniform
BOS = 0  # the decoder reads BOS then the target shifted right (teacher forcing)

# what each traced tensor is, by the end of its name
STEP_MEANING = {
    "embed": "token embedding + position",
    "src_embed": "source token embedding + position",
    "tgt_embed": "target token embedding + position",
    "q": "queries, split into heads (B, H, T, d_head)",
    "k": "keys, split into heads",
    "v": "values, split into heads",
    "scores": "q kᵀ / √d_head, before the mask",
    "attn": "softmax of the scores (masked): each row sums to 1",
    "weighted": "attn @ v: per head, a weighted average of values",
    "concat": "the heads side by side again (B, T, d_model)",
    "hidden": "feed-forward hidden layer after the activation (d_ff wide)",
    "out": "block output (residual stream)",
    "logits": "unnormalised next-token scores over the vocabulary",
}


def _step(name: str) -> str | None:
    """The textbook step a trace point is shown as, or None for the points the list leaves out (the layer
    norms, the projections' outputs): an embedding's output is named by the embedding, as in the paper."""
    module, _, part = name.rpartition(".")
    if part == "out" and module.endswith("embed"):
        return module
    if part == "out" and not re.fullmatch(r"(encoder|decoder)\.\d+", module):
        return None
    return name if part in STEP_MEANING else None


def tiny_encoder_decoder(seed: int = 0) -> EncoderDecoder:
    """The tracing example's model: d_model 8, 2 heads, 1 layer, d_ff 32, vocabulary 5, untrained,
    its matrices drawn from N(0, TINY_INIT_STD²) so that the numbers are large enough to follow."""
    config = EncoderDecoderConfig(src_vocab_size=TINY_VOCAB, tgt_vocab_size=TINY_VOCAB, **TINY)
    return draw_matrices(EncoderDecoder(config), seed, TINY_INIT_STD)


@dataclass
class TraceStep:
    name: str
    shape: tuple[int, ...]
    values: torch.Tensor
    meaning: str


@dataclass
class TracedRun:
    """One traced forward pass plus its loss.

    decoder_input, targets (B, T); logits, probs (B, T, vocab); p_target (B, T) probability of each target;
    loss (B, T) per-token cross-entropy, loss_smoothed (B, T) the same with label smoothing.
    """

    steps: list[TraceStep]
    src: torch.Tensor
    decoder_input: torch.Tensor
    targets: torch.Tensor
    logits: torch.Tensor
    probs: torch.Tensor
    p_target: torch.Tensor
    loss: torch.Tensor
    loss_smoothed: torch.Tensor
    label_smoothing: float


def _check_ids(ids: torch.Tensor, side: str, vocab: int) -> None:
    """`side`: "source" or "target" (the reason of a refusal names it: "source_ids")."""
    if ids.dim() != 2 or ids.numel() == 0:
        raise ConceptInputError(f"{side} ids must be a table of token ids: one row per batch element")
    if (ids != ids.round()).any() or ids.min() < 0 or ids.max() >= vocab:
        raise ConceptInputError(f"{side} ids must hold whole numbers 0..{vocab - 1}", f"{side}_ids", top=vocab - 1)


def trace_encoder_decoder(model: EncoderDecoder, src: torch.Tensor, targets: torch.Tensor,
                          label_smoothing: float = 0.1) -> TracedRun:
    """Run model(src, [BOS] + targets[:-1]) once with a trace that keeps values.

    src (B, S), targets (B, T) integer ids. Every recorded tensor becomes a step, in the
    order the model computed it; the last steps are the per-token losses.
    """
    cfg = model.config
    _check_ids(src, "source", cfg.src_vocab_size)
    _check_ids(targets, "target", cfg.tgt_vocab_size)
    if src.shape[0] != targets.shape[0]:
        raise ConceptInputError(
            f"source and target need the same batch size, got {src.shape[0]} and {targets.shape[0]}",
            "batch_sizes", source=src.shape[0], target=targets.shape[0])
    if max(src.shape[1], targets.shape[1]) > cfg.max_len:
        raise ConceptInputError(f"sequences may be at most {cfg.max_len} tokens long", "too_long", max_len=cfg.max_len)
    if not 0.0 <= label_smoothing < 1.0:
        raise ConceptInputError(f"label smoothing must lie in [0, 1), got {label_smoothing}")
    src, targets = src.long(), targets.long()
    decoder_input = torch.cat([torch.full_like(targets[:, :1], BOS), targets[:, :-1]], dim=1)
    logits, t = model.run_with_trace(src, decoder_input, names=lambda name: _step(name) is not None)
    flat_logits, flat_targets = logits.view(-1, logits.shape[-1]), targets.view(-1)
    loss = F.cross_entropy(flat_logits, flat_targets, reduction="none").view_as(targets)
    loss_smoothed = F.cross_entropy(flat_logits, flat_targets, reduction="none",
                                    label_smoothing=label_smoothing).view_as(targets)
    probs = logits.softmax(-1)
    p_target = probs.gather(-1, targets[..., None])[..., 0]
    steps = [TraceStep(_step(name), t.shapes[name], t[name], STEP_MEANING[_step(name).rsplit(".", 1)[-1]])
             for name in t.names()]
    steps.append(TraceStep("loss", tuple(loss.shape), loss, "per-token cross-entropy −log p(target)"))
    steps.append(TraceStep("loss_smoothed", tuple(loss.shape), loss_smoothed,
                           f"per-token cross-entropy with label smoothing {label_smoothing:g}"))
    return TracedRun(steps, src, decoder_input, targets, logits, probs, p_target, loss, loss_smoothed,
                     label_smoothing)
