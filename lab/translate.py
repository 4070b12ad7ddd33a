"""The Translate tab's use case: a shipped encoder-decoder writes its target, then one traced pass re-reads it.

The run keeps every step's next-token distribution and every attention group, so the
table, the heatmaps and the layer and head choices are slices of one run.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np

from i18n import Message
from transformer_core import BeamResult, Codec, translate
from transformer_core.decoding.seq2seq import traced
from transformer_core.tasks import TOY_LENGTHS, accuracy_by_length, get_task

from . import live, models
from .cache import RunCache
from .policy import InputError, clamp, notice, quoted, source_text

TASKS = ("copy", "reverse", "sort", "pig_latin")  # transformer_core.tasks; each translator's config names its task
# what each task's alphabet takes, said in one line (Chinese, say, is in none of them)
TAKES = {"copy": "translate.takes_digits", "reverse": "translate.takes_digits", "sort": "translate.takes_digits",
         "pig_latin": "translate.takes_latin"}
POSITION_MODELS = {"learned positions": "translate-copy", "sinusoidal positions": "translate-copy-sinusoidal"}
LENGTHS = range(1, 21)
AUTO_LAYER = -1  # "the layer that shows the lesson": the sharpest cross-attention
GROUPS = {"cross-attention": "cross", "encoder self-attention": "encoder", "decoder self-attention": "decoder"}
HEADS = ["mean of heads", *(f"head {h}" for h in range(8))]


@dataclass(frozen=True)
class TranslationRun:
    """One translation: the output, each step's distribution, every attention group, the beam tree."""

    task: str
    source: str
    output: str
    written: list[int]  # the target ids, then </s>
    probs: np.ndarray  # (len(written), vocab): the distribution each token was written from
    attn: dict[str, np.ndarray]  # group -> (n_layer, n_head, Tq, Tk)
    labels: dict[str, list[str]]  # "source", "writes", "reads" -> one label per position
    beam: BeamResult | None
    codec: Codec
    notice: str
    width: int = 1  # the beam width it was decoded with, 1: greedy

    def sharpest_layer(self) -> int:
        """The layer whose cross-attention is most decisive (the mean over steps of the largest head-averaged
        weight): where copy shows its diagonal, reverse its anti-diagonal and sort its permutation."""
        cross = self.attn["cross"].mean(axis=1)  # (n_layer, Tq, Tk)
        return int(cross.max(axis=-1).mean(axis=-1).argmax())

    def layer(self, layer, notices: list[str] | None = None) -> int:
        if layer is not None and str(layer).strip() == str(AUTO_LAYER):
            return self.sharpest_layer()
        return clamp(layer, 0, self.attn["cross"].shape[0] - 1, Message("setting.layer"), notices)

    def focus(self, group: str, layer, head) -> tuple[str, int, int | None, str]:
        """(attention group, layer, head index or None for the mean of heads, a notice of what was moved)
        for a group, layer and head as the endpoint takes them ("cross-attention", -1, "head 3")."""
        if group not in GROUPS:
            raise InputError(Message("translate.bad_group", groups=", ".join(GROUPS), group=quoted(group)))
        notices: list[str] = []
        layer = self.layer(layer, notices)
        n_head = self.attn["cross"].shape[1]
        head_index = None if head in (None, HEADS[0]) else clamp(str(head).split()[-1], 0, n_head - 1,
                                                                   Message("setting.head"), notices)
        return GROUPS[group], layer, head_index, notice(*notices)


def token_label(codec: Codec):
    """id -> text for tables and plots; <s> and </s> drawn as ⟨s⟩ and ⟨/s⟩, which plotly would
    otherwise read as a strike-through tag and lay out wrongly."""
    return lambda i: codec.tokenizer.id_to_token(i).replace("<", "⟨").replace(">", "⟩")


def _load(name: str):
    model, tokenizer = models.load(name)
    return model, Codec(tokenizer)


def run_translation(model, codec: Codec, text: str, width: int = 1, task: str = "", cut: str = "") -> TranslationRun:
    """Translate `text` (already checked) with any encoder-decoder, then re-read it in one traced pass
    (a translation longer than the decoder's positions is re-read as far as they go, with a notice)."""
    result = translate(model, codec, text, width)
    ids, room = result.ids, model.config.max_len - 1  # the decoder reads <s> + the target
    if len(ids) > room:
        cut = notice(cut, Message("attention.translation_cut", n=len(ids), room=room))
        ids = ids[:room]
    written = [*ids, codec.eos]
    probs, trace = traced(model, codec, text, ids)
    label = token_label(codec)
    labels = {"source": [label(i) for i in codec.source_ids(text)], "writes": [label(i) for i in written],
              "reads": [label(i) for i in [codec.bos, *ids]]}
    attn = {group: trace.attention(group)[:, 0].numpy() for group in ("encoder", "decoder", "cross")}
    return TranslationRun(task, text, codec.text(result.ids), written, probs.numpy(), attn, labels, result.beam,
                          codec, cut, width)


_runs: RunCache[TranslationRun] = RunCache(size=64)


def checkpoint_of(task: str) -> str:
    """The translator of `task`, from the one registry: the first whose config names that task (when none is
    installed, the shipped folder's name, which loading then reports missing)."""
    if task not in TASKS:
        raise InputError(Message("translate.bad_task", tasks=", ".join(TASKS), task=quoted(task)))
    found = (c.name for c in models.registry() if c.arch == "EncoderDecoder" and c.task == task)
    return next(found, "translate-" + task.replace("_", "-"))


def translated(name: str, source: str) -> TranslationRun:
    """Checkpoint `name`'s greedy translation of a source already read (`source_text`), traced once: the
    Translate tab, the Attention tab and the heads section share this one run per text."""
    model, codec = _load(name)
    return _runs.get(models.key(name, source, 1),
                     lambda: run_translation(model, codec, source, 1, models.checkpoint(name).task or ""))


def _read_source(task: str, source: str | None):
    """(model, codec, source as it reads it, notice) for the shipped model of `task`; a source it cannot
    read is an InputError that says which alphabet the task takes."""
    model, codec = _load(checkpoint_of(task))
    try:
        text, cut = source_text(codec, model.config.max_len, source)
    except InputError as e:
        if getattr(e.args[0], "key", None) != "policy.not_in_alphabet":  # empty, say: nothing about the alphabet
            raise
        raise InputError(notice(Message(TAKES[task]), e.args[0])) from e
    return model, codec, text, cut


def translation(task: str, source: str | None, width=1) -> TranslationRun:
    """The shipped model of `task` translates `source` (greedy, or beam search of `width` 2-8)."""
    notices: list[str] = []
    width = clamp(width, 1, 8, Message("setting.beam_width"), notices)
    model, codec, text, cut = _read_source(task, source)
    run = _runs.get(models.key(checkpoint_of(task), text, width),
                    lambda: run_translation(model, codec, text, width, task))
    return replace(run, notice=notice(cut, *notices, run.notice))


def translate_source(model, codec: Codec, source: str | None) -> TranslationRun:
    """Any encoder-decoder (a model just trained live, say) translates a source as it was typed."""
    return run_translation(model, codec, source_text(codec, model.config.max_len, source)[0])


@dataclass(frozen=True)
class LiveRun:
    """A live training run as the tab shows it: the slot's progress against the steps and time asked for,
    and once trained, the fresh model's translation of the source and its score on held-out sources."""

    progress: live.Progress
    steps: int
    budget: float  # seconds
    run: TranslationRun | None = None
    accuracy: float | None = None  # exact match on live.FINAL_CHECK_SIZE held-out sources

    @property
    def step(self) -> int:
        return self.progress.losses[-1][0] if self.progress.losses else 0

    @property
    def done(self) -> float:
        """How much of the run is behind it (0 to 1): of its steps or of its time, whichever is further."""
        return min(1.0, max(self.step / self.steps, self.progress.seconds / self.budget))

    @property
    def last_check(self) -> float | None:
        """The latest held-out exact match of the goal checks, if one ran yet."""
        return self.progress.checks[-1][1] if self.progress.checks else None


def train_live(slot: live.LiveTraining, task: str, size: str, steps, seconds, source: str | None) -> Iterator[LiveRun]:
    """Train a fresh model of `size` on `task` in `slot`, yielding its progress while it trains, then once
    more with its translation of `source` and its held-out score."""
    steps = clamp(steps, *live.STEPS, Message("setting.steps"))
    seconds = clamp(seconds, *live.SECONDS, Message("setting.time_budget"))
    if size not in live.SIZES:
        raise InputError(Message("translate.bad_size", sizes=", ".join(live.SIZES), size=quoted(size)))
    # the fresh model reads the task's alphabet, as the shipped one does: a source it cannot read is
    # refused now, not after the class has watched it train
    _read_source(task, source)
    progress = None
    for progress in slot.run(task, size, steps, seconds):
        if progress.model is None:
            yield LiveRun(progress, steps, seconds)
    run = translate_source(progress.model, progress.codec, source)
    accuracy = live.held_out_score(progress.model, progress.codec, task, live.FINAL_CHECK_SIZE)
    yield LiveRun(progress, steps, seconds, run, accuracy)


def length_generalisation(n_per_length) -> tuple[dict[str, dict[int, float]], int]:
    """({position kind: {length: exact match}}, the longest training length) for the two copy models."""
    n = clamp(n_per_length, 1, 1000, Message("setting.per_length"))
    task = get_task("copy")
    curves = {}
    for name, checkpoint in POSITION_MODELS.items():
        model, codec = _load(checkpoint)
        curves[name] = accuracy_by_length(model, codec, task, LENGTHS, n)
    return curves, TOY_LENGTHS[1]
