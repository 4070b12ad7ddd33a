"""The forward pass, stage by stage: one traced run of a shipped model on a text, sliced for each stage.

Lesson: a transformer is a short list of matrix steps (ids -> embedding + position -> per layer: layer
norm, Q K V, scores QKᵀ/√d, mask, softmax, weighted sum of values, heads concatenated, W_o, residual,
feed-forward, residual -> final norm -> logits -> softmax -> the next token, or the pooled vector and the
classes). `walk` runs the model ONCE with every trace point kept (`names=all`); every stage
is a slice of that trace by module path, so what is drawn is what the model computed, never a second
implementation of it. The three readouts after the logits (softmax, argmax, the loss against a target)
are the head's own arithmetic on the traced logits.

Models: a language model reads the text and predicts each next token; a classifier reads it and pools;
a translator reads it as the source and its own greedy translation as the decoder's input (teacher
forcing on what it wrote), so its decoder rows are the decoder loop's steps, one token at a time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import torch

from i18n import Message
from transformer_core.decoding.seq2seq import Codec

from . import models, reading, store
from .translate import token_label
from .cache import RunCache
from .policy import MAX_DRAWN_TOKENS, InputError, clamp, notice, quoted, source_text

# The 19 stages, in order; a layer's stages (3-13) repeat for each block.
STAGES = ("ids", "embed", "norm", "qkv", "scores", "mask", "attn", "weighted", "concat", "attn_out", "resid_mid",
          "ff", "block_out", "final_norm", "logits", "probs", "next", "pooled", "loss")
LAYER_STAGES = frozenset(STAGES[2:13])
HEAD_STAGES = frozenset({"qkv", "scores", "mask", "attn", "weighted"})
TOP_COLUMNS = 20  # the vocabulary's columns drawn at the logits and softmax stages: the followed token's likeliest
EVERYTHING = all  # the trace contract's "keep every point"


@dataclass(frozen=True)
class Walk:
    """Everything one traced run of checkpoint `name` on a text computed, labelled.

    stacks: "encoder"/"decoder" -> (block paths, embedding name, final norm name or None, the tokens' labels, ids).
    target: the ids each position is scored against at the loss stage (next tokens / written tokens / a class).
    vocab: a label per output id; a classifier's classes are messages, named in the reader's language when drawn.
    """

    name: str
    kind: str  # its role (lab/store.KINDS): lm | classifier | translator
    config: dict
    trace: object
    stacks: dict
    logits: torch.Tensor  # (T, vocab) or (n_class,)
    vocab: list[str]  # a label per output id
    target: list[int]
    notice: str

    @property
    def n_layer(self) -> int:
        return self.config["n_layer"]

    @property
    def n_head(self) -> int:
        return self.config["n_head"]

    def stack(self, stack: str | None) -> str:
        """The stack a stage is read from: a translator's encoder or decoder; the one stack of the others."""
        return stack if stack in self.stacks else next(iter(self.stacks))

    def labels(self, stack: str | None = None) -> list[str]:
        """The tokens' labels of a stack, one per position."""
        return self.stacks[self.stack(stack)]["labels"]


@dataclass(frozen=True)
class Slice:
    """One stage's matrix as drawn: values (rows, cols), the labels of both axes, the trace points it is
    read from, its shape named the model's way ("T=9", "d_model=192"), and where it was cut: the layer and
    head, and the followed row among its rows, each clamped once, here."""

    stage: str
    values: np.ndarray
    rows: list[str]
    cols: list[str]
    points: tuple[str, ...]
    shape: tuple[str, ...]
    applies: bool = True  # False: the stage is not part of this kind of model (a note says so)
    layer: int = 0
    head: int = 0
    follow: int = 0


def models_offered() -> dict[str, str]:
    """Picker label -> checkpoint name: every shipped model (no cheat checkpoints, no download)."""
    return store.checkpoints()


_walks: RunCache[Walk] = RunCache(size=16)


def walk(model: str, text: str | None) -> Walk:
    """The whole forward pass of `model` (a picker label or checkpoint name) on `text`, computed once (cached)
    and sliced by `stage`: the text read through the one reading path (lab/reading.py)."""
    name = models.resolve(model)
    if name == store.GPT2:
        raise InputError(Message("forward.no_gpt2"))
    text, cut = reading.prepare(name, text, Message("attention.type_text"))
    run = _walks.get(models.key(name, text), lambda: _compute(name, text))
    return run if not cut else Walk(**{**run.__dict__, "notice": notice(cut, run.notice)})


@torch.no_grad()
def _compute(name: str, text: str) -> Walk:
    net, tokenizer = models.load(name)
    config = store.config(name)
    kind = models.checkpoint(name).kind.role
    if kind == "translator":
        return _translator_walk(name, net, tokenizer, config, text)
    read = reading.read(name, tokenizer, text, min(MAX_DRAWN_TOKENS, config["max_len"]), offered=models_offered())
    idx = torch.tensor([read.ids])
    if kind == "lm":
        logits, trace = net.run_with_trace(idx, names=EVERYTHING)
        target = read.ids[1:]  # each position is scored against the token that follows it
        vocab = _vocab(tokenizer, config["vocab_size"])
    else:
        logits, trace = net.run_with_trace(idx, torch.tensor([len(read.ids)]), names=EVERYTHING)
        target = [int(logits[0].argmax())]  # the loss of the verdict it gives (the lesson: loss of a label)
        vocab = [Message(f"forward.class.{i}") if config["n_class"] == 2 else str(i) for i in range(config["n_class"])]
    stack = "decoder" if kind == "lm" else "encoder"
    stacks = {stack: dict(blocks=[f"layers.{i}" for i in range(config["n_layer"])], embed="embed",
                          norm="norm.out" if config["norm_first"] else None, labels=read.labels, ids=read.ids)}
    return Walk(name, kind, config, trace, stacks, logits[0].float(), vocab, target, read.notice)


def _translator_walk(name: str, net, tokenizer, config: dict, text: str) -> Walk:
    from transformer_core.decoding.seq2seq import translate

    codec = Codec(tokenizer)
    text, cut = source_text(codec, config["max_len"], text)
    written = list(translate(net, codec, text, 1).ids)  # the greedy translation Translate shows
    src, src_lengths = codec.sources([text])
    tgt = torch.tensor([[codec.bos, *written]])
    logits, trace = net.run_with_trace(src, tgt, src_lengths, names=EVERYTHING)
    label = token_label(codec)
    n = config["n_layer"]
    stacks = {"encoder": dict(blocks=[f"encoder.{i}" for i in range(n)], embed="src_embed",
                              norm="encoder_norm.out" if config["norm_first"] else None,
                              labels=[label(int(i)) for i in src[0]], ids=src[0].tolist()),
              "decoder": dict(blocks=[f"decoder.{i}" for i in range(n)], embed="tgt_embed",
                              norm="decoder_norm.out" if config["norm_first"] else None,
                              labels=[label(int(i)) for i in tgt[0]], ids=tgt[0].tolist())}
    vocab = [label(i) for i in range(config["tgt_vocab_size"])]
    return Walk(name, "translator", config, trace, stacks, logits[0].float(), vocab, [*written, codec.eos], cut)


def _vocab(tokenizer, size: int) -> list[str]:
    return [tokenizer.decode([i]) for i in range(size)]


# --- slicing ----------------------------------------------------------------------------------------

def stage_of(stage) -> str:
    """A stage name, or its number (1-19) as the issue lists them; anything else is an InputError."""
    text = str(stage if stage is not None else "").strip()
    if text.isdigit() and 1 <= int(text) <= len(STAGES):
        return STAGES[int(text) - 1]
    if text not in STAGES:
        raise InputError(Message("forward.bad_stage", stage=quoted(text), n=len(STAGES)))
    return text


def point_names(run: Walk, stage: str, layer: int, stack: str | None = None, cross: bool = False) -> tuple[str, ...]:
    """The trace points stage `stage` reads, by module path."""
    s = run.stacks[run.stack(stack)]
    block = s["blocks"][layer]
    attn = f"{block}.{'cross_attn' if cross else 'self_attn'}"
    # a translator's decoder layer has two residuals before its feed-forward: after self-attention, after cross
    reads_encoder = run.kind == "translator" and run.stack(stack) == "decoder"
    resid = f"{block}.resid_self" if reads_encoder and not cross else f"{block}.resid_mid"
    return {
        "ids": (), "embed": (f"{s['embed']}.out",),
        "norm": (f"{block}.{'norm_cross' if cross else 'norm_self'}.out",),
        "qkv": (f"{attn}.q", f"{attn}.k", f"{attn}.v"), "scores": (f"{attn}.scores",), "mask": (f"{attn}.mask",),
        "attn": (f"{attn}.attn",), "weighted": (f"{attn}.weighted",), "concat": (f"{attn}.concat",),
        "attn_out": (f"{attn}.out",), "resid_mid": (resid,), "ff": (f"{block}.ff.out",),
        "block_out": (f"{block}.out",), "final_norm": (s["norm"],) if s["norm"] else (f"{s['blocks'][-1]}.out",),
        "logits": ("logits",), "probs": ("logits",), "next": ("logits",), "pooled": ("pooled",), "loss": ("logits",),
    }[stage]


def stage_slice(run: Walk, stage, layer=0, head=0, stack: str | None = None, cross: bool = False,
                follow: int = 0) -> Slice:
    """Stage `stage` of the run as one matrix (layer, head and stack picked), and where it was cut: the layer, the
    head and the followed position clamped to the model and the text, here and only here."""
    stage = stage_of(stage)
    stack = run.stack(stack)
    layer = clamp(layer, 0, run.n_layer - 1, Message("setting.layer"))
    head = clamp(head, 0, run.n_head - 1, Message("setting.head"))
    follow = clamp(follow, 0, len(run.labels(stack)) - 1, Message("setting.position"))
    piece = _cut(run, stage, layer, head, stack, bool(cross) and stack == "decoder" and run.kind == "translator",
                 follow)
    # the followed position's row: a classifier's readouts have one row, for the whole text
    return replace(piece, layer=layer, head=head, follow=min(follow, max(len(piece.rows) - 1, 0)))


def _cut(run: Walk, stage: str, layer: int, head: int, stack: str, cross: bool, follow: int) -> Slice:
    labels = run.labels(stack)
    T, d_model, d_head = len(labels), run.config["d_model"], run.config["d_model"] // run.n_head
    keys = run.labels("encoder") if cross else labels
    names = point_names(run, stage, layer, stack, cross)
    tr = run.trace
    dims = [str(j) for j in range(d_model)]
    if stage == "ids":
        ids = run.stacks[stack]["ids"]
        return Slice(stage, np.array(ids, dtype=np.float32)[:, None], labels, ["id"], names, (f"T={T}",))
    if stage in ("embed", "norm", "concat", "attn_out", "resid_mid", "ff", "block_out", "final_norm"):
        return Slice(stage, tr[names[0]][0].numpy(), labels, dims, names, (f"T={T}", f"d_model={d_model}"))
    if stage == "qkv":
        q, k, v = (tr[n][0, head].numpy() for n in names)
        cols = [f"{part}{j}" for part in ("q", "k", "v") for j in range(d_head)]
        if cross:  # the three arrows: Q from the decoder's rows, K and V from the encoder's (another length)
            S = len(keys)
            rows = [f"{part} · {token}" for part, side in (("Q", labels), ("K", keys), ("V", keys))
                    for token in side]
            return Slice(stage, np.concatenate([q, k, v], axis=0), rows, [str(j) for j in range(d_head)], names,
                         (f"T={T} + S={S} + S={S}", f"d_head={d_head}"))
        return Slice(stage, np.concatenate([q, k, v], axis=1), labels, cols, names, (f"T={T}", f"d_head={d_head}"))
    if stage in ("scores", "attn"):
        return Slice(stage, tr[names[0]][0, head].numpy(), labels, keys, names, (f"T={T}", f"T={len(keys)}"))
    if stage == "mask":
        allowed = tr[names[0]] if names[0] in tr else torch.ones(1, 1, T, len(keys), dtype=torch.bool)
        allowed = allowed.expand(-1, run.n_head, -1, -1)[0, head] if allowed.dim() == 4 else allowed[0]
        return Slice(stage, allowed.numpy().astype(np.float32), labels, keys, names, (f"T={T}", f"T={len(keys)}"))
    if stage == "weighted":
        return Slice(stage, tr[names[0]][0, head].numpy(), labels, [str(j) for j in range(d_head)], names,
                     (f"T={T}", f"d_head={d_head}"))
    return _readout(run, stage, names, stack, follow)


def probabilities(run: Walk) -> torch.Tensor:
    """Softmax over the vocabulary (or the classes) of the traced logits: (T, vocab) or (n_class,)."""
    return torch.softmax(run.logits, dim=-1)


def losses(run: Walk) -> torch.Tensor:
    """-log p(target) at each scored position: the training loss's terms (cross-entropy), (n,)."""
    logp = torch.log_softmax(run.logits, dim=-1)
    if run.kind == "classifier":
        return -logp[run.target[0]][None]
    return -logp[torch.arange(len(run.target)), torch.tensor(run.target)]


def _readout(run: Walk, stage: str, names, stack: str, follow: int) -> Slice:
    if run.kind == "classifier":
        if stage in ("next",):
            return Slice(stage, np.zeros((0, 0), np.float32), [], [], names, (), applies=False)
        if stage == "pooled":
            pooled = run.trace["pooled"][0].numpy()[None]
            return Slice(stage, pooled, ["pooled"], [str(j) for j in range(pooled.shape[1])], names,
                         (f"d_model={pooled.shape[1]}",))
        values = {"logits": run.logits, "probs": probabilities(run), "loss": losses(run)}[stage].numpy()[None]
        cols = run.vocab if stage != "loss" else [run.vocab[run.target[0]]]
        return Slice(stage, values, [run.name], cols, names, (f"n_class={len(run.vocab)}",))
    if stage == "pooled":
        return Slice(stage, np.zeros((0, 0), np.float32), [], [], names, (), applies=False)
    labels = run.labels(stack if run.kind != "translator" else "decoder")
    vocab_size = run.logits.shape[-1]
    if stage in ("logits", "probs"):
        values = run.logits if stage == "logits" else probabilities(run)
        top = torch.topk(run.logits[follow], min(TOP_COLUMNS, vocab_size)).indices
        return Slice(stage, values[:, top].numpy(), labels, [run.vocab[int(i)] for i in top], names,
                     (f"T={len(labels)}", f"vocab={vocab_size}"))
    if stage == "next":  # one column: the probability of the token the argmax picks, named in the row label
        probs = probabilities(run)
        picked = [f"{token} → {run.vocab[int(i)]}" for token, i in zip(labels, probs.argmax(-1))]
        return Slice(stage, probs.max(-1).values.numpy()[:, None], picked, ["p"], names, (f"T={len(labels)}",))
    values = losses(run).numpy()
    return Slice(stage, values[:, None], labels[: len(values)], ["-log p"], names, (f"T={len(values)}",))


def chosen(run: Walk) -> list[str]:
    """The token the argmax picks at each position (greedy, temperature 0): the next token, per step."""
    return [run.vocab[int(i)] for i in run.logits.argmax(-1)] if run.kind != "classifier" else [
        run.vocab[int(run.logits.argmax())]]


def mean_loss(run: Walk) -> float:
    value = float(losses(run).mean())
    return value if math.isfinite(value) else float("nan")
