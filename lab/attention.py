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
from transformer_core import attention_of_each, attention_rollout, attention_while_generating
from transformer_core.decoding.seq2seq import Codec

from . import llms, models, reading, translate
from .cache import Batcher, RunCache
from .models import GPT2_LABEL, resolve  # noqa: F401 -- GPT2_LABEL: the Attention picker's GPT-2
from .policy import MAX_DRAWN_TOKENS, InputError, clamp, notice, source_text

MAX_NEW_TOKENS = 40
# the attention groups a model may have (which it has: its kind's groups, lab/store.KINDS)
GROUP_NAMES = {group: Message(f"attention.group.{group}") for group in ("encoder", "decoder", "cross")}
EXAMPLE_TEXT = {
    "lm": "ROMEO: But soft, what light through yonder window breaks? It is the east, and Juliet is the sun.",
    "classifier": "The plot was thin, but the acting was wonderful and I was not bored for a minute.",
}


@dataclass(frozen=True)
class AttentionRun:
    """One group's weights for one text, read by checkpoint `name`: attn (n_layer, n_head, Tq, Tk) and the tokens'
    labels of both axes."""

    name: str
    group: str
    attn: np.ndarray
    q_labels: list[str]
    k_labels: list[str]
    notice: str
    rollout: np.ndarray | None  # (T, T) after the last layer; None for cross-attention
    # a modern decoder's layout, which the figures label: query heads per key/value head (grouped-query
    # attention), and the sliding-window layers with their window (Gemma 3)
    group_size: int = 1
    local_layers: tuple[int, ...] = ()
    window: int | None = None

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return self.attn.shape

    def kv_head(self, head: int) -> int:
        """The key/value head query head `head` reads (itself without grouped-query attention)."""
        return head // self.group_size

    @property
    def first_token_share(self) -> np.ndarray:
        """(n_layer, n_head): the mean weight the queries after the first put on the first token (the "attention
        sink" of trained LLMs); nan for a one-token text."""
        if self.attn.shape[2] < 2:
            return np.full(self.attn.shape[:2], np.nan, dtype=np.float32)
        return self.attn[:, :, 1:, 0].mean(axis=-1)

    def focus(self, layer, head, query, notices: list[str] | None = None) -> tuple[int, int, int]:
        """(layer, head, query position) a view of this run draws large, each clamped once to the run's sizes."""
        layer, head, _ = self.head(layer, head, notices)
        return layer, head, self.query(query, notices)[0]

    def head(self, layer, head, notices: list[str] | None = None) -> tuple[int, int, np.ndarray]:
        """(layer, head, that head's attn (Tq, Tk)), the indices clamped to this model's sizes."""
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
CHINESE_EXAMPLE = "这只动物没有过马路，因为它太累了。"  # the seed sentence, in Chinese
TRANSLATOR_EXAMPLES = {"copy": "31415926", "reverse": "123456789", "sort": "52819330", "pig_latin": "She pet the dog."}


def example_text(name: str) -> str:
    """A text the model can read: a translator gets a source of its own task."""
    checkpoint = models.checkpoint(name)
    if not checkpoint.reads("en"):  # the Chinese models know few Latin letters
        return CHINESE_EXAMPLE
    if checkpoint.kind.role != "translator":
        return EXAMPLE_TEXT[checkpoint.kind.role]
    task = next((t for t in TRANSLATOR_EXAMPLES if t.replace("_", "-") in name), "pig_latin")
    return TRANSLATOR_EXAMPLES[task]


def models_offered() -> dict[str, str]:
    """The Attention tab's picker: label -> checkpoint name."""
    return models.choices()


def _translator_run(name: str, net, tokenizer, text: str, group: str) -> AttentionRun:
    """One group of the translation run the Translate tab and the heads section share (lab/translate.py)."""
    codec = Codec(tokenizer)
    text, cut = source_text(codec, net.config.max_len, text)
    run = translate.translated(name, text)
    target = run.written[:-1]  # without </s>
    room = MAX_DRAWN_TOKENS - 1  # a decoder of more positions than are drawn (pig latin's 160) is drawn in part
    if len(target) > room:
        cut = notice(cut, Message("attention.translation_cut", n=len(target), room=room))
        target = target[:room]
    src = list(text) + ["</s>"]
    tgt = ["<s>"] + [tokenizer.decode([i]) for i in target]
    q, k = {"encoder": (src, src), "decoder": (tgt, tgt), "cross": (tgt, src)}[group]
    attn = torch.from_numpy(run.attn[group][:, :, :len(q), :len(k)])  # (n_layer, n_head, Tq, Tk)
    return _labelled(name, net, group, attn, q, k,
                     notice(cut, run.notice, Message("attention.translation", text=codec.text(target))))


def _labelled(name: str, net, group: str, attn: torch.Tensor, q: list[str], k: list[str], cut: str) -> AttentionRun:
    """The run of checkpoint `name`, its layout read from the loaded model `net`'s own config (the one it ran)."""
    rollout = None if group == "cross" else attention_rollout(attn)[-1].numpy()
    config = net.config
    local = tuple(i for i in range(attn.shape[0]) if config.is_local(i))
    return AttentionRun(name, group, attn.numpy().astype(np.float32), q, k, cut, rollout,
                        config.n_head // config.n_kv_head, local, config.sliding_window)


_runs: RunCache[AttentionRun] = RunCache(size=64)


def attention_run(model: str, text: str | None, group: str | None = None) -> AttentionRun:
    """Run the model once on `text` with a trace and label the chosen group's weights.

    `model` is a checkpoint name or picker label; a group the model lacks falls back to its
    first one, with a notice. Identical requests share one cached run.
    """
    name = resolve(model)
    text, cut = reading.prepare(name, text, Message("attention.type_text"))
    groups = models.checkpoint(name).kind.groups
    if group not in groups:
        if group is not None:
            cut = notice(cut, Message("attention.no_group", group=GROUP_NAMES.get(group, group),
                                          fallback=GROUP_NAMES[groups[0]]))
        group = groups[0]
    run = _runs.get(models.key(name, text, group), lambda: _compute(name, text, group))
    return run if not cut else replace(run, notice=notice(cut, run.notice))


@torch.no_grad()
def _compute(name: str, text: str, group: str) -> AttentionRun:
    net, tokenizer = models.load(name)
    if models.checkpoint(name).kind.role == "translator":
        return _translator_run(name, net, tokenizer, text, group)
    read = reading.read(name, tokenizer, text, min(MAX_DRAWN_TOKENS, net.config.max_len),
                        offered=models.choices())
    attn = _traced(name, read.ids)  # shares a pass with texts asked at the same time
    return _labelled(name, net, group, attn, read.labels, read.labels, read.notice)


def _traced_together(name: str, sequences: list[list[int]]) -> list[torch.Tensor]:
    """Each token sequence's self-attention (n_layer, n_head, T, T), from one padded pass of checkpoint `name`."""
    return attention_of_each(models.load(name)[0], sequences)


_traced: Batcher[list[int], torch.Tensor] = Batcher(_traced_together)


@dataclass(frozen=True)
class WhileGeneratingRun:
    """What a language model looked at while it generated greedily, one row per new token."""

    labels: list[str]  # prompt + generated tokens
    n_prompt: int
    rows: list[np.ndarray]  # rows[s]: (n_layer, n_head, n_prompt + s)
    continuation: str
    notice: str

    def head(self, layer, head, notices: list[str] | None = None) -> tuple[int, int]:
        """(layer, head) clamped to this model's sizes."""
        n_layer, n_head = self.rows[0].shape[:2]
        return (clamp(layer, 0, n_layer - 1, Message("setting.layer"), notices),
                clamp(head, 0, n_head - 1, Message("setting.head"), notices))

    def step(self, step, notices: list[str] | None = None) -> tuple[int, str, np.ndarray, list[str]]:
        """(step clamped, the token it chose, its rows (n_layer, n_head, Tk), the Tk labels it read)."""
        step = clamp(step, 0, len(self.rows) - 1, Message("setting.step"), notices)
        rows = self.rows[step]
        return step, self.labels[self.n_prompt + step], rows, self.labels[: rows.shape[-1]]


def while_generating_run(model: str, text: str | None, n_new) -> WhileGeneratingRun:
    """Generate greedily with the KV cache and keep each new token's attention row."""
    name = resolve(model)
    text, cut = reading.prepare(name, text, Message("attention.type_prompt"), keep="last")  # it continues the end
    if models.checkpoint(name).kind.role != "lm":
        raise InputError(Message("attention.needs_lm"))
    notices: list[str] = []
    n_new = clamp(n_new, 1, MAX_NEW_TOKENS, Message("setting.new_tokens"), notices)
    net, tokenizer = models.load(name)
    read = reading.read(name, tokenizer, text, min(MAX_DRAWN_TOKENS, net.config.max_len) - n_new, keep="last")
    run = _runs.get(models.key(name, tuple(read.ids), "generate", n_new),
                    lambda: _generate(name, net, tokenizer, read.ids, n_new))
    return replace(run, notice=notice(cut, read.notice, *notices))


def _generate(name: str, net, tokenizer, ids: list[int], n_new: int) -> WhileGeneratingRun:
    if name in llms.LLMS:  # a real LLM generates in the one lane of the real LLMs, at a low priority
        with llms.lane(name):
            gen = llms.done_behind(lambda: attention_while_generating(net, ids, n_new))
    else:
        gen = attention_while_generating(net, ids, n_new)
    labels = [tokenizer.decode([i]) for i in gen.ids]
    return WhileGeneratingRun(labels, gen.n_prompt, [r.numpy() for r in gen.rows], tokenizer.decode(gen.generated),
                              "")
