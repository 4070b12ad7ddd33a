"""What a head does: find the head behind a link, switch heads off, read the layers, name the roles.

Lesson: the attention grid shows where each head looks; four questions go further.
* Which head links token A to token B? Rank every head by its weight at (A, B),
  read from the run already traced (no new forward pass).
* Does that head matter? Switch it off (its output replaced by zero, or by its mean
  output: "ablation" in the papers) and measure the damage; the importance map does it for every
  head, one head per batch row, so a whole map costs a few batched forward passes.
* What does the model think after each layer? The logit lens (nostalgebraist, 2020)
  reads each layer's residual stream through the final LayerNorm and the
  unembedding. Early layers were never trained to be read that way, so their
  guesses are a hint, not what the model "believes".
* What kinds of head are there? Scores on a random token sequence repeated twice
  (Olsson et al., 2022): previous-token heads look one back, first-token heads sink
  into position 0, duplicate-token heads look at the same token's earlier copy and
  induction heads at the token *after* it: the one that came next last time.

A head is named (group, layer, head) with the trace's groups: "encoder", "decoder",
"cross". Everything here is model maths; views receive these objects.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F

from ..device import device_of, on_two_cores
from ..model import trace
from ..model.layers import MultiHeadAttention
from ..model.models import DecoderLM, EncoderClassifier, EncoderDecoder
from ..model.trace import Trace

SWITCH_OFF_MODES = ("zero", "mean")  # what a switched-off head writes: 0, or its mean output
ROLES = ("previous-token", "first-token", "duplicate-token", "induction")
# A role is named when a head puts at least this share of its attention on the role's
# key, averaged over the queries the role is defined for. Uniform attention over the
# ~100 keys of a repeated sequence puts ~0.02 there, so 0.4 means the head singles it out.
ROLE_THRESHOLD = 0.4
COUNT_ROWS = 32  # rows of a slice whose logits are compared with the answer's at once (see _read_out)
LENS_CHUNK = 2**24  # logits the logit lens holds at once (64 MB of float32)
# From this many logits (rows x vocabulary) the lens multiplies in bfloat16 where the CPU has it (see _lens_dtype),
# then reads in float32 each row's LENS_EXACT best candidates and the answer
LENS_BF16_FROM = 2**22
LENS_EXACT = 16
LENS_SPLIT_FROM = 2**24  # logits from which a CPU lens reads its vocabulary in two halves at once (see _read_vocab)
LENS_BF16_KEEP = 2**25  # weights of an unembedding the lens keeps a bfloat16 copy of (64 MB; see _bf16_copy)


class HeadError(ValueError):
    """A head, position or option that the model or the run does not have."""


# A head's name: "L5 H11", or with its group, "cross L1 H0". The JavaScript that reads a clicked
# label uses this same pattern (ui/heads.py), so the page and the core parse one form.
HEAD_NAME = r"(?:(encoder|decoder|cross)\s+)?L\s*(\d+)\s*H\s*(\d+)"
MAX_INDEX_DIGITS = 6  # of a layer or head number: no model has a million layers


@dataclass(frozen=True, order=True)
class Head:
    group: str  # "encoder", "decoder" (self-attention) or "cross"
    layer: int
    head: int

    def __str__(self) -> str:
        """The full name, "decoder L5 H11": says the group whatever the model."""
        return f"{self.group} L{self.layer} H{self.head}"

    def name(self, groups: Sequence[str]) -> str:
        """The name in a model whose attention groups are `groups`: the group is written only where the
        model has several ("L5 H11" in a language model, "cross L1 H0" in a translator)."""
        return str(self) if len(groups) > 1 else f"L{self.layer} H{self.head}"

    @classmethod
    def parse(cls, text: str, group: str) -> Head:
        """A head from its name, short or full (any case, spaces optional); `group` where the name has none."""
        m = re.fullmatch(HEAD_NAME, str(text).strip(), re.IGNORECASE)
        if m is None or max(len(m.group(2)), len(m.group(3))) > MAX_INDEX_DIGITS:  # int() refuses 5,000 digits
            raise HeadError(f"{str(text).strip()[:80]!r} is not a head's name; write it as \"L5 H11\" or \"cross L1 H0\"")
        return cls((m.group(1) or group).lower(), int(m.group(2)), int(m.group(3)))


def attention_layers(model) -> dict[str, list[str]]:
    """group -> the module paths of its attention layers, in layer order ("layers.0.self_attn", ...)."""
    layers: dict[str, list[str]] = {}
    for module in model.modules():
        if isinstance(module, MultiHeadAttention):
            layers.setdefault(module.trace_group, []).append(module.trace_name)
    return layers


def all_heads(model) -> list[Head]:
    """Every head of the model, group by group, layer by layer."""
    H = model.config.n_head
    return [Head(g, l, h) for g, paths in attention_layers(model).items() for l in range(len(paths)) for h in range(H)]


# --- switching heads off -----------------------------------------------------------------


@torch.no_grad()
def head_means(model, **inputs) -> dict[str, torch.Tensor]:
    """Each attention layer's head outputs averaged over batch rows and query positions.

    inputs: what the model's forward takes (idx=... or src=..., tgt=...), unpadded.
    Returns module path -> (H, d_head). Switching off to the mean replaces a head's output, at every
    position, by this one vector: "what the head usually says" on these inputs, without
    what it says at each position. In a causal model the mean includes later positions.
    """
    paths = [p for group in attention_layers(model).values() for p in group]
    _, run = model.run_with_trace(**inputs, names=[f"{p}.weighted" for p in paths])
    return {p: run[f"{p}.weighted"].mean(dim=(0, 2)) for p in paths}


def _switch(keep: torch.Tensor, mean: torch.Tensor | None) -> trace.Edit:
    """Keep head h of batch row r where keep[r, h] == 1; elsewhere write 0 or the head's mean."""

    def change(out: torch.Tensor) -> torch.Tensor:  # out: (B, H, T, d_head)
        k = keep.to(out.device, out.dtype)[:, :, None, None]  # (B or 1, H, 1, 1)
        if mean is None:
            return out * k
        return out * k + (1 - k) * mean.to(out.device, out.dtype)[None, :, None, :]

    return change


def _switch_off_edits(model, rows: list[list[Head]], mode: str, means: dict | None) -> dict[str, trace.Edit]:
    """The trace edits that switch off the heads rows[r] in batch row r; a single row
    applies to every batch row."""
    if mode not in SWITCH_OFF_MODES:
        raise HeadError(f"switch-off mode must be one of {SWITCH_OFF_MODES}, got {mode!r}")
    if mode == "mean" and means is None:
        raise HeadError("switching off to the mean needs the heads' means: head_means(model, ...) on a reference text")
    layers, H = attention_layers(model), model.config.n_head
    keep = {p: torch.ones(len(rows), H) for paths in layers.values() for p in paths}
    for r, heads in enumerate(rows):
        for head in heads:
            if head.group not in layers or not 0 <= head.layer < len(layers[head.group]) or not 0 <= head.head < H:
                raise HeadError(f"the model has no head {head}; it has groups {sorted(layers)}, "
                                f"{model.config.n_layer} layers and {H} heads per layer")
            keep[layers[head.group][head.layer]][r, head.head] = 0.0
    # only layers with a head off are edited: the others run exactly as with every head on
    return {f"{p}.weighted": _switch(k, None if mode == "zero" else means[p])
            for p, k in keep.items() if (k == 0).any()}


@contextmanager
def switch_off(model, heads: Iterable[Head], mode: str = "zero", means: dict[str, torch.Tensor] | None = None):
    """Run `model` with `heads` switched off, on the fast and the inspect path alike, with or
    without a KV cache: zero writes 0 as their output, mean writes `means` (see head_means)."""
    with trace.editing(_switch_off_edits(model, [list(heads)], mode, means)):
        yield


# --- the importance map ------------------------------------------------------------------


@dataclass(frozen=True)
class ImportanceMap:
    """Damage when each head alone is switched off, for one text.

    damage: group -> (n_layer, n_head); positive = the model does worse without the head.
    measure: what the damage is a change of; baseline: that measure with every head on.
    """

    damage: dict[str, torch.Tensor]
    measure: str
    baseline: float
    mode: str

    def ranked(self) -> list[tuple[Head, float]]:
        """Every head, most damaging first."""
        scores = [(Head(g, l, h), float(d[l, h])) for g, d in self.damage.items()
                  for l in range(d.shape[0]) for h in range(d.shape[1])]
        return sorted(scores, key=lambda item: -item[1])


def _score_rows(model, inputs: dict, labels: torch.Tensor | None, rows: int, copies: int | None = None) -> torch.Tensor:
    """Run `rows` copies of one example: how well the model does in each row (higher is
    better, so damage = row 0's score - a row's). LM: minus the mean next-token loss;
    classifier: log p of each class (rows, n_class); translator: the target's log-likelihood.
    `copies`: the rows the input is copied into (default `rows`; 1 where the heads' edits make the rows: they
    broadcast along the batch)."""
    copies = rows if copies is None else copies
    logp = torch.log_softmax(model(**{name: x.expand(copies, -1) for name, x in inputs.items()}).float(), -1)
    if isinstance(model, EncoderClassifier):
        return logp
    if isinstance(model, DecoderLM):
        logp = logp[:, :-1]  # the last position predicts past the text
    picked = logp.gather(-1, labels.expand(rows, -1)[..., None])[..., 0]  # (rows, T): log p of each next token
    return picked.mean(-1) if isinstance(model, DecoderLM) else picked.sum(-1)


MEASURES = {DecoderLM: "mean next-token loss increase (nats)",
            EncoderClassifier: "drop in log p of the predicted label",
            EncoderDecoder: "drop in the target's log-likelihood (nats)"}


def _check_ids(ids: torch.Tensor, vocab_size: int, what: str) -> None:
    if ids.numel() and not (0 <= int(ids.min()) and int(ids.max()) < vocab_size):
        raise HeadError(f"{what} ids must lie in 0..{vocab_size - 1}, the model's vocabulary")


def _inputs(model, ids, target) -> tuple[dict, torch.Tensor | None]:
    """The forward pass's inputs for one example, (1, T) each, and the next tokens it is scored on."""
    device = device_of(model)
    ids = torch.as_tensor(ids, device=device).reshape(1, -1)
    if isinstance(model, EncoderDecoder):
        if target is None:
            raise HeadError("a translator's importance map needs the target ids (<s> ... </s>)")
        target = torch.as_tensor(target, device=device).reshape(1, -1)
        _check_ids(ids, model.config.src_vocab_size, "source")
        _check_ids(target, model.config.tgt_vocab_size, "target")
        if ids.shape[1] < 1 or target.shape[1] < 2:
            raise HeadError("a translator needs a source and a target of at least <s> and one token")
        return {"src": ids, "tgt": target[:, :-1]}, target[:, 1:]  # read <s> ..., predict ... </s>
    if ids.shape[1] < (2 if isinstance(model, DecoderLM) else 1):
        raise HeadError("the text is too short: a language model's loss needs two tokens, a classifier one")
    _check_ids(ids, model.config.vocab_size, "token")
    return {"idx": ids}, ids[:, 1:] if isinstance(model, DecoderLM) else None


@torch.no_grad()
def importance_map(model, ids, target=None, mode: str = "zero", batch_rows: int = 64) -> ImportanceMap:
    """Switch each head off alone and measure the damage on one text.

    ids: the text's token ids (a translator's source ids); target: a translator's target
    ids, <s> ... </s>. Language models: increase of the mean next-token loss; classifiers:
    drop in log p of the label predicted with every head on; translators: drop in the
    target's log-likelihood. One head is switched off per batch row (row 0: none), so each
    forward pass measures up to batch_rows heads at once. Mode "mean" uses the heads' means
    over this text's positions.

    A head of block l changes nothing before it: in a model of one stack, each pass measures one layer's heads and
    reads blocks 0..l-1 once, for one row; the heads' edits in block l make it a row per head, as they broadcast
    along the batch (SmolLM2's 270 heads: 4,620 block-rows instead of 8,130).
    """
    inputs, labels = _inputs(model, ids, target)
    means = head_means(model, **inputs) if mode == "mean" else None
    heads, one_stack = all_heads(model), not isinstance(model, EncoderDecoder)
    if one_stack:
        by_layer = [[[h] for h in heads if h.layer == layer] for layer in range(model.config.n_layer)]
        passes = [chunk for rows in ([[], *by_layer[0]], *by_layer[1:]) for chunk in _chunks(rows, batch_rows)]
    else:  # an encoder's head changes every position the decoder reads: each row runs whole
        passes = _chunks([[], *([h] for h in heads)], batch_rows, device_of(model))

    def scored(chunk: list) -> torch.Tensor:
        with trace.editing(_switch_off_edits(model, chunk, mode, means)):  # each thread's own edits (a context var)
            return _score_rows(model, inputs, labels, len(chunk), copies=1 if one_stack else len(chunk))

    # the passes are independent: on a CPU they are read on a core each, the largest (from block 0) first
    score = torch.cat(on_two_cores(scored, passes))
    if isinstance(model, EncoderClassifier):  # the label the intact model predicts
        score = score[:, int(score[0].argmax())]
    damage = (score[0] - score[1:]).cpu()
    layers, H = attention_layers(model), model.config.n_head
    by_group, at = {}, 0
    for group, paths in layers.items():
        by_group[group] = damage[at : at + len(paths) * H].reshape(len(paths), H)
        at += len(paths) * H
    baseline = -float(score[0]) if isinstance(model, DecoderLM) else float(score[0])  # an LM's: its loss
    return ImportanceMap(by_group, MEASURES[type(model)], baseline, mode)


def _chunks(rows: list, batch_rows: int, device: torch.device | None = None) -> list[list]:
    """`rows` in passes of at most batch_rows; with a CPU `device`, in two passes at least (a core each)."""
    size = min(batch_rows, -(-len(rows) // 2)) if device is not None and device.type == "cpu" else batch_rows
    return [rows[start : start + size] for start in range(0, len(rows), size)]


# --- which head links A to B -------------------------------------------------------------


@dataclass(frozen=True)
class HeadRanking:
    """Every head ranked by the weight its query `query` puts on key `key` (or keys, summed).

    weights: (n_layer, n_head); ranked: (head, weight), largest first; mean: over all heads.
    """

    query: int
    key: int | Sequence[int]
    weights: torch.Tensor
    ranked: list[tuple[Head, float]]
    mean: float


def _group_of(run: Trace, group: str | None) -> str:
    if group is None:
        self_groups = [g for g in run.groups if g != "cross"]
        if len(self_groups) != 1:
            raise HeadError(f"say which attention group to rank: {run.groups}")
        return self_groups[0]
    if group not in run.groups:
        raise HeadError(f"no attention recorded for {group!r}; recorded groups: {run.groups}")
    return group


def rank_heads(run: Trace, query: int, key: int | Sequence[int], group: str | None = None,
               row: int = 0) -> HeadRanking:
    """Rank the heads of one traced run by attention from position `query` to position `key`.

    key may be several positions (a word cut into several tokens): the weight is their sum.
    Re-slices the recorded weights (no forward pass). group defaults to the run's one
    self-attention group; row is the batch row.
    """
    group = _group_of(run, group)
    return rank_attention(run.attention(group)[:, row], query, key, group)


def rank_attention(attn: torch.Tensor, query: int, key: int | Sequence[int], group: str) -> HeadRanking:
    """`rank_heads` on one group's weights already sliced to one row: attn (n_layer, H, Tq, Tk)."""
    Tq, Tk = attn.shape[-2:]
    keys = [key] if isinstance(key, int) else list(key)
    if not (0 <= query < Tq and keys and all(0 <= k < Tk for k in keys)):
        raise HeadError(f"positions must be a query in 0..{Tq - 1} and keys in 0..{Tk - 1}, got ({query}, {key})")
    return rank_by(attn[:, :, query, keys].sum(-1), group, query, key)


def rank_by(weights: torch.Tensor, group: str, query: int = -1, key: int | Sequence[int] = -1) -> HeadRanking:
    """Every head ranked by its weight in `weights` (n_layer, H): one link's, or the mean of several links'."""
    order = torch.argsort(weights.flatten(), descending=True).tolist()
    H = weights.shape[1]
    ranked = [(Head(group, i // H, i % H), float(weights.flatten()[i])) for i in order]
    return HeadRanking(query, key, weights, ranked, float(weights.mean()))


# --- the logit lens ----------------------------------------------------------------------


@dataclass(frozen=True)
class LogitLens:
    """A decoder LM's next-token guess read after each layer, for one text.

    Row 0 is the embedding, row l the output of block l (so n_layer + 1 rows), each read
    through the final LayerNorm and the unembedding; all tensors are (n_layer + 1, T).
    top_ids, top_probs: the most likely next token and its probability;
    final_rank, final_probs: the rank (0 = top) and probability, in each row's guess, of
    the model's final prediction at that position.
    """

    top_ids: torch.Tensor
    top_probs: torch.Tensor
    final_rank: torch.Tensor
    final_probs: torch.Tensor


@torch.no_grad()
def logit_lens(model, run: Trace, row: int = 0) -> LogitLens:
    """The logit lens of a DecoderLM's traced run (run_with_trace): reads the run's residual
    streams, so no new pass through the blocks. Its last row is the model's output."""
    if not isinstance(model, DecoderLM):
        raise HeadError(f"the logit lens reads a decoder language model, not a {type(model).__name__}")
    if "decoder" not in run.hidden or run.logits is None:
        raise HeadError("the run has no residual streams or logits: trace it with run_with_trace")
    device, unembed = device_of(model), model.head.weight  # (vocab, d_model)
    # (n_layer + 1, T, d_model), back in the residual stream's dtype, the final norm's (a trace keeps float32): the
    # norm reads what the model's did. Not the unembedding's: the real LLMs keep their matrices float16 and their
    # stream float32, and Gemma's stream at the first token outgrows float16 (the lens read NaN there)
    stream = torch.stack([h[row] for h in run.hidden["decoder"]]).to(device, next(model.norm.parameters()).dtype)
    L, T, d_model = stream.shape
    logits = run.logits[row].to(device)  # (T, vocab): the model's output, read from the last stream
    final = logits.argmax(-1)  # (T,) the model's prediction
    # the embedding and every block but the last at every position, one row each, read in one go
    x = model.norm(stream[:-1]).float().reshape((L - 1) * T, d_model)
    answer = final.repeat(L - 1)
    answer_logit = (x * unembed[answer].float()).sum(-1)
    layers = _read_rows(x, unembed, answer, answer_logit)
    final_logit = logits.gather(-1, final[:, None])[:, 0]
    output = _finish(_read_out([(0, logits.clone())], final, final_logit), final_logit)
    return LogitLens(*(torch.cat([a.reshape(L - 1, T), b[None]]).cpu() for a, b in zip(layers, output)))


def _read_rows(x: torch.Tensor, unembed: torch.Tensor, answer: torch.Tensor, answer_logit: torch.Tensor):
    """_finish's figures for rows x (N, d_model), in bfloat16 with a float32 check where that is faster."""
    if _lens_dtype(x, unembed) == torch.bfloat16:
        return _read_out_bf16(x, unembed, answer, answer_logit)
    return _finish(_read_vocab(x, unembed, answer, answer_logit), answer_logit)


def _lens_dtype(x: torch.Tensor, unembed: torch.Tensor) -> torch.dtype:
    """bfloat16 for a large lens on a CPU that multiplies it natively (AVX-512 BF16, AMX): four times float32's
    speed there (a 30-layer lens of 28 tokens against SmolLM2's 49,152 tokens: 0.8 s in float32 on one core,
    0.2 s in bfloat16); float32 otherwise (on a GPU, or where bfloat16 would be emulated, slower than float32)."""
    native = x.device.type == "cpu" and getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: False)()
    return torch.bfloat16 if native and len(x) * unembed.shape[0] >= LENS_BF16_FROM else torch.float32


def _vocab_slices(x: torch.Tensor, unembed: torch.Tensor, dtype: torch.dtype = torch.float32,
                  vocab: range | None = None):
    """Rows x (N, d_model) read through the unembedding (vocab, d_model) a slice of the vocabulary at a time,
    multiplied in `dtype`: yields (the slice's first id, its logits (N, slice), in `dtype`), over the ids `vocab`
    (all of them by default). The (N, vocab) logits are never all held (Gemma's 262k tokens), and the matrix is
    read once; never in float16, which a CPU multiplies several times slower than float32."""
    vocab = range(unembed.shape[0]) if vocab is None else vocab
    per = max(1, LENS_CHUNK // len(x))
    x = x.to(dtype)
    for start in range(vocab.start, vocab.stop, per):
        yield start, x @ unembed[start:min(start + per, vocab.stop)].to(dtype).T


class _Tally(NamedTuple):
    """What _read_out gathers from a part of the vocabulary, per row: the top logit and its id, the count of
    logits above the answer's, the log of the softmax's normaliser over the part, and (with `keep`) the part's
    `keep` best logits and their ids."""

    top_id: torch.Tensor
    top: torch.Tensor
    rank: torch.Tensor
    log_total: torch.Tensor
    best_k: torch.Tensor | None
    best_k_id: torch.Tensor | None


def _read_out(slices, answer: torch.Tensor, answer_logit: torch.Tensor, keep: int = 0) -> _Tally:
    """The _Tally of rows whose answer (N,) has the logit `answer_logit` (N,), from the rows' logits given a slice
    of the vocabulary at a time (first id, (N, slice)), each overwritten once read."""
    tally = None
    for start, logits in slices:
        if keep:  # the slice's best `keep`; the first is the slice's top
            best_k, best_k_id = logits.topk(min(keep, logits.shape[1]), -1)
            best_k, best_k_id = best_k.float(), best_k_id + start
            best, best_id = best_k[:, 0], best_k_id[:, 0]
        else:
            best, best_id = logits.max(-1)
            best_k = best_k_id = None
            best_id = best_id + start
        # compared in the slice's own dtype (a bfloat16 slice read as float32 would be copied whole)
        bar = answer_logit.to(logits.dtype)
        # counted in int32 (int64 is slower), a few rows at a time: the count copies its rows to int32, and a
        # whole slice's copy is 64 MB of fresh memory each time
        rank = torch.empty_like(answer, dtype=torch.int32)
        for rows in range(0, len(logits), COUNT_ROWS):
            part = slice(rows, rows + COUNT_ROWS)
            rank[part] = (logits[part] > bar[part, None]).sum(-1, dtype=torch.int32)
        # the answer never outranks itself (its logit in the slice may differ from answer_logit in the last bit)
        here = answer - start
        inside = (here >= 0) & (here < logits.shape[1])
        rank -= (inside & (logits.gather(-1, here.clamp(0, logits.shape[1] - 1)[:, None])[:, 0] > bar)).int()
        # last, as it overwrites the slice: its softmax terms, summed in place (logsumexp copies the slice twice; a
        # bfloat16 sum adds in float32 and rounds the total, 30x faster than asking for a float32 result)
        terms = logits.sub_(best.to(logits.dtype)[:, None]).exp_().sum(-1).float()
        part = _Tally(best_id, best.float(), rank, best.float() + terms.log(), best_k, best_k_id)
        tally = part if tally is None else _merge(tally, part, keep)
    return tally


def _merge(a: _Tally, b: _Tally, keep: int) -> _Tally:
    """The _Tally of two parts of the vocabulary, `a`'s ids before `b`'s (a tie keeps `a`'s top, as argmax would)."""
    best_k, best_k_id = b.best_k, b.best_k_id
    if keep:
        values, ids = torch.cat([a.best_k, b.best_k], -1), torch.cat([a.best_k_id, b.best_k_id], -1)
        best_k, where = values.topk(min(keep, values.shape[1]), -1)
        best_k_id = ids.gather(-1, where)
    return _Tally(torch.where(b.top > a.top, b.top_id, a.top_id), torch.maximum(a.top, b.top), a.rank + b.rank,
                  torch.logaddexp(a.log_total, b.log_total), best_k, best_k_id)


def _read_vocab(x: torch.Tensor, unembed: torch.Tensor, answer: torch.Tensor, answer_logit: torch.Tensor,
                dtype: torch.dtype = torch.float32, keep: int = 0) -> _Tally:
    """The _Tally of rows x (N, d_model) over the whole vocabulary. A large one on a CPU reads the vocabulary's two
    halves on a core each: they are independent, and each core converts only its half of a float16 matrix
    (halving the rows instead made both convert all of Gemma's 168M weights)."""
    vocab = unembed.shape[0]
    if x.device.type == "cpu" and vocab >= 2 and len(x) * vocab >= LENS_SPLIT_FROM:
        halves = [range(0, vocab // 2), range(vocab // 2, vocab)]
        parts = on_two_cores(lambda ids: _read_out(_vocab_slices(x, unembed, dtype, ids), answer, answer_logit, keep),
                             halves)
        return _merge(*parts, keep)
    return _read_out(_vocab_slices(x, unembed, dtype), answer, answer_logit, keep)


def _finish(tally: _Tally, answer_logit: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Each row's top token and its probability, and the rank (0 = top) and probability of its answer."""
    return (tally.top_id, torch.exp(tally.top - tally.log_total), tally.rank,
            torch.exp(answer_logit - tally.log_total))


def _read_out_bf16(x: torch.Tensor, unembed: torch.Tensor, answer: torch.Tensor, answer_logit: torch.Tensor):
    """_finish's figures from a bfloat16 product, with what the page states read in float32: each row's
    LENS_EXACT best candidates are multiplied again in float32, so the top token is float32's (its true top is
    a candidate unless more than LENS_EXACT tokens lie within twice the product's error bound of the bfloat16
    top: such a row is read in float32 whole), and so are the answer's logit and the candidates' share of the
    normaliser. The rest of the normaliser and a rank beyond the candidates are bfloat16's: a probability within
    about 1 % of float32's, a rank off by at most the tokens whose logit lies within the error bound of the
    answer's (on SmolLM2's and Gemma's lens of three texts: probabilities within 0.004, ranks beyond the
    candidates within 20 %, on a log axis)."""
    top_id, top, rank, log_total, best_k, best_k_id = _read_vocab(
        x, _bf16_copy(unembed), answer, answer_logit, torch.bfloat16, keep=LENS_EXACT)
    ids, where = torch.unique(best_k_id, return_inverse=True)  # the rows share most candidates
    exact = (x @ unembed[ids].float().T).gather(-1, where)  # (N, keep) the candidates' float32 logits
    exact_top, at = exact.max(-1)
    # the candidates' count redone in float32 (they were counted against the answer's logit in bfloat16); the
    # answer is never counted against itself
    bar, others = answer_logit.to(torch.bfloat16).float()[:, None], best_k_id != answer[:, None]
    rank = rank - ((best_k > bar) & others).sum(-1) + ((exact > answer_logit[:, None]) & others).sum(-1)
    top_id = best_k_id.gather(-1, at[:, None])[:, 0]
    rank = torch.where(top_id == answer, 0, rank.clamp(min=1)).int()
    # the normaliser: the candidates' bfloat16 terms swapped for their float32 ones (the rest is relative to top)
    rest = (torch.exp(log_total - top) - torch.exp(best_k - top[:, None]).sum(-1)).clamp(min=0)
    log_total = top + torch.log(rest + torch.exp(exact - top[:, None]).sum(-1))
    top_p, answer_p = torch.exp(exact_top - log_total), torch.exp(answer_logit - log_total)
    unsure = best_k[:, -1] >= top - 2 * _bf16_error(x, unembed, top) if best_k.shape[1] == LENS_EXACT else None
    if unsure is not None and unsure.any():  # read those rows in float32, whole
        again = _finish(_read_vocab(x[unsure], unembed, answer[unsure], answer_logit[unsure]), answer_logit[unsure])
        for figure, value in zip((top_id, top_p, rank, answer_p), again):
            figure[unsure] = value.to(figure.dtype)
    return top_id, top_p, rank, answer_p


def _bf16_error(x: torch.Tensor, unembed: torch.Tensor, logit: torch.Tensor) -> torch.Tensor:
    """A bound on |float32 logit - bfloat16 logit| per row (N,): each input and weight rounded to bfloat16 (a
    relative 2^-9 each, bounded by Cauchy-Schwarz with the largest row of the unembedding), a float32 sum of
    d_model products, and the result rounded to bfloat16 (a relative 2^-9 of a logit as large as `logit`)."""
    return (2**-8 + x.shape[1] * 2**-23) * x.norm(dim=-1) * _largest_row(unembed) + 2**-9 * logit.abs()


_LARGEST_ROWS: dict[int, torch.Tensor] = {}  # by the matrix's id, dropped with the matrix
_BF16_COPIES: dict[int, torch.Tensor] = {}  # likewise


def _bf16_copy(unembed: torch.Tensor) -> torch.Tensor:
    """A float16 unembedding (a real LLM's, never trained in place) in bfloat16, kept while the matrix lives when it
    holds at most LENS_BF16_KEEP weights (SmolLM2's tied 49,152 x 576: 57 MB; Gemma's 262,144 x 640 would be
    336 MB, so it is converted a slice at a time instead): converting the matrix again for every lens cost a
    tenth of the lens. Any other matrix is given back as it is (a float32 one may be trained between two lenses)."""
    if unembed.dtype != torch.float16 or unembed.numel() > LENS_BF16_KEEP:
        return unembed
    key = id(unembed)
    if key not in _BF16_COPIES:
        _BF16_COPIES[key] = unembed.to(torch.bfloat16)
        weakref.finalize(unembed, _BF16_COPIES.pop, key, None)
    return _BF16_COPIES[key]


def _largest_row(unembed: torch.Tensor) -> torch.Tensor:
    """The largest L2 norm of a row of the unembedding, kept while the matrix lives (reading Gemma's 168M float16
    weights as float32 for it took as long as the lens)."""
    key = id(unembed)
    if key not in _LARGEST_ROWS:
        per = max(1, LENS_CHUNK // unembed.shape[1])
        _LARGEST_ROWS[key] = max(unembed[start:start + per].float().norm(dim=-1).max()
                                 for start in range(0, len(unembed), per))
        weakref.finalize(unembed, _LARGEST_ROWS.pop, key, None)
    return _LARGEST_ROWS[key]


# --- head roles --------------------------------------------------------------------------


def repeated_random_tokens(n: int, vocab: Iterable[int], batch: int = 4, seed: int = 0) -> torch.Tensor:
    """`batch` sequences of n tokens drawn uniformly from `vocab`, each repeated twice: (batch, 2n).
    The standard probe for induction heads: the second half is predictable only by copying."""
    choices = torch.as_tensor(list(vocab))
    if n < 2 or len(choices) < 2:
        raise HeadError("a repeated random sequence needs n >= 2 tokens from at least two ids")
    g = torch.Generator().manual_seed(seed)
    half = choices[torch.randint(len(choices), (batch, n), generator=g)]
    return torch.cat([half, half], dim=1)


@dataclass(frozen=True)
class HeadRoles:
    """Role scores of every self-attention head on a random sequence repeated twice.

    scores[role][group]: (n_layer, n_head), the mean attention a query puts on its role's key:
      previous-token  key i-1 (every query i >= 1)
      first-token     key 0   (every query i >= 1): an attention sink
      duplicate-token key i-n (second-half queries): the same token's earlier copy
      induction       key i-n+1 (second-half queries): the token that followed that copy
    losses: a language model's per-token loss over the sequence (2n-1,), averaged over the
    batch: it drops in the second half when the model copies (induction), else None.
    """

    scores: dict[str, dict[str, torch.Tensor]]
    n: int
    losses: torch.Tensor | None
    threshold: float = ROLE_THRESHOLD

    def labels(self) -> list[tuple[Head, str, float]]:
        """(head, role, score) for every score at or above the threshold, highest first."""
        found = [(Head(g, l, h), role, float(s[l, h])) for role, by_group in self.scores.items()
                 for g, s in by_group.items() for l, h in (s >= self.threshold).nonzero().tolist()]
        return sorted(found, key=lambda item: -item[2])


def _stripe(attn: torch.Tensor, back: int) -> torch.Tensor:
    """attn[..., i, i - back] for every query i >= back: (..., T - back)."""
    return torch.diagonal(attn, offset=-back, dim1=-2, dim2=-1)


@torch.no_grad()
def head_roles(model, tokens: torch.Tensor) -> HeadRoles:
    """Score every self-attention head for the four ROLES on `tokens` (B, 2n), a sequence
    repeated twice (repeated_random_tokens). One traced forward pass. A translator reads
    the tokens as its source and as its target."""
    B, T = tokens.shape
    n = T // 2
    if T % 2 or not torch.equal(tokens[:, :n], tokens[:, n:]):
        raise HeadError("head roles need a sequence repeated twice: (B, 2n) with both halves equal")
    if T > model.config.max_len:
        raise HeadError(f"2n = {T} tokens exceed the model's context of {model.config.max_len}")
    vocab = min(model.config.src_vocab_size, model.config.tgt_vocab_size) if isinstance(model, EncoderDecoder) \
        else model.config.vocab_size
    _check_ids(tokens, vocab, "token")
    tokens = tokens.to(device_of(model))
    inputs = {"src": tokens, "tgt": tokens} if isinstance(model, EncoderDecoder) else {"idx": tokens}
    logits, run = model.run_with_trace(**inputs)
    scores = {role: {} for role in ROLES}
    for group in run.groups:
        if group == "cross":  # roles are about a sequence reading itself
            continue
        attn = run.attention(group)  # (n_layer, B, H, T, T)
        scores["previous-token"][group] = _stripe(attn, 1).mean(dim=(1, 3))
        scores["first-token"][group] = attn[..., 1:, 0].mean(dim=(1, 3))
        scores["duplicate-token"][group] = _stripe(attn, n).mean(dim=(1, 3))
        scores["induction"][group] = _stripe(attn, n - 1)[..., 1:].mean(dim=(1, 3))
    losses = None
    if isinstance(model, DecoderLM):
        losses = F.cross_entropy(logits[:, :-1].float().transpose(1, 2), tokens[:, 1:], reduction="none").mean(0)
    return HeadRoles(scores, n, None if losses is None else losses.cpu())
