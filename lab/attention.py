"""Attention use cases: text -> one traced pass -> a labelled run that the figures slice.

A run holds every layer's and head's weights for one text, as numpy arrays with their
axis labels. Moving the layer, head or query slider re-slices the run already made;
only a new text, model or attention group runs the model again. Runs of deterministic
inputs are cached, so a lecture hall opening one link computes it once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from i18n import Message
from transformer_core import CheckpointError, attention_rollout, attention_while_generating, device_of
from transformer_core.decoding.seq2seq import Codec, DecodingError, translate, traced

from . import store
from .cache import ViewCache
from .policy import MAX_DRAWN_TOKENS, InputError, clamp, fit_tokens, notice, truncate

MAX_NEW_TOKENS = 40
# which attention a model has: encoder self-attention sees both ways, decoder self-attention
# only the past, cross-attention reads the source from the target
GROUP_NAMES = {group: Message(f"attention.group.{group}") for group in ("encoder", "decoder", "cross")}
GROUPS_OF = {"DecoderLM": ["decoder"], "EncoderClassifier": ["encoder"], "EncoderDecoder": ["encoder", "decoder", "cross"]}
EXAMPLE_TEXT = {
    "DecoderLM": "ROMEO: But soft, what light through yonder window breaks? It is the east, and Juliet is the sun.",
    "EncoderClassifier": "The plot was thin, but the acting was wonderful and I was not bored for a minute.",
}


@dataclass(frozen=True)
class AttentionRun:
    """One group's weights for one text: attn (n_layer, n_head, Tq, Tk) and the axis labels."""

    model: str
    group: str
    attn: np.ndarray
    q_labels: list[str]
    k_labels: list[str]
    notice: str
    rollout: np.ndarray | None  # (T, T) after the last layer; None for cross-attention

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return self.attn.shape

    def head(self, layer, head, notices: list[str] | None = None) -> tuple[int, int, np.ndarray]:
        """(layer, head, that head's (Tq, Tk) weights), the indices clamped to this model's sizes."""
        n_layer, n_head = self.attn.shape[:2]
        layer = clamp(layer, 0, n_layer - 1, Message("setting.layer"), notices)
        head = clamp(head, 0, n_head - 1, Message("setting.head"), notices)
        return layer, head, self.attn[layer, head]

    def query(self, query, notices: list[str] | None = None) -> tuple[int, np.ndarray]:
        """(query position, its rows (n_layer, n_head, Tk) in every head), the position clamped to the text."""
        query = clamp(query, 0, self.attn.shape[2] - 1, Message("setting.query"), notices)
        return query, self.attn[:, :, query]


# a source each translator can read, written out: drawing one from the task's word pool would need
# the Shakespeare corpus, and the app must start with no data and no network
TRANSLATOR_EXAMPLES = {"copy": "31415926", "reverse": "123456789", "sort": "52819330", "pig_latin": "She pet the dog."}


def example_text(name: str) -> str:
    """A text the model can read: a translator gets a source of its own task."""
    kind = store.arch(name)
    if kind != "EncoderDecoder":
        return EXAMPLE_TEXT[kind]
    task = next((t for t in TRANSLATOR_EXAMPLES if t.replace("_", "-") in name), "pig_latin")
    return TRANSLATOR_EXAMPLES[task]


GPT2_LABEL = Message("attention.gpt2_label")


def models() -> dict[str, str]:
    """Picker label -> checkpoint name: every shipped checkpoint, then GPT-2 (downloaded on first use)."""
    return {**store.checkpoints(), GPT2_LABEL: store.GPT2}


def resolve(label_or_name: str) -> str:
    """A checkpoint folder name from a picker label ("sentiment (classifier)") or the name itself."""
    names = models()
    if label_or_name in names:
        return names[label_or_name]
    if label_or_name in names.values():
        return label_or_name
    raise InputError(Message("attention.no_model", label=repr(label_or_name), folder=store.model_dir()))


def load(name: str):
    try:
        return store.load(name)
    except CheckpointError as e:
        raise InputError(str(e)) from e


def source_text(codec: Codec, max_len: int, text: str) -> tuple[str, str]:
    """A translator's source as it reads it, and a notice of what was changed.

    Whitespace is dropped for a model whose alphabet has no space ("3 1 4" reads as "314");
    a source longer than the model's positions is cut; characters it has never seen are an InputError.
    """
    text, cut = truncate(text)
    text = text.strip()
    if " " not in codec.alphabet:
        text = "".join(text.split())
    if not text:
        raise InputError(Message("attention.type_source"))
    limit = min(MAX_DRAWN_TOKENS, max_len) - 1  # room for </s>
    if len(text) > limit:
        cut = notice(cut, Message("attention.source_cut", n=len(text), limit=limit))
        text = text[:limit]
    try:
        codec.check(text, max_len)
    except DecodingError as e:
        raise InputError(f"{str(e)[:1].upper()}{str(e)[1:]}.") from e
    return text, cut


def _translator_run(name: str, model, tokenizer, text: str, group: str, cut: str) -> AttentionRun:
    codec = Codec(tokenizer)
    text, cut = source_text(codec, model.config.max_len, text)
    target = translate(model, codec, text).ids
    room = min(MAX_DRAWN_TOKENS, model.config.max_len) - 1  # the decoder reads <s> + the target
    if len(target) > room:
        cut = notice(cut, Message("attention.translation_cut", n=len(target), room=room))
        target = target[:room]
    _, trace = traced(model, codec, text, target)
    src = list(text) + ["</s>"]
    tgt = ["<s>"] + [tokenizer.decode([i]) for i in target]
    q, k = {"encoder": (src, src), "decoder": (tgt, tgt), "cross": (tgt, src)}[group]
    return _labelled(name, group, trace.attention(group)[:, 0], q, k,
                     notice(cut, Message("attention.translation", text=codec.text(target))))


def _labelled(name: str, group: str, attn: torch.Tensor, q: list[str], k: list[str], cut: str) -> AttentionRun:
    rollout = None if group == "cross" else attention_rollout(attn)[-1].numpy()
    return AttentionRun(name, group, attn.numpy().astype(np.float32), q, k, cut, rollout)


_runs: ViewCache[AttentionRun] = ViewCache(size=64)


def attention_run(model: str, text: str | None, group: str | None = None) -> AttentionRun:
    """Run the model once on `text` with a trace and label the chosen group's weights.

    `model` is a checkpoint name or picker label; a group the model lacks falls back to its
    first one, with a notice. Identical requests share one cached run.
    """
    name = resolve(model)
    text, cut = truncate(text)
    if not text.strip():
        raise InputError(Message("attention.type_text"))
    groups = GROUPS_OF[store.arch(name)]
    if group not in groups:
        if group is not None:
            cut = notice(cut, Message("attention.no_group", group=GROUP_NAMES.get(group, group),
                                          fallback=GROUP_NAMES[groups[0]]))
        group = groups[0]
    run = _runs.get((str(store.model_dir()), name, text, group), lambda: _compute(name, text, group))
    return run if not cut else replace(run, notice=notice(cut, run.notice))


@torch.no_grad()
def _compute(name: str, text: str, group: str) -> AttentionRun:
    model, tokenizer = load(name)
    if store.arch(name) == "EncoderDecoder":
        return _translator_run(name, model, tokenizer, text, group, "")
    tokens = fit_tokens(tokenizer, text, min(MAX_DRAWN_TOKENS, model.config.max_len))
    _, trace = model.run_with_trace(torch.tensor([tokens.ids], device=device_of(model)))
    return _labelled(name, group, trace.attention(group)[:, 0], tokens.labels, tokens.labels, tokens.notice)


@dataclass(frozen=True)
class GenerationRun:
    """What a language model looked at while it generated greedily, one row per new token."""

    labels: list[str]  # prompt + generated tokens
    n_prompt: int
    rows: list[np.ndarray]  # rows[s]: (n_layer, n_head, n_prompt + s)
    continuation: str
    notice: str


def generation_run(model: str, text: str | None, n_new) -> GenerationRun:
    """Generate greedily with the KV cache and keep each new token's attention row."""
    name = resolve(model)
    text, cut = truncate(text)
    if not text.strip():
        raise InputError(Message("attention.type_prompt"))
    if store.arch(name) != "DecoderLM":
        raise InputError(Message("attention.needs_lm"))
    notices = [cut] if cut else []
    n_new = clamp(n_new, 1, MAX_NEW_TOKENS, Message("setting.new_tokens"), notices)
    return _runs.get((str(store.model_dir()), name, text, "generate", n_new),
                     lambda: _generate(name, text, n_new, notice(*notices)))


def _generate(name: str, text: str, n_new: int, cut: str) -> GenerationRun:
    model, tokenizer = load(name)
    tokens = fit_tokens(tokenizer, text, min(MAX_DRAWN_TOKENS, model.config.max_len) - n_new, keep="last")
    gen = attention_while_generating(model, tokens.ids, n_new)
    labels = [tokenizer.decode([i]) for i in gen.ids]
    return GenerationRun(labels, gen.n_prompt, [r.numpy() for r in gen.rows], tokenizer.decode(gen.generated),
                         notice(cut, tokens.notice))
