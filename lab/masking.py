"""The Masking tab's use cases: the masks as matrices, a trained model read under each, and the cheating demo.

One run holds everything the Masking tab draws for a text: the gallery of masks (built by
the very functions the model uses) and the shipped language model read once with its
causal mask and once with the chosen mask. Sliders re-slice that run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import numpy as np
import torch

from i18n import Joined, Message
from transformer_core import (
    Mask,
    MaskError,
    build_mask,
    device_of,
    greedy_with_mask,
    mean_loss,
    padding_mask,
    token_losses,
    top_predictions,
)

from . import models, reading, store
from .cache import RunCache
from .policy import InputError, clamp, fit_tokens, notice, prompt_tokens, quoted, truncate

LM = "shakespeare-lm"  # the lesson's language model, for a text no other reads
POETRY_LM = "tang-poems-char"  # Chinese text is read by the Tang-poetry LM: the Shakespeare LM reads it as bytes
CHEATERS = {Message("masking.cheater.causal"): ("cheat-causal", "causal"),
            Message("masking.cheater.nomask"): ("cheat-nomask", "none")}
MAX_TOKENS = 64  # masks are drawn cell by cell: 64 x 64 still shows every cell
MAX_CHEAT_TOKENS = 60
EFFECT_KINDS = ["none", "causal", "sliding_window", "dilated_window", "global_window"]
TOP_K = 5


@dataclass(frozen=True)
class MaskSettings:
    """A mask's parameters after the input policy: every number in range for this text."""

    kind: str
    w: int
    dilation: int
    global_tokens: tuple[int, ...]
    causal: bool


@dataclass(frozen=True)
class MaskingRun:
    """The masks for one text and the language model read under its causal mask and the chosen one.

    attn[run]: (n_layer, n_head, T, T); losses[run]: (T-1,) nats; probs/top[run]: (T, 5) next-token guesses.
    """

    labels: list[str]
    labels_b: list[str]
    gallery: list[tuple[str, Mask]]
    runs: list[str]  # "causal (as trained)", then the chosen mask described in words
    attn: dict[str, np.ndarray]
    losses: dict[str, np.ndarray]
    top_probs: dict[str, np.ndarray]
    top_labels: dict[str, list[list[str]]]
    notice: str

    def focus(self, layer, head, position, notices: list[str] | None = None):
        """(layer, head, position) clamped to this run, the chosen head's (n_runs, T, T) weights under each
        mask, and {run: (top-5 probabilities, top-5 labels)} at the position."""
        n_layer, n_head, n, _ = self.attn[self.runs[0]].shape
        layer = clamp(layer, 0, n_layer - 1, Message("setting.layer"), notices)
        head = clamp(head, 0, n_head - 1, Message("setting.head"), notices)
        position = clamp(position, 0, n - 1, Message("setting.position"), notices)
        weights = np.stack([self.attn[name][layer, head] for name in self.runs])
        predictions = {name: (self.top_probs[name][position], self.top_labels[name][position]) for name in self.runs}
        return layer, head, position, weights, predictions


def describe(mask: Mask) -> str:
    """A mask's kind and parameters in words, e.g. "sliding window w=3, causal"."""
    params = [Message("masking.param.causal" if value else "masking.param.both_ways") if key == "causal"
              else f"{key}={value}" for key, value in mask.params.items()]
    kind = Message(f"masking.kindname.{mask.kind}")
    return Message("masking.describe", kind=kind, params=Joined(params, Message("common.list_sep"))) if params else \
        Message("masking.describe.plain", kind=kind)


def lm_for(text: str) -> str:
    """The LM that reads `text`: the first language model of the registry that reads its language (the
    Tang-poetry LM when most of its letters are Chinese characters, the Shakespeare LM for English)."""
    return models.route("DecoderLM", text) or LM


GLOBAL_CHARS = 1000  # positions typed by hand: more than a text's tokens could ever need


def global_positions(text: str | None) -> tuple[int, ...]:
    """ "0, 5" -> (0, 5); anything else is an InputError (its text is shown escaped by the UI)."""
    text = text or ""
    try:
        if len(text) > GLOBAL_CHARS:  # a 4 MB list of positions made a 66 MB answer
            raise ValueError(text)
        return tuple(int(g) for g in text.replace(",", " ").split())
    except ValueError:
        raise InputError(Message("masking.bad_global", text=quoted(text))) from None


def settings(kind: str, n: int, w, dilation, global_text: str | None, causal: bool,
             notices: list[str]) -> MaskSettings:
    """The mask settings for an n-token text: a window as wide as the text (or wider) is narrowed, with a notice."""
    if kind not in EFFECT_KINDS:
        raise InputError(Message("masking.bad_kind", kinds=", ".join(EFFECT_KINDS), kind=quoted(kind)))
    w = clamp(w, 1, max(1, n - 1), Message("setting.window"), notices)  # a window of n or more hides nothing
    dilation = clamp(dilation, 1, max(1, n - 1), Message("setting.dilation"), notices)
    return MaskSettings(kind, w, dilation, global_positions(global_text), bool(causal))


def _build(kind: str, n: int, s: MaskSettings, causal: bool) -> Mask:
    try:
        return build_mask(kind, n, w=s.w, dilation=s.dilation, global_tokens=list(s.global_tokens), causal=causal)
    except MaskError as e:
        raise InputError(Message("masking.mask_refused", error=str(e))) from e


def gallery_masks(n: int, lengths: list[int], s: MaskSettings) -> list[tuple[str, Mask]]:
    """(title, Mask) for every panel of the gallery, built by the same functions the model uses."""
    return [
        (Message("masking.panel.none"), build_mask("none", n)),
        (Message("masking.panel.causal"), build_mask("causal", n)),
        (Message("masking.panel.padding"), padding_mask(lengths, n)),
        (Message("masking.panel.sliding", w=s.w), _build("sliding_window", n, s, False)),
        (Message("masking.panel.causal_sliding", w=s.w), _build("sliding_window", n, s, True)),
        (Message("masking.panel.dilated", w=s.w, d=s.dilation), _build("dilated_window", n, s, False)),
        (Message("masking.panel.global", tokens=list(s.global_tokens), w=s.w), _build("global_window", n, s, False)),
    ]


_runs: RunCache[MaskingRun] = RunCache(size=32)


BY_LANGUAGE = ""  # the picker's first choice: the language model the text's language routes to


def models_offered() -> dict[str, str]:
    """The Masking tab's picker: label -> checkpoint name, the language models a mask can be tried on (GPT-2, which
    needs the Hub, and the cheating lesson's models aside), the real LLMs among them."""
    return {label: name for label, name in models.choices(arch="DecoderLM").items() if name != store.GPT2}


def masking_run(text: str | None, text_b: str | None, kind: str, w, dilation, global_text: str | None,
                causal: bool, model: str | None = BY_LANGUAGE) -> MaskingRun:
    """The gallery for the text and a language model read with its causal mask and with the chosen one: `model`
    (a picker label or name), or by default the one the text's language routes to (the Tang-poetry LM when the
    text is mostly Chinese, else the Shakespeare LM)."""
    text, cut = truncate(text)
    name = models.resolve(model, arch="DecoderLM") if model else lm_for(text)
    net, tokenizer = models.load(name)
    text, simplified = models.read_as(name, text)
    tokens = reading.read(name, tokenizer, text, min(MAX_TOKENS, net.config.max_len), min_tokens=2)
    text_b = models.read_as(name, truncate(text_b)[0])[0]
    if not tokenizer.tokens(text_b):
        raise InputError(Message("masking.empty_second"))
    read_by = Message("masking.read_by_poetry_lm") if name == POETRY_LM and not model else ""
    notices = [cut, simplified, read_by, tokens.notice]
    try:
        tokens_b = fit_tokens(tokenizer, text_b, len(tokens.ids))
    except InputError:  # a second text this model cannot read (the English default, under the Tang-poetry LM):
        # a secondary input must not stop the tab: the padding still gets a shorter text, half the person's own
        half = max(1, len(tokens.ids) // 2)
        tokens_b = replace(tokens, ids=tokens.ids[:half], labels=tokens.labels[:half], notice="")
        notices.append(Message("masking.second_unreadable", model=name))
    s = settings(kind, len(tokens.ids), w, dilation, global_text, causal, notices)
    key = models.key(name, tuple(tokens.ids), tuple(tokens_b.ids), s)
    run = _runs.get(key, lambda: _compute(net, tokenizer, tokens, tokens_b, s))
    return replace(run, notice=notice(*notices))


@torch.no_grad()
def _compute(model, tokenizer, tokens, tokens_b, s: MaskSettings) -> MaskingRun:
    n = len(tokens.ids)
    gallery = gallery_masks(n, [n, len(tokens_b.ids)], s)
    chosen = _build(s.kind, n, s, s.causal)
    idx = torch.tensor([tokens.ids], device=device_of(model))
    traced = {Message("masking.run.as_trained"): model.run_with_trace(idx), describe(chosen): model.run_with_trace(idx, mask=chosen)}
    target = idx[0].cpu()
    attn, losses, probs, tops = {}, {}, {}, {}
    for name, (logits, trace) in traced.items():
        attn[name] = trace.attention("decoder")[:, 0].numpy()
        losses[name] = token_losses(logits[0].cpu(), target).numpy()
        values, ids = top_predictions(logits[0].cpu(), TOP_K)
        probs[name] = values.numpy()
        tops[name] = [[tokenizer.decode([i]) for i in row] for row in ids.tolist()]
    return MaskingRun(tokens.labels, tokens_b.labels, gallery, list(traced), attn, losses, probs, tops, "")


def history(name: str) -> list[dict]:
    path = store.folder(name) / "history.json"
    if not path.is_file():
        raise InputError(Message("masking.no_history", path=path))
    return json.loads(path.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class CheatResult:
    title: str
    continuation: str
    final_train_loss: float
    honest_loss: float  # on the prompt, causal mask: no peeking


def cheating(prompt: str | None, n_new) -> tuple[list[CheatResult], dict[str, list[dict]], str]:
    """Both cheating-demo models: greedy continuations, honest loss on the prompt, training histories."""
    notices: list[str] = []
    n_new = clamp(n_new, 1, MAX_CHEAT_TOKENS, Message("setting.new_tokens"), notices)
    results, histories = [], {}
    for title, (name, mask_kind) in CHEATERS.items():
        model, tokenizer = models.load(name)
        tokens = prompt_tokens(tokenizer, prompt, model.config.max_len, min_tokens=2)
        notices.append(tokens.notice)
        histories[title] = history(name)
        continuation = tokenizer.decode(greedy_with_mask(model, tokens.ids, n_new, mask_kind))
        results.append(CheatResult(title, continuation, histories[title][-1]["train_loss"],
                                   mean_loss(model, tokens.ids)))
    return results, histories, notice(*dict.fromkeys(notices))
