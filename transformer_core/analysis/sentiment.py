"""Sentiment with an encoder: a verdict, and which tokens drove it.

Lesson: a sequence classifier reads every token at once (no causal mask), pools
the encoder's output vectors into one and maps it to class scores. To ask *why*
it decided, two different questions can be asked of the same forward pass:

* each token's share of the verdict: the log-odds ln(P(positive) / P(negative)) split
  into one signed number per token that add up to it exactly (+ pushes positive).
  Hold this pass's attention weights, LayerNorm scales and GELU gates fixed and the
  network is linear in what it adds up: the token and position vectors and the bias
  terms. So gradient x input of that linear network is an exact decomposition
  (conservative propagation, "LRP for transformers"). A token's share is its vector's
  part plus the bias terms added at its position; what is left is the head's bias,
  the verdict's starting point when every share is zero: shares + bias = log-odds;
* attention rollout: how much of each input token ends up, through all layers'
  attention and residual paths, in the pooled vector? (unsigned: where it read).

They often disagree, which is itself the lesson: attention is not explanation.
Integrated gradients would also add up, but on a 12-layer encoder it needs dozens of
passes for its integral to close (16 steps still leave a tenth of the log-odds over),
where this needs one.
"""

from __future__ import annotations

import math
from contextvars import ContextVar
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .readouts import attention_rollout, pad_batch
from ..model.layers import MultiHeadAttention
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
    shares: each token's share of the log-odds (they sum to log_odds - base); rollout: each token's
    share of the pooled vector; attn: (n_layer, n_head, T, T); log_odds: ln(P(positive) / P(negative));
    base: the head's bias, the log-odds when every share is zero; truncated: tokens past max_len cut off.
    """

    probs: dict[str, float]
    tokens: list
    shares: torch.Tensor
    rollout: torch.Tensor
    attn: torch.Tensor
    truncated: int
    log_odds: float
    base: float


# While log_odds_shares runs a pass (in this thread or task): the bias-carrying outputs it has seen, each with
# its bias. None elsewhere: the hooks below then change nothing, so other requests on the same model are untouched.
_TAKEN: ContextVar[list | None] = ContextVar("log_odds_shares", default=None)


def _gate(module: nn.Module, x: torch.Tensor) -> torch.Tensor | None:
    """act(x) / x as a tensor of x's shape, for the activations that are x times a gate; None for others."""
    if isinstance(module, nn.ReLU):
        return (x > 0).to(x.dtype)
    if isinstance(module, nn.GELU) and module.approximate == "tanh":
        return 0.5 * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    if isinstance(module, nn.GELU):
        return 0.5 * (1 + torch.erf(x / math.sqrt(2)))
    return None


def _held_fixed(module: nn.Module, args: tuple, out: torch.Tensor):
    """Forward hook: during log_odds_shares, the same output with its input-dependent scale held fixed (a
    LayerNorm's standard deviation, an activation's gate), so the pass is linear in its inputs and biases; a
    bias-carrying output is noted with its bias."""
    taken = _TAKEN.get()
    if taken is None:
        return None
    x = args[0]
    if isinstance(module, nn.LayerNorm):
        centred = x - x.mean(-1, keepdim=True)
        scale = torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + module.eps).detach()
        out = centred / scale * module.weight + module.bias  # equal to `out`; only its gradient differs
    elif not isinstance(module, nn.Linear):
        out = x * _gate(module, x).detach()
    if getattr(module, "bias", None) is not None:
        taken.append((out, module.bias))
    return out


def _hold_fixed(model) -> None:
    """Put the hook on every LayerNorm, activation and biased projection below the head, once per model."""
    if getattr(model, "_shares_hooked", False):
        return
    for module in model.modules():
        linear = isinstance(module, nn.Linear) and module.bias is not None and module is not model.head
        if isinstance(module, nn.LayerNorm) or linear or _gate(module, torch.ones(1)) is not None:
            module.register_forward_hook(_held_fixed)
    model._shares_hooked = True


def log_odds_shares(model, idx: torch.Tensor, lengths: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """One forward and one backward pass: (logits (B, n_class), shares (B, T)), where each row's shares plus the
    head's bias (`base`) sum to its log-odds logits[:, 1] - logits[:, 0].

    idx: (B, T), right-padded to `lengths` (B,) when given (padding gets 0: nothing reads it). The attention
    weights are held fixed by edits at their trace points, the LayerNorm scales and activation gates by hooks
    that act only inside this call (a context variable), so concurrent requests on the same model are untouched.
    """
    _hold_fixed(model)
    leaves = {}

    def leaf(name: str):
        def take(x: torch.Tensor) -> torch.Tensor:
            if x.dim() == 2:  # the positions' (T, d_model) table, the same for every row: one copy per row
                x = x.expand(idx.shape[0], -1, -1)
            leaves[name] = x.detach().clone().requires_grad_(True)
            return leaves[name]
        return take

    fixed = {f"{m.trace_name}.attn": torch.Tensor.detach for m in model.modules() if isinstance(m, MultiHeadAttention)}
    taken = []
    token = _TAKEN.set(taken)
    try:
        with torch.enable_grad(), editing({**fixed, "embed.tok": leaf("tok"), "embed.pos": leaf("pos")}):
            logits = model(idx, lengths)
    finally:
        _TAKEN.reset(token)
    inputs = list(leaves.values())
    # autograd.grad, not backward(): the shared model's parameters get no .grad
    grads = torch.autograd.grad((logits[:, 1] - logits[:, 0]).sum(), [*inputs, *(out for out, _ in taken)],
                                allow_unused=True)
    shares = sum((g * x).sum(-1) for g, x in zip(grads, inputs))  # (B, T): the token and position vectors' parts
    for g, (_, bias) in zip(grads[len(inputs):], taken):
        if g is not None:  # a query or key bias reaches the output only through the weights held fixed
            shares = shares + (g * bias).sum(-1)  # the bias terms added at each position
    return logits.detach(), shares.detach().float().cpu()


def base_log_odds(model) -> float:
    """The head's bias as log-odds: where the verdict starts when every token's share is zero."""
    bias = model.head.bias
    return 0.0 if bias is None else float(bias[1].detach() - bias[0].detach())


def explain(model, tokenizer: TextTokenizer, text: str) -> Verdict:
    """Classify `text` and score each token by its share of the verdict and by attention rollout."""
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
    with recording() as trace:  # the pass that takes the shares also leaves the attention weights
        logits, shares = log_odds_shares(model, idx, lengths)
    probs = torch.softmax(logits.float(), -1).tolist()
    margins = (logits[:, 1] - logits[:, 0]).float().tolist()
    base = base_log_odds(model)
    attn = trace.attention("encoder")  # (n_layer, B, n_head, T, T)
    verdicts = []
    for b, (spans, n) in enumerate(zip(read, lengths.tolist())):
        own = attn[:, b, :, :n, :n]  # (n_layer, n_head, T_b, T_b): the padding's rows and columns cut off
        # mean pooling averages the final vectors, so a token's share of the pooled vector
        # is the mean of its column in the last rollout matrix
        rollout = attention_rollout(own)[-1].mean(dim=0)
        verdicts.append(Verdict(dict(zip(LABELS, probs[b])), spans[:max_len], shares[b, :n], rollout, own,
                                max(0, len(spans) - max_len), margins[b], base))
    return verdicts


def mlm_logits(model, h: torch.Tensor) -> torch.Tensor:
    """Masked-token logits from encoder vectors (..., d_model) -> (..., vocab), tied to the input embedding."""
    return F.linear(h, model.embed.tok.weight)
