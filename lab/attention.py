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

from transformer_core import CheckpointError, attention_of_each, attention_rollout, attention_while_generating
from transformer_core.decoding.seq2seq import Codec, DecodingError, translate, traced

from . import store
from .batching import Batcher
from .cache import ViewCache
from .policy import MAX_DRAWN_TOKENS, InputError, clamp, fit_tokens, notice, truncate

MAX_NEW_TOKENS = 40
# which attention a model has: encoder self-attention sees both ways, decoder self-attention
# only the past, cross-attention reads the source from the target
GROUP_NAMES = {"encoder": "encoder self-attention", "decoder": "decoder masked self-attention",
               "cross": "cross-attention (target reads source)"}
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
        layer = clamp(layer, 0, n_layer - 1, "Layer", notices)
        head = clamp(head, 0, n_head - 1, "Head", notices)
        return layer, head, self.attn[layer, head]

    def query(self, query, notices: list[str] | None = None) -> tuple[int, np.ndarray]:
        """(query position, its rows (n_layer, n_head, Tk) in every head), the position clamped to the text."""
        query = clamp(query, 0, self.attn.shape[2] - 1, "Query token", notices)
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


GPT2_LABEL = "gpt2 (GPT-2 from the Hugging Face Hub)"


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
    raise InputError(f"No model {label_or_name!r} in {store.model_dir()}; pick one from the list.")


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
        raise InputError("Type a source first: digits for copy/reverse/sort, a sentence for pig latin.")
    limit = min(MAX_DRAWN_TOKENS, max_len) - 1  # room for </s>
    if len(text) > limit:
        cut = notice(cut, f"Your source has {len(text)} characters; this model reads at most {limit}, "
                          f"so the first {limit} are used.")
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
        cut = notice(cut, f"The translation has {len(target)} tokens; the first {room} are shown.")
        target = target[:room]
    _, trace = traced(model, codec, text, target)
    src = list(text) + ["</s>"]
    tgt = ["<s>"] + [tokenizer.decode([i]) for i in target]
    q, k = {"encoder": (src, src), "decoder": (tgt, tgt), "cross": (tgt, src)}[group]
    return _labelled(name, group, trace.attention(group)[:, 0], q, k,
                     notice(cut, f"Translation: **{codec.text(target)}**"))


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
        raise InputError("Type some text first.")
    groups = GROUPS_OF[store.arch(name)]
    if group not in groups:
        if group is not None:
            cut = notice(cut, f"This model has no {GROUP_NAMES.get(group, group)}; showing its "
                              f"{GROUP_NAMES[groups[0]]}.")
        group = groups[0]
    run = _runs.get((str(store.model_dir()), name, text, group), lambda: _compute(name, text, group))
    return run if not cut else replace(run, notice=notice(cut, run.notice))


@torch.no_grad()
def _compute(name: str, text: str, group: str) -> AttentionRun:
    model, tokenizer = load(name)
    if store.arch(name) == "EncoderDecoder":
        return _translator_run(name, model, tokenizer, text, group, "")
    tokens = fit_tokens(tokenizer, text, min(MAX_DRAWN_TOKENS, model.config.max_len))
    attn = _traced((str(store.model_dir()), name), tokens.ids)  # shares a pass with texts asked at the same time
    return _labelled(name, group, attn, tokens.labels, tokens.labels, tokens.notice)


def _traced_together(key: tuple[str, str], sequences: list[list[int]]) -> list[torch.Tensor]:
    """Each token sequence's self-attention (n_layer, n_head, T, T), from one padded pass of model `key[1]`."""
    return attention_of_each(load(key[1])[0], sequences)


_traced: Batcher[list[int], torch.Tensor] = Batcher(_traced_together)


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
        raise InputError("Type a prompt first.")
    if store.arch(name) != "DecoderLM":
        raise InputError("Attention while generating needs a language model: pick one in the model list.")
    notices = [cut] if cut else []
    n_new = clamp(n_new, 1, MAX_NEW_TOKENS, "New tokens", notices)
    return _runs.get((str(store.model_dir()), name, text, "generate", n_new),
                     lambda: _generate(name, text, n_new, notice(*notices)))


def _generate(name: str, text: str, n_new: int, cut: str) -> GenerationRun:
    model, tokenizer = load(name)
    tokens = fit_tokens(tokenizer, text, min(MAX_DRAWN_TOKENS, model.config.max_len) - n_new, keep="last")
    gen = attention_while_generating(model, tokens.ids, n_new)
    labels = [tokenizer.decode([i]) for i in gen.ids]
    return GenerationRun(labels, gen.n_prompt, [r.numpy() for r in gen.rows], tokenizer.decode(gen.generated),
                         notice(cut, tokens.notice))
