"""What a head does, as use cases: find the head behind a link, switch heads off, read the layers, name the roles.

The model maths is transformer_core.analysis.heads; here a text becomes the runs it reads:
* find_head re-slices the Attention tab's cached AttentionRun (no forward pass): every head
  ranked by the weight from a query token to a key token, named by word or by position;
* switch_off runs the text with chosen heads switched off and says what changed, per kind of
  model (a language model's next-token guesses and per-token loss, a classifier's verdict,
  a translator's output and log-probability); importance switches each head off alone;
* lens reads a language model's layers through its unembedding (the logit lens);
* roles scores every head on a random token sequence repeated twice.
Runs are cached like every deterministic view. Text shown to people is a Message, by id
(the catalogue's "heads.*" ids, i18n/en.json and zh-CN.json).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import torch

from i18n import Message

from transformer_core import (
    HEAD_NAME,
    ROLE_THRESHOLD,
    ROLES,
    SWITCH_OFF_MODES,
    Head,
    HeadError,
    all_heads,
    device_of,
    head_means,
    head_roles,
    importance_map,
    logit_lens,
    rank_attention,
    rank_by,
    repeated_random_tokens,
)
from transformer_core.analysis import heads as core  # its switch_off runs a model; this module's reads a text first
from transformer_core.analysis.sentiment import LABELS
from transformer_core.decoding.seq2seq import Codec, translate

from . import models, reading, store
from .attention import AttentionRun, attention_run
from .cache import RunCache
from .markdown import literal
from .policy import MAX_DRAWN_TOKENS, InputError, notice, quoted, source_text
from .translate import translated

TOP_K = 5  # next-token guesses shown before and after heads are switched off
MOVED = 0.05  # a head's query -> key weight that changed by this much when others were switched off "moved"
ROLE_HALF = 40  # tokens in each half of the repeated random sequence (Olsson et al. use ~50)
ROLE_BATCH = 4

def say(message_id: str, **params) -> Message:
    """A message for a person: English as a string (API, MCP), the reader's language in the UI."""
    return Message(message_id, **params)


# --- naming tokens and heads -------------------------------------------------------------


def _word(label: str) -> str:
    """A token as a person names it: no word-piece marks, no leading space, lower case."""
    return label.replace("##", "").replace("Ġ", "").replace("▁", "").strip().lower()


TOKENS_SHOWN = 12  # of a text's tokens, listed in the message that a word is not among them
MAX_POSITION_DIGITS = 9  # more digits than any text has positions: read as "outside the text", never converted


def _position(digits: str) -> int:
    """A position typed as digits; one of more than MAX_POSITION_DIGITS (5,000 digits, which Python will not
    convert) stands for "far past the end"."""
    return int(digits) if len(digits.lstrip("-")) <= MAX_POSITION_DIGITS else 10**MAX_POSITION_DIGITS


def positions(labels: list[str], token) -> list[int]:
    """The positions a person means by `token`: a position ("10"), a position and its token as a heatmap's
    axis names it ("10: it", what a click on a cell fills in), or a word of the text ("it"), its first
    occurrence, several positions when the tokenizer cut the word into pieces, or the first piece that holds
    it when the tokenizer merged it with its neighbours (它 in the piece 因为它: `inside` says so)."""
    token = str(token if token is not None else "").strip()
    if not token:
        raise InputError(say("heads.no_token"))
    labelled = re.fullmatch(r"(\d+)\s*:(.*)", token, re.DOTALL)
    if labelled and 0 <= _position(labelled.group(1)) < len(labels) \
            and _word(labelled.group(2)) in ("", _word(labels[_position(labelled.group(1))])):
        return [_position(labelled.group(1))]  # else a word with a colon ("3:30"), looked for below
    if re.fullmatch(r"-?\d+", token):
        p = _position(token)
        if not 0 <= p < len(labels):
            raise InputError(say("heads.position_outside", position=p if p < 10**MAX_POSITION_DIGITS else quoted(token),
                                 last=len(labels) - 1))
        return [p]
    word = _word(token)
    pieces = [_word(label) for label in labels]
    for start in range(len(labels)):
        joined = ""
        for end in range(start, len(labels)):
            joined += pieces[end]
            if joined == word:
                return list(range(start, end + 1))
            if not word.startswith(joined) or not joined:
                break
    holder = next((i for i, piece in enumerate(pieces) if word and word in piece), None)
    if holder is not None:
        return [holder]
    shown = ", ".join(f"{i}:{label!r}" for i, label in enumerate(labels[:TOKENS_SHOWN]))
    if len(labels) > TOKENS_SHOWN:
        shown += ", …"
    raise InputError(say("heads.word_missing", word=quoted(token), tokens=shown))


def inside(labels: list[str], at: list[int], token) -> str:
    """A notice when the word `token` is only part of the piece at `at` (see `positions`), else "": no head can
    link the word alone, since the model reads the piece as one token."""
    word, piece = _word(str(token)), "".join(_word(labels[i]) for i in at)
    if word == piece or re.fullmatch(r"-?\d+|(\d+)\s*:.*", str(token).strip(), re.DOTALL):
        return ""
    return say("heads.inside_piece", word=literal(str(token).strip()), piece=literal("".join(labels[i] for i in at)),
               position=at[0])


def parse_heads(spec: str | None, groups: list[str], n_layer: int | None = None,
                n_head: int | None = None) -> list[Head]:
    """Heads named as the core names them, "L5 H11, cross L1 H0" (the group defaults to the model's first); with
    the model's sizes, a head it does not have is an InputError that says which heads it has."""
    heads = []
    for part in (spec or "").replace(";", ",").split(","):
        if not part.strip():
            continue
        try:
            head = Head.parse(part, groups[0])
        except HeadError:
            raise InputError(say("heads.bad_spec", part=quoted(part.strip()))) from None
        if n_layer is not None and (head.group not in groups or head.layer >= n_layer or head.head >= n_head):
            raise InputError(say("heads.no_such_head", part=quoted(part.strip()), groups=", ".join(groups),
                                 last_layer=n_layer - 1, last_head=n_head - 1))
        heads.append(head)
    return sorted(set(heads))


def head_names(model: str) -> list[str] | None:
    """Every head of a model by name ("L0 H0", ...), for the switch-off grid; None when it cannot be loaded."""
    try:
        net, _ = models.load(models.resolve(model))
    except InputError:
        return None
    return _names(net)


def _names(net) -> list[str]:
    groups = _groups(net)
    return [h.name(groups) for h in all_heads(net)]


# --- which head links A to B ---------------------------------------------------------------


@dataclass(frozen=True)
class FoundHeads:
    """Every head of one AttentionRun ranked by the weight from `query` to `keys` (several links: the mean of
    their weights, so one head that makes both links ranks first)."""

    run: AttentionRun
    query: int
    keys: list[int]
    weights: np.ndarray  # (n_layer, n_head)
    ranked: list[tuple[Head, float]]
    mean: float
    summary: str
    links: tuple[tuple[int, tuple[int, ...]], ...] = ()  # (query, keys) of every link ranked, the first included

    @property
    def names(self) -> list[str]:
        """The ranked heads' names: all of one group (the run's), so without it ("L5 H11")."""
        return [head.name([self.run.group]) for head, _ in self.ranked]

    @property
    def query_label(self) -> str:
        return " / ".join(self.run.q_labels[q] for q, _ in self.links)

    @property
    def key_label(self) -> str:
        return " / ".join("".join(self.run.k_labels[k] for k in keys) for _, keys in self.links)


def links_named(query, key) -> list[tuple[str, str]]:
    """The links a person named: one query and one key, or as many of each separated by commas ("it, 它" and
    "animal, 动物": it -> animal and 它 -> 动物); a comma that does not pair up is part of a token."""
    queries, keys = str(query or "").split(","), str(key or "").split(",")
    if len(queries) == len(keys) > 1 and all(q.strip() for q in queries) and all(k.strip() for k in keys):
        return [(q.strip(), k.strip()) for q, k in zip(queries, keys)]
    return [(query, key)]


def find_head(model: str, text: str | None, query, key, group: str | None = None) -> FoundHeads:
    """Rank every head by query -> key weight, re-slicing the Attention tab's cached run (no forward pass)."""
    run = attention_run(model, text, group)
    named, links, rankings, said = links_named(query, key), [], [], [run.notice]
    for q_text, k_text in named:
        q = positions(run.q_labels, q_text)[0]
        keys = positions(run.k_labels, k_text)
        links.append((q, tuple(keys)))
        rankings.append(rank_attention(torch.from_numpy(run.attn), q, keys, run.group))
        said += [inside(run.q_labels, [q], q_text), inside(run.k_labels, keys, k_text)]
    if len(rankings) == 1:
        ranking = rankings[0]
    else:  # the mean over the links: the head that makes all of them
        ranking = rank_by(torch.stack([r.weights for r in rankings]).mean(0), run.group)
    top, weight = ranking.ranked[0]
    if len(links) == 1:
        q, keys = links[0]
        found = say("heads.found", head=top.name([run.group]), weight=weight, query=literal(run.q_labels[q]),
                    key_token=literal("".join(run.k_labels[k] for k in keys)), n=len(ranking.ranked),
                    mean=ranking.mean)
    else:
        each = "; ".join(f"“{literal(run.q_labels[q])}” → “{literal(''.join(run.k_labels[k] for k in keys))}” "
                         f"{float(r.weights[top.layer, top.head]):.2f}" for (q, keys), r in zip(links, rankings))
        found = say("heads.found_links", head=top.name([run.group]), links=each, weight=weight,
                    n=len(ranking.ranked), mean=ranking.mean)
    summary = notice(*said, found, _reads(run, top))
    q, keys = links[0]
    return FoundHeads(run, q, list(keys), ranking.weights.numpy(), ranking.ranked, ranking.mean, summary,
                      tuple(links))


def _reads(run: AttentionRun, head: Head) -> str:
    """Under grouped-query attention, the key/value head a query head reads and the query heads that share it;
    and whether its layer sees only a sliding window. "" for a model with neither."""
    said = []
    if run.group_size > 1:
        kv = run.kv_head(head.head)
        shared = [f"H{h}" for h in range(kv * run.group_size, (kv + 1) * run.group_size) if h != head.head]
        said.append(say("heads.reads_kv", head=head.name([run.group]), kv=kv, shared=", ".join(shared),
                        n=run.attn.shape[1], n_kv=run.attn.shape[1] // run.group_size))
    if head.layer in run.local_layers:
        said.append(say("heads.local_layer", layer=head.layer, window=run.window))
    return notice(*said) if said else ""


# --- the text a model reads ----------------------------------------------------------------


@dataclass(frozen=True)
class _Read:
    """One text as the chosen model reads it: ids (a translator's source ids), labels, what was cut."""

    name: str
    kind: str
    ids: list[int]
    labels: list[str]
    text: str
    cut: str


def _read(model: str, text: str | None) -> tuple[object, object, _Read]:
    """The text as the Attention tab above reads it: through the one reading path (lab/reading.py)."""
    name = models.resolve(model)
    kind = store.arch(name)
    text, cut = reading.prepare(name, text, say("heads.no_text"))
    net, tokenizer = models.load(name)
    if kind == "EncoderDecoder":
        codec = Codec(tokenizer)
        text, cut2 = source_text(codec, net.config.max_len, text)
        return net, tokenizer, _Read(name, kind, codec.source_ids(text), list(text) + ["</s>"], text,
                                     notice(cut, cut2))
    read = reading.read(name, tokenizer, text, min(MAX_DRAWN_TOKENS, net.config.max_len),
                        min_tokens=2 if kind == "DecoderLM" else 1, offered=models.choices())
    # a pre-trained encoder's classifier head was never trained: its verdict is a coin's, and so is what a head
    # switched off does to it; the sentiment heads on the same encoder give a verdict worth watching
    untrained = say("heads.untrained_head", name=name) if models.checkpoint(name).encoder else ""
    return net, tokenizer, _Read(name, kind, read.ids, read.labels, text, notice(cut, read.notice, untrained))


def _groups(model) -> list[str]:
    return list(dict.fromkeys(h.group for h in all_heads(model)))


# --- switching heads off -------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What a model says about the text, with some heads off or none.

    LM: top (TOP_K (token, prob)) after the last token and losses (T-1,) per next token;
    classifier: probs by label; translator: output text and its log-probability.
    """

    top: list[tuple[str, float]]
    losses: np.ndarray | None
    probs: dict[str, float]
    output: str
    logp: float


@dataclass(frozen=True)
class Downstream:
    """What every head does with one query and key before and after some heads are switched off: the weight from
    `query` to `keys` in each head of `group`, (n_layer, n_head) each. A switched-off head still computes its
    weights (only its output is removed), so its own weight and every earlier layer's stay; later layers read a
    residual stream without its output, and theirs may move."""

    group: str
    query: str
    key: str
    before: np.ndarray
    after: np.ndarray
    off: list[tuple[int, int]]  # (layer, head) of the heads switched off in this group

    @property
    def summary(self) -> str:
        """The lesson in one or two sentences: the switched-off heads keep their own weight; which later head
        moved most."""
        change = self.after - self.before
        first = min(layer for layer, _ in self.off) if self.off else 0
        later = np.abs(change[first + 1:]) if self.off else np.abs(change)
        own = ", ".join(f"L{l} H{h} ({self.before[l, h]:.2f})" for l, h in self.off)
        said = [say("heads.own_weight_stays", heads=own, query=literal(self.query), key_token=literal(self.key))] \
            if self.off else []
        if later.size and later.max() >= MOVED:
            l, h = np.unravel_index(int(later.argmax()), later.shape)
            l += first + 1 if self.off else 0
            said.append(say("heads.downstream_moved", n=int((later >= MOVED).sum()), moved=MOVED, head=f"L{l} H{h}",
                            before=float(self.before[l, h]), after=float(self.after[l, h])))
        else:
            said.append(say("heads.downstream_still", moved=MOVED))
        return notice(*said)


@dataclass(frozen=True)
class SwitchOffRun:
    model: str
    kind: str
    labels: list[str]
    heads: list[str]
    mode: str
    before: Outcome
    after: Outcome
    notice: str
    downstream: Downstream | None = None


@torch.no_grad()
def _outcome(net, tokenizer, read: _Read, reference: list[int] | None = None,
             link: tuple[int, tuple[int, ...]] | None = None) -> tuple[Outcome, list[int], np.ndarray | None]:
    """The model's answer on `read`; a translator's log-prob is of `reference` (default: its own output). With a
    link, also every head's weight from its query to its keys, read from the same pass (a translator's: another)."""
    device = device_of(net)
    if read.kind in ("DecoderLM", "EncoderClassifier"):
        ids = torch.tensor([read.ids], device=device)
        logits, run = net.run_with_trace(ids) if link is not None else (net(ids), None)
        weights = None if run is None else _weights_of(run, _groups(net)[0], link)
        if read.kind == "EncoderClassifier":
            probs = torch.softmax(logits.float()[0], -1)
            return Outcome([], None, {LABELS[i]: float(p) for i, p in enumerate(probs)}, "", 0.0), read.ids, weights
        logp = torch.log_softmax(logits.float()[0], -1)  # (T, vocab)
        losses = -logp[:-1].gather(-1, ids[0, 1:, None])[:, 0]
        probs, top = logp[-1].exp().topk(TOP_K)
        return Outcome([(tokenizer.decode([int(i)]), float(p)) for p, i in zip(probs, top)],
                       losses.cpu().numpy(), {}, "", 0.0), read.ids, weights
    codec = Codec(tokenizer)
    if reference is None:  # every head on: the translation the Translate and Attention tabs show, run once
        run = translated(read.name, read.text)
        logp = float(np.log(run.probs[range(len(run.written)), run.written]).sum())
        target = [codec.bos, *run.written]
        weights = None if link is None else _link_weights(net, _inputs(net, read, target), _groups(net)[0], link)
        return Outcome([], None, {}, run.output, logp), target, weights
    written = translate(net, codec, read.text).ids  # with heads off, the model writes its own translation
    target = reference
    src, lengths = codec.sources([read.text])
    tgt = torch.tensor([target], device=device)
    logp = torch.log_softmax(net(src.to(device), tgt[:, :-1], lengths.to(device)).float()[0], -1)
    total = float(logp.gather(-1, tgt[0, 1:, None]).sum())
    weights = None if link is None else _link_weights(net, _inputs(net, read, target), _groups(net)[0], link)
    return Outcome([], None, {}, codec.text(written), total), target, weights


_runs: RunCache = RunCache(size=64)


def _mode(mode: str | None) -> str:
    mode = (mode or "zero").strip().lower()
    if mode not in SWITCH_OFF_MODES:
        raise InputError(say("heads.switch_off_mode", mode=mode))
    return mode


def switch_off(model: str, text: str | None, heads: str | None, mode: str | None = "zero", query=None,
               key=None) -> SwitchOffRun:
    """The text read with every head on, then with `heads` ("L5 H11, L4 H11") switched off; with a query and a
    key token (as find_head takes them), also what every head's weight from the query to the key does."""
    mode = _mode(mode)
    net, tokenizer, read = _read(model, text)
    return _switch_off(net, tokenizer, read, _parsed(net, heads), mode, _link(read, query, key))


def _parsed(net, spec: str | None) -> list[Head]:
    return parse_heads(spec, _groups(net), net.config.n_layer, net.config.n_head)


def _link(read: _Read, query, key) -> tuple[int, tuple[int, ...]] | None:
    """The query position and key positions a person named, in the text as this model reads it; None when
    neither is named (a half-named link is an InputError, as in find_head)."""
    if not str(query or "").strip() and not str(key or "").strip():
        return None
    query, key = links_named(query, key)[0]  # several links named: the first is followed
    return positions(read.labels, query)[0], tuple(positions(read.labels, key))


def _switch_off(net, tokenizer, read: _Read, chosen: list[Head], mode: str,
                link: tuple[int, tuple[int, ...]] | None = None) -> SwitchOffRun:
    if not chosen:
        raise InputError(say("heads.none_off"))
    groups = _groups(net)

    def compute() -> SwitchOffRun:
        # every head on: the same for every choice of heads, so computed once per text and link
        before, reference, weights_before = _runs.get(models.key(read.name, "every_head_on", read.text, link),
                                                      lambda: _outcome(net, tokenizer, read, link=link))
        inputs = _inputs(net, read, reference)
        means = head_means(net, **inputs) if mode == "mean" else None
        try:
            with core.switch_off(net, chosen, mode, means):
                after, _, weights_after = _outcome(net, tokenizer, read, reference, link)
        except HeadError as e:
            raise InputError(say("heads.model_refused", error=str(e))) from e
        downstream = None
        if link is not None:
            q, keys = link
            downstream = Downstream(groups[0], read.labels[q], "".join(read.labels[k] for k in keys),
                                    weights_before, weights_after,
                                    [(h.layer, h.head) for h in chosen if h.group == groups[0]])
        said = read.cut if downstream is None else notice(read.cut, downstream.summary)
        return SwitchOffRun(read.name, read.kind, read.labels, [h.name(groups) for h in chosen], mode,
                            before, after, said, downstream)

    return _runs.get(models.key(read.name, "switch_off", read.text, tuple(chosen), mode, link), compute)


@torch.no_grad()
def _link_weights(net, inputs: dict, group: str, link: tuple[int, tuple[int, ...]]) -> np.ndarray:
    """(n_layer, n_head): each head of `group`'s weight from the link's query to its keys, in one traced pass."""
    _, run = net.run_with_trace(**inputs)
    return _weights_of(run, group, link)


def _weights_of(run, group: str, link: tuple[int, tuple[int, ...]]) -> np.ndarray:
    q, keys = link
    return run.attention(group)[:, 0, :, q, list(keys)].sum(-1).numpy()


def _inputs(net, read: _Read, reference: list[int]) -> dict:
    device = device_of(net)
    if read.kind == "EncoderDecoder":
        return {"src": torch.tensor([read.ids], device=device), "tgt": torch.tensor([reference[:-1]], device=device)}
    return {"idx": torch.tensor([read.ids], device=device)}


@dataclass(frozen=True)
class ImportanceRun:
    model: str
    kind: str
    damage: dict[str, np.ndarray]  # group -> (n_layer, n_head)
    ranked: list[tuple[str, float]]  # head name, damage; most damaging first
    measure: str
    baseline: float
    mode: str
    notice: str


def importance(model: str, text: str | None, mode: str | None = "zero") -> ImportanceRun:
    """Every head switched off alone on this text, batched: the damage each one does."""
    mode = _mode(mode)
    net, tokenizer, read = _read(model, text)
    return _importance(net, tokenizer, read, mode)


def _importance(net, tokenizer, read: _Read, mode: str) -> ImportanceRun:
    groups = _groups(net)

    def compute() -> ImportanceRun:
        target = None
        if read.kind == "EncoderDecoder":
            target = [Codec(tokenizer).bos, *translated(read.name, read.text).written]
        found = importance_map(net, read.ids, target, mode)
        return ImportanceRun(read.name, read.kind, {g: d.numpy() for g, d in found.damage.items()},
                             [(h.name(groups), d) for h, d in found.ranked()], found.measure,
                             found.baseline, mode, read.cut)

    return _runs.get(models.key(read.name, "importance", read.text, mode), compute)


@dataclass(frozen=True)
class SwitchOffView:
    """The switch-off section as it opens, from one reading of the text: the importance map, the heads
    switched off (by default the one that matters most here), what changed, and every head's name."""

    importance: ImportanceRun
    run: SwitchOffRun
    heads: str  # the heads switched off, as the text box shows them
    names: list[str]  # every head of the model, for the toggles


def open_switch_off(model: str, text: str | None, heads: str | None, mode: str | None = "zero", query=None,
                    key=None) -> SwitchOffView:
    """The importance map and `heads` switched off. When none is named: the head found for the query and key
    (find_head's top head: the one the lesson just named), else the head that matters most here."""
    mode = _mode(mode)
    net, tokenizer, read = _read(model, text)
    found = _importance(net, tokenizer, read, mode)
    groups = _groups(net)
    link = _link(read, query, key)
    if not (heads or "").strip():
        heads = find_head(model, text, query, key).names[0] if link is not None else found.ranked[0][0]
    run = _switch_off(net, tokenizer, read, _parsed(net, heads), mode, link)
    return SwitchOffView(found, run, heads, _names(net))


# --- the logit lens ------------------------------------------------------------------------


@dataclass(frozen=True)
class LensRun:
    """A language model's top guess after each layer: (n_layer + 1, T) arrays, row 0 the embedding."""

    model: str
    labels: list[str]  # the text's tokens
    guesses: list[list[str]]  # (n_layer + 1, T) the top next token, as text
    top_probs: np.ndarray
    final_rank: np.ndarray
    final_probs: np.ndarray
    notice: str


@torch.no_grad()
def lens(model: str, text: str | None) -> LensRun:
    """The logit lens of a language model on this text (one traced pass, cached)."""
    net, tokenizer, read = _read(model, text)
    if read.kind != "DecoderLM":
        raise InputError(say("heads.lens_needs_lm", kind=say(f"store.kind.{read.kind}")))

    def compute() -> LensRun:
        _, run = net.run_with_trace(torch.tensor([read.ids], device=device_of(net)))
        found = logit_lens(net, run)
        guesses = [[tokenizer.decode([int(i)]) for i in row] for row in found.top_ids]
        return LensRun(read.name, read.labels, guesses, found.top_probs.numpy(), found.final_rank.numpy(),
                       found.final_probs.numpy(), notice(read.cut, _appears(read.labels, guesses, found)))

    return _runs.get(models.key(read.name, "lens", read.text), compute)


def _appears(labels: list[str], guesses: list[list[str]], found) -> str:
    """Where the model's answer after the last token first becomes the lens's top guess and stays on top."""
    ranks = found.final_rank[:, -1].tolist()  # row 0: the embedding, row l: after block l - 1
    first = len(ranks) - 1
    while first > 0 and ranks[first - 1] == 0:
        first -= 1
    where = say("heads.embedding") if first == 0 else say("heads.block", layer=first - 1)
    shown = repr(guesses[-1][-1])[1:-1]  # as the lens table writes a guess: a newline stays visible
    return say("heads.lens_appears", token=literal(labels[-1]), answer=literal(shown), where=where,
               n=len(ranks) - 1, p=float(found.final_probs[-1, -1]))


# --- head roles ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RolesRun:
    """Every self-attention head's score for each role, on a random sequence repeated twice."""

    model: str
    scores: dict[str, dict[str, np.ndarray]]  # role -> group -> (n_layer, n_head)
    labels: list[tuple[str, str, float]]  # (head name, role, score) at or above the threshold
    losses: np.ndarray | None  # a language model's per-token loss over the sequence (2n - 1,)
    n: int
    threshold: float
    summary: str


@torch.no_grad()
def roles(model: str) -> RolesRun:
    """The four ROLES scored for every head of `model` (one traced pass over a repeated random sequence)."""
    name = models.resolve(model)
    net, _ = models.load(name)
    groups = _groups(net)

    def compute() -> RolesRun:
        config = net.config
        vocab = min(config.src_vocab_size, config.tgt_vocab_size) if store.arch(name) == "EncoderDecoder" \
            else config.vocab_size
        n = min(ROLE_HALF, config.max_len // 2)
        found = head_roles(net, repeated_random_tokens(n, range(4, vocab), ROLE_BATCH))
        labels = [(h.name(groups), role, s) for h, role, s in found.labels()]
        losses = None if found.losses is None else found.losses.numpy()
        induction = [h for h, role, _ in labels if role == "induction"]
        summary = say("heads.roles_found", n=len({h for h, _, _ in labels}), threshold=ROLE_THRESHOLD) if labels \
            else say("heads.no_roles", threshold=ROLE_THRESHOLD)
        if losses is not None:
            first, second = float(losses[: n - 1].mean()), float(losses[n:].mean())
            summary = notice(summary, say("heads.induction", heads=", ".join(induction), first=first,
                                          second=second) if induction
                             else say("heads.no_induction", threshold=ROLE_THRESHOLD))
        return RolesRun(name, {r: {g: s.numpy() for g, s in by.items()} for r, by in found.scores.items()},
                        labels, losses, n, ROLE_THRESHOLD, summary)

    return _runs.get(models.key(name, "roles"), compute)


__all__ = ["HEAD_NAME", "ROLES", "FoundHeads", "ImportanceRun", "LensRun", "RolesRun", "SwitchOffRun", "SwitchOffView",
           "find_head", "head_names", "importance", "inside", "lens", "open_switch_off", "parse_heads", "positions", "roles",
           "switch_off"]
