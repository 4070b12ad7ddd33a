"""The Translate tab's use case: a shipped encoder-decoder writes its target, then one traced pass re-reads it.

The run keeps every step's next-token distribution and every attention group, so the
table, the heatmaps and the layer and head choices are slices of one run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from i18n import Message
from transformer_core import BeamResult, Codec, translate
from transformer_core.decoding.seq2seq import traced
from transformer_core.tasks import TOY_LENGTHS, accuracy_by_length, get_task

from . import models
from .cache import RunCache
from .policy import InputError, clamp, notice, source_text

CHECKPOINTS = {"copy": "translate-copy", "reverse": "translate-reverse", "sort": "translate-sort",
               "pig_latin": "translate-pig-latin"}
# what each task's alphabet takes, said in one line (Chinese, say, is in none of them)
TAKES = {"copy": "translate.takes_digits", "reverse": "translate.takes_digits", "sort": "translate.takes_digits",
         "pig_latin": "translate.takes_latin"}
POSITION_MODELS = {"learned positions": "translate-copy", "sinusoidal positions": "translate-copy-sinusoidal"}
LENGTHS = range(1, 21)
AUTO_LAYER = -1  # "the layer that shows the lesson": the sharpest cross-attention


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

    def sharpest_layer(self) -> int:
        """The layer whose cross-attention is most decisive (the mean over steps of the largest head-averaged
        weight): where copy shows its diagonal, reverse its anti-diagonal and sort its permutation."""
        cross = self.attn["cross"].mean(axis=1)  # (n_layer, Tq, Tk)
        return int(cross.max(axis=-1).mean(axis=-1).argmax())

    def layer(self, layer, notices: list[str] | None = None) -> int:
        if layer is not None and str(layer).strip() == str(AUTO_LAYER):
            return self.sharpest_layer()
        return clamp(layer, 0, self.attn["cross"].shape[0] - 1, Message("setting.layer"), notices)


def token_label(codec: Codec):
    """id -> text for tables and plots; <s> and </s> drawn as ⟨s⟩ and ⟨/s⟩, which plotly would
    otherwise read as a strike-through tag and lay out wrongly."""
    return lambda i: codec.tokenizer.id_to_token(i).replace("<", "⟨").replace(">", "⟩")


def _load(name: str):
    model, tokenizer = models.load(name)
    return model, Codec(tokenizer)


def run_translation(model, codec: Codec, text: str, width: int = 1, task: str = "", cut: str = "") -> TranslationRun:
    """Translate `text` (already checked) with any encoder-decoder, then re-read it in one traced pass."""
    result = translate(model, codec, text, width)
    written = [*result.ids, codec.eos]
    probs, trace = traced(model, codec, text, result.ids)
    label = token_label(codec)
    labels = {"source": [label(i) for i in codec.source_ids(text)], "writes": [label(i) for i in written],
              "reads": [label(i) for i in [codec.bos, *result.ids]]}
    attn = {group: trace.attention(group)[:, 0].numpy() for group in ("encoder", "decoder", "cross")}
    return TranslationRun(task, text, codec.text(result.ids), written, probs.numpy(), attn, labels, result.beam,
                          codec, cut)


_runs: RunCache[TranslationRun] = RunCache(size=64)


def translation(task: str, source: str | None, width=1) -> TranslationRun:
    """The shipped model of `task` translates `source` (greedy, or beam search of `width` 2-8)."""
    if task not in CHECKPOINTS:
        raise InputError(Message("translate.bad_task", tasks=", ".join(CHECKPOINTS), task=repr(task)))
    notices: list[str] = []
    width = clamp(width, 1, 8, Message("setting.beam_width"), notices)
    model, codec = _load(CHECKPOINTS[task])
    try:
        text, cut = source_text(codec, model.config.max_len, source)
    except InputError as e:
        if isinstance(e.args[0], Message):  # an empty source: nothing about the alphabet to say
            raise
        raise InputError(notice(Message(TAKES[task]), e.args[0])) from e
    run = _runs.get(models.key(CHECKPOINTS[task], text, width),
                    lambda: run_translation(model, codec, text, width, task))
    return replace(run, notice=notice(cut, *notices))


def length_generalisation(n_per_length) -> tuple[dict[str, dict[int, float]], int]:
    """({position kind: {length: exact match}}, the longest training length) for the two copy models."""
    n = clamp(n_per_length, 1, 1000, Message("setting.per_length"))
    task = get_task("copy")
    curves = {}
    for name, checkpoint in POSITION_MODELS.items():
        model, codec = _load(checkpoint)
        curves[name] = accuracy_by_length(model, codec, task, LENGTHS, n)
    return curves, TOY_LENGTHS[1]
