"""Sentiment with an encoder: a verdict, and which tokens drove it.

Lesson: a sequence classifier reads every token at once (no causal mask), pools
the encoder's output vectors into one and maps it to class scores. To ask *why*
it decided, two different questions can be asked of the same forward pass:

* gradient x input: how much would the positive-minus-negative score move if a
  token's embedding were scaled towards zero? (signed: + pushes positive);
* attention rollout: how much of each input token ends up, through all layers'
  attention and residual paths, in the pooled vector? (unsigned: where it read).

They often disagree, which is itself the lesson: attention is not explanation.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .readouts import attention_rollout, pad_batch
from ..model.trace import editing, recording
from ..tokenization import MASK, PAD, TextTokenizer
from ..device import device_of

LABELS = ("negative", "positive")  # class index -> name; the classifier's n_class is 2


class EmptyTextError(ValueError):
    """A text with nothing to classify (no tokens)."""


def special_ids(tokenizer: TextTokenizer) -> tuple[int, int]:
    """The ([PAD], [MASK]) ids a classifier tokenizer must have."""
    pad, mask = tokenizer.token_to_id(PAD), tokenizer.token_to_id(MASK)
    if pad is None and mask is None:  # a SentencePiece file (XLM-R's, multilingual-e5) spells them so
        pad, mask = tokenizer.token_to_id("<pad>"), tokenizer.token_to_id("<mask>")
    if pad is None or mask is None:
        raise ValueError(f"the tokenizer has no {PAD} / {MASK} token; train it with --corpus reviews")
    return pad, mask


@torch.no_grad()
def predict_proba(model, ids: list[list[int]], pad_id: int, batch_size: int = 256) -> torch.Tensor:
    """Class probabilities (N, n_class) for N token id lists (each at most max_len long)."""
    device = device_of(model)
    out = []
    for start in range(0, len(ids), batch_size):
        x, lengths = pad_batch(ids[start : start + batch_size], pad_id)
        out.append(torch.softmax(model(x.to(device), lengths.to(device)).float(), dim=-1).cpu())
    return torch.cat(out)


def correct(model, ids: list[list[int]], labels: list[int], pad_id: int) -> torch.Tensor:
    """(n,) bool: whether each text's most likely class is its label."""
    return predict_proba(model, ids, pad_id).argmax(-1) == torch.tensor(labels)


def accuracy(model, ids: list[list[int]], labels: list[int], pad_id: int) -> float:
    """Share of texts whose most likely class is the label."""
    return float(correct(model, ids, labels, pad_id).float().mean())


@dataclass(frozen=True)
class Verdict:
    """One text classified and explained, token by token.

    probs: P(class) per name in LABELS; tokens: the token spans read (after truncation);
    grad_x_input, rollout: one score per token; attn: (n_layer, n_head, T, T);
    truncated: how many tokens past max_len were cut off.
    """

    probs: dict[str, float]
    tokens: list
    grad_x_input: torch.Tensor
    rollout: torch.Tensor
    attn: torch.Tensor
    truncated: int


def gradient_x_input(model, idx: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
    """(B, T) per-token scores: d(logit_pos - logit_neg)/d(embedding) . embedding, summed over d_model.

    idx: (B, T), right-padded to `lengths` (B,) when given (padding scores 0: nothing reads it).
    """
    return _read_with_gradient(model, idx, lengths)[1]


def _read_with_gradient(model, idx: torch.Tensor, lengths: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """One forward and one backward pass: (logits (B, n_class), gradient x input (B, T)).

    The rows are independent, so one backward pass of the summed margins gives each row's own gradient.
    The token embeddings are taken at the trace point "embed.tok" by an edit that keeps them as they
    are; edits live in a context variable, so requests running the same model concurrently are not affected.
    """
    captured = {}

    def keep(e: torch.Tensor) -> torch.Tensor:
        captured["e"] = e
        return e

    with torch.enable_grad(), editing({"embed.tok": keep}):
        logits = model(idx, lengths)
    e = captured["e"]
    # autograd.grad, not backward(): the shared model's parameters get no .grad
    (grad,) = torch.autograd.grad((logits[:, 1] - logits[:, 0]).sum(), e)
    return logits.detach(), (grad * e).sum(-1).detach().float().cpu()


def explain(model, tokenizer: TextTokenizer, text: str) -> Verdict:
    """Classify `text` and score each token by gradient x input and by attention rollout."""
    return explain_each(model, tokenizer, [text])[0]


def explain_each(model, tokenizer: TextTokenizer, texts: list[str], tokens: list | None = None) -> list[Verdict]:
    """`explain` for several texts in one padded batch: each verdict is the one its text gets alone
    (to float rounding), since the padding mask hides the padding from every query and from the pooling.
    `tokens`: each text's `tokenizer.tokens`, when the caller has them already (a text is tokenized once)."""
    read = []
    for i, text in enumerate(texts):
        spans = tokenizer.tokens(text) if tokens is None else tokens[i]
        if all(s.start == s.end for s in spans):  # nothing, or only the [CLS] and [SEP] a BERT tokenizer adds
            raise EmptyTextError("the text has no tokens")
        read.append(spans)
    max_len = model.config.max_len
    device = device_of(model)
    idx, lengths = pad_batch([[s.id for s in spans[:max_len]] for spans in read], tokenizer.token_to_id(PAD) or 0)
    idx, lengths = idx.to(device), lengths.to(device)
    with recording() as trace:  # the pass that takes the gradient also leaves the attention weights
        logits, scores = _read_with_gradient(model, idx, lengths)
    probs = torch.softmax(logits.float(), -1).tolist()
    attn = trace.attention("encoder")  # (n_layer, B, n_head, T, T)
    verdicts = []
    for b, (spans, n) in enumerate(zip(read, lengths.tolist())):
        own = attn[:, b, :, :n, :n]  # (n_layer, n_head, T_b, T_b): the padding's rows and columns cut off
        # mean pooling averages the final vectors, so a token's share of the pooled vector
        # is the mean of its column in the last rollout matrix
        rollout = attention_rollout(own)[-1].mean(dim=0)
        verdicts.append(Verdict(dict(zip(LABELS, probs[b])), spans[:max_len], scores[b, :n], rollout, own,
                                max(0, len(spans) - max_len)))
    return verdicts


def mlm_logits(model, h: torch.Tensor) -> torch.Tensor:
    """Masked-token logits from encoder vectors (..., d_model) -> (..., vocab), tied to the input embedding."""
    return F.linear(h, model.embed.tok.weight)
