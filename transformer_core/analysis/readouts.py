"""Readouts: numbers computed *from* a model's outputs, shared by the tabs that draw them.

Lesson: attention weights of one layer say where a token reads from in that
layer only; information then flows on through the residual stream and later
layers. Attention rollout (Abnar & Zuidema, 2020) follows it through the whole
stack: add the identity for the residual path, renormalise each row, and multiply
the layers' matrices. The per-token loss says, token by token, how surprised a
language model is; a mask that lets it read the answer drives it to zero, a mask
it was never trained with drives it up.

Everything here is model maths, not drawing: views receive these tensors. `pad_batch` is the
one right-padding helper the batched readings (here, sentiment, documents) share.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..decoding.generation import Chooser, context_window, greedy_choice, next_token_logits
from ..model.masks import build_mask
from ..model.trace import recording
from ..device import device_of


def pad_batch(sequences: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad token id lists: -> ids (B, T_max), lengths (B,)."""
    lengths = torch.tensor([len(s) for s in sequences])
    ids = torch.full((len(sequences), int(lengths.max())), pad_id, dtype=torch.long)
    for row, s in enumerate(sequences):
        ids[row, : len(s)] = torch.tensor(s, dtype=torch.long)
    return ids, lengths


def attention_rollout(attn: torch.Tensor) -> torch.Tensor:
    """Rollout after each layer: attn (n_layer, n_head, T, T) -> (n_layer, T, T).

    Layer l's matrix is the head average plus the identity (the residual
    connection carries each token's own vector on), rows renormalised to sum to 1;
    entry [l] is the product A_l @ ... @ A_0, so row i of the last entry says how
    much of each input token ends up in token i's final vector. Rows sum to 1.
    """
    n_layer, _, T, Tk = attn.shape
    if T != Tk:
        raise ValueError(f"rollout needs self-attention (T x T), got {T} x {Tk}")
    eye = torch.eye(T, dtype=attn.dtype)
    rollout, out = eye, []
    for layer in attn:
        a = layer.mean(dim=0) + eye
        a = a / a.sum(dim=-1, keepdim=True)
        rollout = a @ rollout
        out.append(rollout)
    return torch.stack(out)


def token_losses(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy per position: logits (T, vocab), ids (T,) -> (T-1,) nats.

    Entry t is -log p(ids[t+1] | what position t could see).
    """
    return F.cross_entropy(logits[:-1].float(), ids[1:], reduction="none")


def top_predictions(logits: torch.Tensor, k: int = 5) -> tuple[torch.Tensor, torch.Tensor]:
    """The k most likely next tokens at each position: logits (..., vocab) -> (probs (..., k), ids (..., k))."""
    probs = torch.softmax(logits.float(), dim=-1)
    top = torch.topk(probs, min(k, probs.shape[-1]))
    return top.values, top.indices


@torch.no_grad()
def mean_loss(model, ids: list[int]) -> float:
    """Mean next-token loss (nats/token) of a language model on the last max_len of `ids`, causal mask."""
    if len(ids) < 2:
        raise ValueError("a loss needs at least two tokens: one to read and one to predict")
    window = torch.tensor(ids[-model.config.max_len:], device=device_of(model))
    return float(token_losses(model(window[None])[0], window).mean())


@torch.no_grad()
def greedy_with_mask(model, prompt: list[int], max_new_tokens: int, mask_kind: str = "causal") -> list[int]:
    """Greedy continuation recomputing the whole window each step under one mask kind.

    For models trained with an unusual mask (the cheating demo's "none"), this runs
    them the way they were trained; the KV cache assumes a causal model. The window is
    the one every decoding path reads (`generation.context_window`).
    """
    ids, device = list(prompt), device_of(model)
    for _ in range(max_new_tokens):
        window = ids[-context_window(len(ids), model.config.max_len):]
        logits = model(torch.tensor([window], device=device), mask=build_mask(mask_kind, len(window)))
        ids.append(int(logits[0, -1].argmax()))
    return ids[len(prompt):]


@dataclass
class GenerationAttention:
    """What a language model looked at while it generated, one row per new token.

    ids: prompt + generated ids; n_prompt: how many of them are the prompt;
    rows[s]: (n_layer, n_head, n_prompt + s) — the attention of the position
    whose logits chose generated token s, over every position up to it.
    """

    ids: list[int]
    n_prompt: int
    rows: list[torch.Tensor]

    @property
    def generated(self) -> list[int]:
        return self.ids[self.n_prompt:]


@torch.no_grad()
def attention_while_generating(model, prompt: list[int], max_new_tokens: int,
                               choose: Chooser = greedy_choice) -> GenerationAttention:
    """Generate with the KV cache, tracing each step; keep the deciding query's attention row.

    prompt + max_new_tokens must fit in model.config.max_len (no cache refill).
    """
    if not prompt:
        raise ValueError("generation needs a prompt of at least one token")
    if len(prompt) + max_new_tokens > model.config.max_len:
        raise ValueError(f"{len(prompt)} prompt tokens + {max_new_tokens} new ones exceed the "
                         f"model's context of {model.config.max_len}")
    ids, cache, rows = list(prompt), None, []
    for _ in range(max_new_tokens):
        with recording() as trace:
            logits, cache = next_token_logits(model, ids, cache)
        rows.append(trace.attention("decoder")[:, 0, :, -1, :])  # last query: (n_layer, n_head, Tk)
        token, _ = choose(logits, ids)
        ids.append(token)
    return GenerationAttention(ids, len(prompt), rows)


def attention_of_each(model, sequences: list[list[int]], pad_id: int = 0) -> list[torch.Tensor]:
    """Self-attention weights (n_layer, n_head, T_b, T_b) of each token sequence, from one padded forward pass.

    Sequences are right-padded to the longest. A language model reads only the past, so a sequence's
    tokens never read the padding after it; a classifier is told each length, and its padding mask
    hides the padding. So each sequence's weights are those it gets alone, to float rounding.
    """
    arch = model.config.arch
    if arch not in ("DecoderLM", "EncoderClassifier"):
        raise ValueError(f"one padded pass reads a language model or a classifier, not a {arch}")
    ids, lengths = pad_batch(sequences, pad_id)
    ids = ids.to(device_of(model))
    # the stacks only: the output head's logits (a 4,096-word vocabulary per position) are not wanted here
    with recording() as trace, torch.no_grad():
        if arch == "DecoderLM":
            model.hidden(ids)
        else:
            model.encode(ids, lengths.to(ids.device))
    attn = trace.attention("decoder" if arch == "DecoderLM" else "encoder")  # (n_layer, B, n_head, T, T)
    return [attn[:, b, :, :n, :n] for b, n in enumerate(lengths.tolist())]
