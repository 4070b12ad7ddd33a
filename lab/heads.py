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


def parse_heads(spec: str | None, groups: list[str]) -> list[Head]:
    """Heads named as the core names them, "L5 H11, cross L1 H0" (the group defaults to the model's first)."""
    heads = []
    for part in (spec or "").replace(";", ",").split(","):
        if not part.strip():
            continue
        try:
            heads.append(Head.parse(part, groups[0]))
        except HeadError:
            raise InputError(say("heads.bad_spec", part=quoted(part.strip()))) from None
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
    """Every head of one AttentionRun ranked by the weight from `query` to `keys`."""

    run: AttentionRun
    query: int
    keys: list[int]
    weights: np.ndarray  # (n_layer, n_head)
    ranked: list[tuple[Head, float]]
    mean: float
    summary: str

    @property
    def names(self) -> list[str]:
        """The ranked heads' names: all of one group (the run's), so without it ("L5 H11")."""
        return [head.name([self.run.group]) for head, _ in self.ranked]


def find_head(model: str, text: str | None, query, key, group: str | None = None) -> FoundHeads:
    """Rank every head by query -> key weight, re-slicing the Attention tab's cached run (no forward pass)."""
    run = attention_run(model, text, group)
    q = positions(run.q_labels, query)[0]
    keys = positions(run.k_labels, key)
    ranking = rank_attention(torch.from_numpy(run.attn), q, keys, run.group)
    top, weight = ranking.ranked[0]
    key_text = "".join(run.k_labels[k] for k in keys)
    summary = notice(run.notice, inside(run.q_labels, [q], query), inside(run.k_labels, keys, key), say("heads.found", head=top.name([run.group]), weight=weight,
                                     query=literal(run.q_labels[q]), key_token=literal(key_text), n=len(ranking.ranked),
                                     mean=ranking.mean))
    return FoundHeads(run, q, keys, ranking.weights.numpy(), ranking.ranked, ranking.mean, summary)


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
class SwitchOffRun:
    model: str
    kind: str
    labels: list[str]
    heads: list[str]
    mode: str
    before: Outcome
    after: Outcome
    notice: str


@torch.no_grad()
def _outcome(net, tokenizer, read: _Read, reference: list[int] | None = None) -> tuple[Outcome, list[int]]:
    """The model's answer on `read`; a translator's log-prob is of `reference` (default: its own output)."""
    device = device_of(net)
    if read.kind == "DecoderLM":
        ids = torch.tensor([read.ids], device=device)
        logp = torch.log_softmax(net(ids).float()[0], -1)  # (T, vocab)
        losses = -logp[:-1].gather(-1, ids[0, 1:, None])[:, 0]
        probs, top = logp[-1].exp().topk(TOP_K)
        return Outcome([(tokenizer.decode([int(i)]), float(p)) for p, i in zip(probs, top)],
                       losses.cpu().numpy(), {}, "", 0.0), read.ids
    if read.kind == "EncoderClassifier":
        probs = torch.softmax(net(torch.tensor([read.ids], device=device)).float()[0], -1)
        return Outcome([], None, {LABELS[i]: float(p) for i, p in enumerate(probs)}, "", 0.0), read.ids
    codec = Codec(tokenizer)
    if reference is None:  # every head on: the translation the Translate and Attention tabs show, run once
        run = translated(read.name, read.text)
        logp = float(np.log(run.probs[range(len(run.written)), run.written]).sum())
        return Outcome([], None, {}, run.output, logp), [codec.bos, *run.written]
    written = translate(net, codec, read.text).ids  # with heads off, the model writes its own translation
    target = reference
    src, lengths = codec.sources([read.text])
    tgt = torch.tensor([target], device=device)
    logp = torch.log_softmax(net(src.to(device), tgt[:, :-1], lengths.to(device)).float()[0], -1)
    total = float(logp.gather(-1, tgt[0, 1:, None]).sum())
    return Outcome([], None, {}, codec.text(written), total), target


_runs: RunCache = RunCache(size=64)


def _mode(mode: str | None) -> str:
    mode = (mode or "zero").strip().lower()
    if mode not in SWITCH_OFF_MODES:
        raise InputError(say("heads.switch_off_mode", mode=mode))
    return mode


def switch_off(model: str, text: str | None, heads: str | None, mode: str | None = "zero") -> SwitchOffRun:
    """The text read with every head on, then with `heads` ("L5 H11, L4 H11") switched off."""
    mode = _mode(mode)
    net, tokenizer, read = _read(model, text)
    return _switch_off(net, tokenizer, read, parse_heads(heads, _groups(net)), mode)


def _switch_off(net, tokenizer, read: _Read, chosen: list[Head], mode: str) -> SwitchOffRun:
    if not chosen:
        raise InputError(say("heads.none_off"))
    groups = _groups(net)

    def compute() -> SwitchOffRun:
        before, reference = _outcome(net, tokenizer, read)
        inputs = _inputs(net, read, reference)
        means = head_means(net, **inputs) if mode == "mean" else None
        try:
            with core.switch_off(net, chosen, mode, means):
                after, _ = _outcome(net, tokenizer, read, reference)
        except HeadError as e:
            raise InputError(say("heads.model_refused", error=str(e))) from e
        return SwitchOffRun(read.name, read.kind, read.labels, [h.name(groups) for h in chosen], mode,
                            before, after, read.cut)

    return _runs.get(models.key(read.name, "switch_off", read.text, tuple(chosen), mode), compute)


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


def open_switch_off(model: str, text: str | None, heads: str | None, mode: str | None = "zero") -> SwitchOffView:
    """The importance map and `heads` switched off, or the head that matters most when none is named."""
    mode = _mode(mode)
    net, tokenizer, read = _read(model, text)
    found = _importance(net, tokenizer, read, mode)
    groups = _groups(net)
    heads = heads if (heads or "").strip() else found.ranked[0][0]
    run = _switch_off(net, tokenizer, read, parse_heads(heads, groups), mode)
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
                       found.final_probs.numpy(), read.cut)

    return _runs.get(models.key(read.name, "lens", read.text), compute)


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
