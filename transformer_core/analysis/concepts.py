"""The textbook's key ideas as small experiments run on this package's own classes.

Lesson: six ideas every transformer course repeats, each checked numerically on
the real code rather than drawn from memory:

1. self-attention is a weighted average of value vectors (`attend`);
2. dividing scores by √d keeps softmax out of saturation, where its gradient vanishes;
3. attention ignores order: without positions an encoder is permutation-equivariant
   and a mean-pooled classifier permutation-invariant (`EncoderClassifier`);
4. positions are vectors added to tokens: the sinusoidal formula, or learned rows;
5. heads split the width, they add no parameters (`MultiHeadAttention`);
6. one forward pass of a tiny `EncoderDecoder`, every tensor in order, down to the loss.

Each function returns plain data (tensors, rows) that the Concepts tab draws; it
does the math through the core so a picture can never disagree with the model.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn

from ..model import trace
from ..model.attention import MultiHeadAttention, attend
from ..model.layers import sinusoidal_encoding
from ..model.models import EncoderClassifier, EncoderClassifierConfig, EncoderDecoder, EncoderDecoderConfig, TransformerConfig
from ..device import device_of


class ConceptInputError(ValueError):
    """An experiment's input (a matrix typed by hand, a size, a token id) is unusable; the message says why."""


@torch.no_grad()
def _draw_matrices(model: nn.Module, seed: int, std: float) -> nn.Module:
    """Redraw every weight matrix (and embedding table) from N(0, std²) with a private generator,
    so the same seed gives the same model even while other requests use torch's global RNG.
    Biases and LayerNorms keep their fixed initial values (zeros, ones)."""
    g = torch.Generator().manual_seed(seed)
    for p in model.parameters():
        if p.dim() >= 2:
            p.copy_(torch.randn(p.shape, generator=g) * std)
    return model.eval()


# 1. self-attention is a weighted average ------------------------------------------------

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def parse_matrix(text: str, name: str, max_rows: int = 8, max_cols: int = 8) -> torch.Tensor:
    """Rows of numbers, one row per line, separated by spaces or commas -> (rows, cols) float tensor."""
    rows = []
    for line_no, line in enumerate((text or "").strip().splitlines(), start=1):
        cells = [c for c in re.split(r"[,\s;]+", line.strip()) if c]
        if not cells:
            continue
        bad = [c for c in cells if not _NUMBER.fullmatch(c)]
        if bad:
            raise ConceptInputError(f"{name}, line {line_no}: {bad[0]!r} is not a number")
        rows.append([float(c) for c in cells])
    if not rows:
        raise ConceptInputError(f"{name} is empty: type one row of numbers per line, e.g. '1 0'")
    widths = {len(r) for r in rows}
    if len(widths) > 1:
        raise ConceptInputError(f"{name}: every line needs the same number of values, got {sorted(widths)}")
    if len(rows) > max_rows or len(rows[0]) > max_cols:
        raise ConceptInputError(f"{name}: at most {max_rows} rows of {max_cols} values, got {len(rows)}x{len(rows[0])}")
    m = torch.tensor(rows)
    if not torch.isfinite(m).all() or m.abs().max() > 1e3:
        raise ConceptInputError(f"{name}: values must be finite and at most 1000 in size")
    return m


@dataclass
class WeightedAverage:
    """Self-attention over n vectors, with every intermediate.

    x (n, d) inputs; q, k (n, d_k); v (n, d_v); scores (n, n) what softmax saw;
    attn (n, n) rows sum to 1; y (n, d_v) = attn @ v, each output a weighted average of the v rows.
    """

    x: torch.Tensor
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    scores: torch.Tensor
    attn: torch.Tensor
    y: torch.Tensor
    scaled: bool


def _single_head(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scaled: bool):
    """Run `attend` on (n, d) matrices as one batch of one head: (scores, attn, out).

    `attend` always divides by √d_k; for the unscaled textbook version softmax(q kᵀ)
    the queries are multiplied by √d_k first, which undoes that division exactly.
    """
    d_k = q.shape[-1]
    q_in = q if scaled else q * math.sqrt(d_k)
    with trace.recording(keep_values=True) as t:
        out, attn = attend(q_in[None, None], k[None, None], v[None, None], need_weights=True, name="concept")
    return t.values["concept.scores"][0, 0], attn[0, 0], out[0, 0]


def self_attention_average(x, w_q=None, w_k=None, w_v=None, scaled: bool = False) -> WeightedAverage:
    """Self-attention of the rows of x (n, d). Without projections q = k = v = x (the
    parameter-free version, weights softmax(x xᵀ)); with them q = x W_q, k = x W_k, v = x W_v."""
    given = [w is not None for w in (w_q, w_k, w_v)]
    if any(given) and not all(given):
        raise ConceptInputError("give all three of W_q, W_k, W_v, or none of them")
    if all(given):
        for w, name in ((w_q, "W_q"), (w_k, "W_k"), (w_v, "W_v")):
            if w.shape[0] != x.shape[1]:
                raise ConceptInputError(f"{name} needs {x.shape[1]} rows (one per input dimension), got {w.shape[0]}")
        if w_q.shape[1] != w_k.shape[1]:
            raise ConceptInputError(
                f"W_q and W_k need the same number of columns, got {w_q.shape[1]} and {w_k.shape[1]}")
        q, k, v = x @ w_q, x @ w_k, x @ w_v
    else:
        q = k = v = x
    scores, attn, y = _single_head(q, k, v, scaled)
    return WeightedAverage(x, q, k, v, scores, attn, y, scaled)


# 2. why divide by √d ------------------------------------------------------------------

SCALING_DIMS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def softmax_jacobian_norm(attn: torch.Tensor) -> torch.Tensor:
    """Frobenius norm of softmax's Jacobian diag(p) - p pᵀ at each row p of attn (..., n) -> (...).

    Near 0 when softmax is saturated (one weight ~1): gradients through it vanish.
    """
    jacobian = torch.diag_embed(attn) - attn[..., :, None] * attn[..., None, :]
    return jacobian.flatten(-2).norm(dim=-1)


@dataclass
class ScalingPoint:
    """For one d: per query, the largest weight and the softmax gradient size, with and without 1/√d.

    q (n_queries, d) and k (n_keys, d) are the random vectors; the keys double as values.
    """

    d: int
    q: torch.Tensor
    k: torch.Tensor
    max_weight: dict[str, torch.Tensor]  # "scaled" | "unscaled" -> (n_queries,)
    grad_norm: dict[str, torch.Tensor]  # same keys -> (n_queries,)
    attn: dict[str, torch.Tensor]  # same keys -> (n_queries, n_keys)


def scaling_point(d: int, n_keys: int = 16, n_queries: int = 256, seed: int = 0) -> ScalingPoint:
    """Random queries and keys with N(0, 1) entries of dimension d, through `attend` both ways."""
    if not 1 <= d <= 4096 or not 2 <= n_keys <= 256 or not 1 <= n_queries <= 4096:
        raise ConceptInputError("need 1 <= d <= 4096, 2 <= keys <= 256, 1 <= queries <= 4096")
    g = torch.Generator().manual_seed(seed * 100_003 + d)
    q, k = torch.randn(n_queries, d, generator=g), torch.randn(n_keys, d, generator=g)
    point = ScalingPoint(d, q, k, {}, {}, {})
    for label, scaled in (("scaled", True), ("unscaled", False)):
        _, attn, _ = _single_head(q, k, k, scaled)
        point.attn[label] = attn
        point.max_weight[label] = attn.max(dim=-1).values
        point.grad_norm[label] = softmax_jacobian_norm(attn)
    return point


def scaling_sweep(dims=SCALING_DIMS, n_keys: int = 16, n_queries: int = 256, seed: int = 0) -> list[ScalingPoint]:
    return [scaling_point(d, n_keys, n_queries, seed) for d in sorted(set(dims))]


# 3. attention ignores order -------------------------------------------------------------

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
    return _draw_matrices(EncoderClassifier(config), seed, std=0.02)  # GPT-2's scale


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
        raise ConceptInputError(f"{len(ids)} tokens is more than this model's {model.config.max_len} positions")
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


# 4. positions ---------------------------------------------------------------------------

def position_similarity(pe: torch.Tensor) -> torch.Tensor:
    """Dot products between position vectors: (n, d) -> (n, n)."""
    return pe @ pe.T


def sinusoidal_positions(n_positions: int, d_model: int) -> torch.Tensor:
    """The sinusoidal table of `layers.sinusoidal_encoding`, checked sizes: (n_positions, d_model)."""
    if not 1 <= n_positions <= 2048 or not 2 <= d_model <= 1024 or d_model % 2:
        raise ConceptInputError("need 1..2048 positions and an even d_model of 2..1024")
    return sinusoidal_encoding(n_positions, d_model)


def learned_positions(model: nn.Module, n_positions: int | None = None) -> torch.Tensor | None:
    """A model's learned position table (n_positions, d_model), or None if it has none.
    For an encoder-decoder, the encoder's (source) table."""
    for stack in ("embed", "src_embed"):
        pos = getattr(getattr(model, stack, None), "pos", None)
        if pos is not None:
            return pos.weight.detach().float().cpu()[:n_positions]
    return None


# 5. multi-head costs nothing extra --------------------------------------------------------

def _numel(*modules: nn.Module) -> int:
    return sum(p.numel() for m in modules for p in m.parameters())


@dataclass
class HeadCount:
    """Parameters of one MultiHeadAttention layer; total is sum(p.numel()) of the real module."""

    n_head: int
    d_head: int
    qkv: int
    out: int
    total: int


def head_parameter_counts(d_model: int, heads=(1, 2, 4, 8), bias: bool = True) -> list[HeadCount]:
    """Build real attention layers of width d_model with each head count and count their parameters."""
    if not 1 <= d_model <= 4096:
        raise ConceptInputError(f"d_model must lie in 1..4096, got {d_model}")
    bad = [h for h in heads if h < 1 or d_model % h]
    if bad:
        raise ConceptInputError(f"d_model={d_model} must be divisible by every head count; {bad} do not divide it")
    rows = []
    for n_head in heads:
        config = TransformerConfig(d_model=d_model, n_head=n_head, d_ff=d_model, bias=bias)
        layer = MultiHeadAttention(config)
        rows.append(HeadCount(n_head, config.d_head, _numel(layer.w_q, layer.w_k, layer.w_v), _numel(layer.w_o),
                              _numel(layer)))
    return rows


@dataclass
class ComponentCount:
    """Parameters of one component, summed over layers ("layers.*.ff" covers every layer's ff)."""

    component: str
    tensors: int
    params: int
    shared_with: str = ""  # a tied tensor counted once, under the name it appears first


def component_of(param_name: str) -> str:
    """'layers.3.self_attn.w_q.weight' -> 'layers.*.self_attn'; 'embed.tok.weight' -> 'embed.tok'."""
    parts = param_name.split(".")[:-1]
    if len(parts) >= 3 and parts[1].isdigit():
        return f"{parts[0]}.*.{parts[2]}"
    return ".".join(parts[:2])


def parameter_table(model: nn.Module) -> list[ComponentCount]:
    """Per-component parameter counts; rows sum to sum(p.numel() for p in model.parameters())."""
    rows: dict[str, ComponentCount] = {}
    first_name: dict[int, str] = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        row = rows.setdefault(component_of(name), ComponentCount(component_of(name), 0, 0))
        if id(p) in first_name:  # a tied weight (e.g. the LM head reuses the token embedding)
            row.shared_with = first_name[id(p)]
            continue
        first_name[id(p)] = name
        row.tensors += 1
        row.params += p.numel()
    return list(rows.values())


# 6. tracing the tensors ---------------------------------------------------------------------

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


def tiny_encoder_decoder(seed: int = 0) -> EncoderDecoder:
    """The tracing example's model: d_model 8, 2 heads, 1 layer, d_ff 32, vocabulary 5, untrained,
    its matrices drawn from N(0, TINY_INIT_STD²) so that the numbers are large enough to follow."""
    config = EncoderDecoderConfig(src_vocab_size=TINY_VOCAB, tgt_vocab_size=TINY_VOCAB, **TINY)
    return _draw_matrices(EncoderDecoder(config), seed, TINY_INIT_STD)


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


def _check_ids(ids: torch.Tensor, name: str, vocab: int) -> None:
    if ids.dim() != 2 or ids.numel() == 0:
        raise ConceptInputError(f"{name} must be a table of token ids: one row per batch element")
    if (ids != ids.round()).any() or ids.min() < 0 or ids.max() >= vocab:
        raise ConceptInputError(f"{name} must hold whole numbers 0..{vocab - 1}")


def trace_encoder_decoder(model: EncoderDecoder, src: torch.Tensor, targets: torch.Tensor,
                          label_smoothing: float = 0.1) -> TracedRun:
    """Run model(src, [BOS] + targets[:-1]) once with a trace that keeps values.

    src (B, S), targets (B, T) integer ids. Every recorded tensor becomes a step, in the
    order the model computed it; the last steps are the per-token losses.
    """
    cfg = model.config
    _check_ids(src, "source ids", cfg.src_vocab_size)
    _check_ids(targets, "target ids", cfg.tgt_vocab_size)
    if src.shape[0] != targets.shape[0]:
        raise ConceptInputError(
            f"source and target need the same batch size, got {src.shape[0]} and {targets.shape[0]}")
    if max(src.shape[1], targets.shape[1]) > cfg.max_len:
        raise ConceptInputError(f"sequences may be at most {cfg.max_len} tokens long")
    if not 0.0 <= label_smoothing < 1.0:
        raise ConceptInputError(f"label smoothing must lie in [0, 1), got {label_smoothing}")
    src, targets = src.long(), targets.long()
    decoder_input = torch.cat([torch.full_like(targets[:, :1], BOS), targets[:, :-1]], dim=1)
    logits, t = model.run_with_trace(src, decoder_input, keep_values=True)
    flat_logits, flat_targets = logits.view(-1, logits.shape[-1]), targets.view(-1)
    loss = F.cross_entropy(flat_logits, flat_targets, reduction="none").view_as(targets)
    loss_smoothed = F.cross_entropy(flat_logits, flat_targets, reduction="none",
                                    label_smoothing=label_smoothing).view_as(targets)
    probs = logits.softmax(-1)
    p_target = probs.gather(-1, targets[..., None])[..., 0]
    steps = [TraceStep(name, shape, t.values[name], STEP_MEANING.get(name.rsplit(".", 1)[-1], ""))
             for name, shape in t.shapes.items()]
    steps.append(TraceStep("loss", tuple(loss.shape), loss, "per-token cross-entropy −log p(target)"))
    steps.append(TraceStep("loss_smoothed", tuple(loss.shape), loss_smoothed,
                           f"per-token cross-entropy with label smoothing {label_smoothing:g}"))
    return TracedRun(steps, src, decoder_input, targets, logits, probs, p_target, loss, loss_smoothed,
                     label_smoothing)
