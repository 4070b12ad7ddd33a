"""Inside a real LLM (the "Inside an LLM" tab): what changed since GPT-2, and the information flow to a token.

Each experiment reads a text through the one reading path and runs a model once (or twice, when it compares two
passes), from transformer_core.analysis.modern and .flow; runs are cached, so a lecture hall asking for the
same experiment computes it once. The experiments run on the real LLMs (SmolLM2 by default; Gemma 3 for the
sliding window), beside the Shakespeare LM where a 2017-style model answers differently; the information flow
runs on any decoder language model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from i18n import Message
from transformer_core import device_of
from transformer_core.analysis import flow as core_flow, modern

from . import llms, models, reading, store
from .cache import RunCache
from .policy import InputError, clamp, notice

LEARNED_LM = "shakespeare-lm"  # a 2017-style decoder: learned positions, LayerNorm, one key/value head per head
SMOLLM2, GEMMA3 = llms.SMOLLM2.name, llms.GEMMA3.name
MAX_TOKENS = 64  # the experiments draw a layer x token picture of one text
FLOW_MAX_TOKENS = 40  # the flow graph weighs every (head, source, target) of every layer: 40 tokens of 30 x 9 heads
MAX_SHIFT = 1000
# a text longer than Gemma 3's window of 512 tokens, written out so that the experiment needs no corpus
REACH_TEXT = " ".join([
    "Once upon a time there was a lighthouse keeper who lived alone on a rock far out in the sea.",
    "Every evening he climbed the stairs, lit the lamp and watched the ships pass in the dark.",
    "One winter a storm broke the windows, and the keeper worked all night to keep the light burning.",
    "In the morning a small boat arrived with bread, letters from his sister and a cat that nobody wanted.",
] * 9)
_runs: RunCache = RunCache(size=32)


def _read(name: str, text: str | None, limit: int):
    """(model, tokenizer, Reading) of a text as checkpoint `name` reads it, at most `limit` tokens."""
    text, cut = reading.prepare(name, text, Message("inside.type_text"))
    net, tokenizer = models.load(name)
    read = reading.read(name, tokenizer, text, limit, min_tokens=2, offered=models.choices(arch="DecoderLM"))
    return net, tokenizer, read, notice(cut, read.notice)


def _lm(model: str | None, default: str) -> str:
    return models.resolve(model or default, arch="DecoderLM")


@dataclass(frozen=True)
class Rotary:
    offset: int
    change: dict[str, np.ndarray]  # model name -> (n_layer,) largest weight change when read `offset` later
    notice: str


def rotary(text: str | None, offset) -> Rotary:
    """The largest change of each layer's attention weights when the text is read `offset` positions later, for
    SmolLM2 (rotary) and the Shakespeare LM (learned positions: the text moved stays within its 256)."""
    notices: list[str] = []
    offset = clamp(offset, 1, MAX_SHIFT, Message("inside.setting.offset"), notices)
    change, said = {}, []
    for name in (SMOLLM2, LEARNED_LM):
        net, _, read, cut = _read(name, text, MAX_TOKENS)
        shift = min(offset, net.config.max_len - len(read.ids))  # the text must still fit the positions it has
        if shift != offset:
            said.append(Message("inside.shift_capped", model=name, max_len=net.config.max_len, shift=shift))
        change[name] = _runs.get(models.key(name, tuple(read.ids), "shift", shift),
                                 lambda: modern.shift_change(net, read.ids, shift))
        said.append(cut)
    return Rotary(offset, change, notice(*notices, *dict.fromkeys(said)))


@dataclass(frozen=True)
class SharedHeads:
    """The query heads that read one key/value head, on one text."""

    name: str
    layer: int
    kv: int
    heads: list[int]
    attn: np.ndarray  # (len(heads), T, T)
    labels: list[str]
    notice: str


def kv_cache() -> dict[str, tuple[int, int]]:
    """Each real LLM's KV-cache bytes a token: (with its shared key/value heads, with one per query head), from its
    config (no weights read); an LLM not made yet is left out."""
    out = {}
    for name in (SMOLLM2, GEMMA3):
        try:
            config = models.load(name)[0].config
        except InputError:
            continue
        out[name] = modern.kv_cache_bytes(config)
    return out


def shared_heads(text: str | None, layer) -> SharedHeads:
    """SmolLM2's query heads that share key/value head 0 of `layer`, side by side."""
    from . import attention  # the Attention tab's run: the same text and model are read once for both tabs

    run = attention.attention_run(SMOLLM2, text)
    notices: list[str] = []
    layer = clamp(layer, 0, run.shape[0] - 1, Message("setting.layer"), notices)
    heads = list(range(run.group_size))
    return SharedHeads(SMOLLM2, layer, 0, heads, run.attn[layer, heads], run.q_labels, notice(run.notice, *notices))


@dataclass(frozen=True)
class Sink:
    name: str
    share: np.ndarray  # (n_layer,)
    before: list[tuple[str, float]]  # the top next tokens as the model reads the text
    after: list[tuple[str, float]]  # the same with the first token's share of attention taken away
    notice: str


def sink(model: str | None, text: str | None) -> Sink:
    name = _lm(model, SMOLLM2)
    net, tokenizer, read, cut = _read(name, text, MAX_TOKENS)

    def compute():
        _, trace = net.run_with_trace(torch.tensor([read.ids], device=device_of(net)))
        before, after = modern.without_first_token(net, read.ids)
        top = lambda p: [(tokenizer.decode([int(i)]), float(p[i])) for i in p.topk(5).indices]  # noqa: E731
        return modern.first_token_share(trace.attention("decoder")[:, 0]), top(before), top(after)

    share, before, after = _runs.get(models.key(name, tuple(read.ids), "sink"), compute)
    return Sink(name, share, before, after, cut)


@dataclass(frozen=True)
class Norms:
    name: str
    mean_over_rms: np.ndarray  # (n_layer, T)
    cosine: np.ndarray  # (n_layer, T)
    labels: list[str]
    notice: str


def norms(model: str | None, text: str | None) -> Norms:
    name = _lm(model, SMOLLM2)
    net, _, read, cut = _read(name, text, MAX_TOKENS)
    means, cosines = _runs.get(models.key(name, tuple(read.ids), "norms"), lambda: modern.norm_difference(net, read.ids))
    return Norms(name, means, cosines, read.labels, cut)


@dataclass(frozen=True)
class Reach:
    n_tokens: int
    mean: np.ndarray  # (n_layer,)
    farthest: np.ndarray  # (n_layer,)
    local_layers: tuple[int, ...]
    window: int


def reach() -> Reach:
    """How far back Gemma 3's layers look from the end of a text longer than its window."""
    net, tokenizer = models.load(GEMMA3)
    ids = tokenizer.encode(REACH_TEXT)

    def compute():
        _, trace = net.run_with_trace(torch.tensor([ids], device=device_of(net)))
        return modern.reach(trace.attention("decoder")[:, 0])

    mean, farthest = _runs.get(models.key(GEMMA3, "reach", len(ids)), compute)
    c = net.config
    return Reach(len(ids), mean, farthest, tuple(i for i in range(c.n_layer) if c.is_local(i)), c.sliding_window)


@dataclass(frozen=True)
class FlowRun:
    name: str
    graph: core_flow.FlowGraph
    labels: list[str]
    notice: str


def flow(model: str | None, text: str | None) -> FlowRun:
    """The information flow graph of a decoder language model's pass over the text (at most FLOW_MAX_TOKENS).
    A real LLM not made yet (in a fresh app's first minutes, or offline) gives way to the shipped LEARNED_LM, and
    the notice says why: the tab opens on SmolLM2, and it showed an error where a graph can be drawn."""
    name, instead = _lm(model, SMOLLM2), ""
    waiting = store.unavailable().get(name) if name in llms.LLMS else None
    if waiting:
        instead = Message("inside.flow_instead", model=models.title(name), why=waiting,
                          instead=models.title(LEARNED_LM))
        name = LEARNED_LM
    net, _, read, cut = _read(name, text, FLOW_MAX_TOKENS)
    graph = _runs.get(models.key(name, tuple(read.ids), "flow"), lambda: core_flow.information_flow(net, read.ids))
    return FlowRun(name, graph, read.labels, notice(instead, cut))


def llms_waiting() -> tuple[str, ...]:
    """The real LLMs not made yet, which `flow` draws LEARNED_LM in place of: a kept flow is kept per this."""
    waiting = store.unavailable()
    return tuple(name for name in llms.LLMS if name in waiting)


LAST = FLOW_MAX_TOKENS - 1  # the token slider's end: the text's last token, however long the text is


def flow_routes(run: FlowRun, token, threshold, notices: list[str] | None = None):
    """(token clamped, threshold clamped, the routes ending in that token's last stream, the graph's heads ranked
    by how much they push the model's prediction there: [(layer, head, push)]). The slider's end means the last
    token."""
    if token == LAST:
        token = len(run.labels) - 1
    token = clamp(token, 0, len(run.labels) - 1, Message("inside.setting.token"), notices)
    try:
        threshold = min(max(float(threshold), 0.005), 0.5)
    except (TypeError, ValueError):
        raise InputError(Message("inside.bad_threshold")) from None
    routes = core_flow.routes(run.graph, token, threshold)
    push = core_flow.direct_push(models.load(run.name)[0], run.graph, token, run.graph.predicted[token])
    heads = sorted({(r.layer, r.head) for r in routes if r.kind == "head"}, key=lambda lh: -push[lh])
    return token, threshold, routes, [(layer, head, float(push[layer, head])) for layer, head in heads]


def predicted(run: FlowRun, token: int) -> str:
    """The model's top next token after position `token`."""
    return models.load(run.name)[1].decode([run.graph.predicted[token]])


def flow_head(run: FlowRun, layer, head, token, notices: list[str] | None = None):
    """(layer, head, token, promoted [(token, logit)], suppressed [(token, logit)]) of one head at one token."""
    n_layer, n_head, T = run.graph.shape
    layer = clamp(layer, 0, n_layer - 1, Message("setting.layer"), notices)
    head = clamp(head, 0, n_head - 1, Message("setting.head"), notices)
    token = clamp(token, 0, T - 1, Message("inside.setting.token"), notices)
    net, tokenizer = models.load(run.name)
    (up, up_v), (down, down_v) = core_flow.head_logits(net, run.graph, layer, head, token)
    words = lambda ids, values: [(tokenizer.decode([i]), v) for i, v in zip(ids, values)]  # noqa: E731
    return layer, head, token, words(up, up_v), words(down, down_v)


def decoders() -> dict[str, str]:
    """The flow's picker: every decoder language model (GPT-2 aside), label -> name."""
    return {label: name for label, name in models.choices(arch="DecoderLM").items() if name != store.GPT2}
