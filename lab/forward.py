"""The forward pass, stage by stage: one traced run of a shipped model on a text, sliced for each stage.

Lesson: a transformer is a short list of matrix steps (ids -> embedding + position -> per layer: layer
norm, Q K V, scores QKᵀ/√d, mask, softmax, weighted sum of values, heads concatenated, W_o, residual,
feed-forward, residual -> final norm -> logits -> softmax -> the next token, or the pooled vector and the
classes). `walk` runs the model ONCE with every trace point kept (`names=all`); every stage
is a slice of that trace by module path, so what is drawn is what the model computed, never a second
implementation of it. The readouts after the logits (softmax, argmax, the loss against a target)
are the head's own arithmetic on the traced logits.

A modern decoder (SmolLM2, Gemma 3) has a few stages more, numbered after the stage they follow so that the
19 numbers of the 2017 walk keep naming the same stages: 4a turns q and k by their positions (rotary
positions), 11a is the gated feed-forward's gate and up projections, and Gemma's norms after each sublayer
are 10a and 12a. Its norms are RMSNorm, its query heads read fewer key/value heads, and some of Gemma's
layers see only a sliding window: each stage says so with the model's real sizes.

Models: a language model reads the text and predicts each next token; a classifier reads it and pools;
a translator reads it as the source and its own greedy translation as the decoder's input (teacher
forcing on what it wrote), so its decoder rows are the decoder loop's steps, one token at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from i18n import Message
from transformer_core import device_of
from transformer_core.decoding.seq2seq import Codec
from transformer_core.model.layers import rotary_angles

from . import models, reading, store
from .translate import token_label
from .cache import RunCache
from .policy import MAX_DRAWN_TOKENS, InputError, clamp, notice, quoted, source_text

# The 19 stages, in order; a layer's stages (3-13) repeat for each block. Their numbers never change.
STAGES = ("ids", "embed", "norm", "qkv", "scores", "mask", "attn", "weighted", "concat", "attn_out", "resid_mid",
          "ff", "block_out", "final_norm", "logits", "probs", "next", "pooled", "loss")
# A modern decoder's stages beyond those, each numbered after the stage it follows.
EXTRA = {"rope": "qkv", "attn_post_norm": "attn_out", "gate_up": "resid_mid", "ff_post_norm": "ff"}
# The order they run: a classifier pools the tokens' vectors (18) before its head scores the classes (15).
ORDER = ("ids", "embed", "norm", "qkv", "rope", "scores", "mask", "attn", "weighted", "concat", "attn_out",
         "attn_post_norm", "resid_mid", "gate_up", "ff", "ff_post_norm", "block_out", "final_norm", "pooled",
         "logits", "probs", "next", "loss")
NUMBERS = {**{stage: str(i) for i, stage in enumerate(STAGES, start=1)},
           **{stage: f"{STAGES.index(after) + 1}a" for stage, after in EXTRA.items()}}
LAYER_STAGES = frozenset(ORDER[2:17])
HEAD_STAGES = frozenset({"qkv", "rope", "scores", "mask", "attn", "weighted"})
TOP_COLUMNS = 20  # the vocabulary's columns drawn at the logits and softmax stages: the followed token's likeliest
CANDIDATES = 10  # the likeliest next tokens drawn at the "next" stage
WHOLE_TEXT = Message("forward.whole_text")  # the row label of a classifier's pooled vector and readouts
EVERYTHING = all  # the trace contract's "keep every point"


@dataclass(frozen=True)
class Readout:
    """What the output layer said, kept small (Gemma's vocabulary is 262,144 ids): every row's likeliest ids,
    the logits every row gives all of them, and each row's softmax denominator over the whole vocabulary.

    columns (U,): the union of the rows' TOP_COLUMNS likeliest ids; logits (rows, U) at those ids;
    top (rows, TOP_COLUMNS): each row's likeliest ids, likeliest first; lse (rows,): log Σ exp(logits) over the
    vocabulary; target (n,): each scored row's logit of its target; vocab_size: the output layer's width."""

    columns: np.ndarray
    logits: np.ndarray
    top: np.ndarray
    lse: np.ndarray
    target: np.ndarray
    vocab_size: int

    @classmethod
    def of(cls, logits: torch.Tensor, target: list[int]) -> Readout:
        """logits (rows, vocab) as the model computed them; target: the id each of the first rows is scored on."""
        logits = logits.float()
        top = logits.topk(min(TOP_COLUMNS, logits.shape[-1]), dim=-1).indices  # (rows, K)
        columns = torch.unique(torch.cat([top.flatten(), torch.tensor(target, dtype=torch.long)]))
        picked = logits[torch.arange(len(target)), torch.tensor(target, dtype=torch.long)]
        return cls(columns.numpy(), logits[:, columns].numpy(), top.numpy(), torch.logsumexp(logits, -1).numpy(),
                   picked.numpy(), logits.shape[-1])

    def at(self, ids) -> np.ndarray:
        """The logits of vocabulary ids `ids` in every row: (rows, len(ids))."""
        return self.logits[:, np.searchsorted(self.columns, np.asarray(ids))]

    def probs(self, ids) -> np.ndarray:
        """Softmax over the whole vocabulary, read at `ids`: (rows, len(ids))."""
        return np.exp(self.at(ids) - self.lse[:, None])

    def losses(self) -> np.ndarray:
        """-log p(target) of each scored row: the training loss's terms (cross-entropy), (n,)."""
        return self.lse[: len(self.target)] - self.target


def stages_of(kind: str, config: dict) -> tuple[str, ...]:
    """The stages a model of role `kind` with `config` has, in the order they run (ORDER): a decoder-only model
    pools nothing, a classifier picks no next token; a modern decoder adds its rotation, gate and sublayer norms."""
    has = {"rope": config.get("positions") == "rotary", "gate_up": bool(config.get("gated")),
           "attn_post_norm": bool(config.get("sandwich_norm")), "ff_post_norm": bool(config.get("sandwich_norm")),
           "pooled": kind == "classifier", "next": kind != "classifier"}
    return tuple(stage for stage in ORDER if has.get(stage, True))


def model_stages(model: str) -> tuple[str, ...] | None:
    """The stages of `model` (a picker label or checkpoint name) from its config, no forward pass; None when it
    cannot be read (said when it is run)."""
    try:
        name = models.resolve(model)
        return stages_of(models.checkpoint(name).kind.role, store.config(name))
    except (InputError, AttributeError, KeyError):
        return None


@dataclass(frozen=True)
class Walk:
    """Everything one traced run of checkpoint `name` on a text computed, labelled.

    stacks: "encoder"/"decoder" -> (block paths, embedding name, final norm name or None, the tokens' labels, ids).
    target: the ids each position is scored against at the loss stage (next tokens / written tokens / a class).
    vocab: a label for every output id the readouts show; a classifier's classes are messages, named in the
    reader's language when drawn. output: a translator's translation ("" for the others).
    """

    name: str
    kind: str  # its role (lab/store.KINDS): lm | classifier | translator
    config: dict
    trace: object
    stacks: dict
    readout: Readout
    vocab: dict[int, object]
    target: list[int]
    notice: str
    output: str = ""

    @property
    def n_layer(self) -> int:
        return self.config["n_layer"]

    @property
    def n_head(self) -> int:
        return self.config["n_head"]

    @property
    def n_kv_head(self) -> int:
        return self.config.get("n_kv_head") or self.n_head

    @property
    def d_head(self) -> int:
        return self.config.get("d_head") or self.config["d_model"] // self.n_head

    def kv_head(self, head: int) -> int:
        """The key/value head query head `head` reads (grouped-query attention; itself when every head has one)."""
        return head // (self.n_head // self.n_kv_head)

    def is_local(self, layer: int) -> bool:
        """Whether layer `layer` sees only a sliding window of keys (Gemma 3: five layers of six)."""
        window, every = self.config.get("sliding_window"), self.config.get("global_every")
        return window is not None and (layer + 1) % every != 0

    def rope_base(self, layer: int) -> float:
        local = self.config.get("rope_local_base")
        return (local or self.config["rope_base"]) if self.is_local(layer) else self.config["rope_base"]

    @property
    def stages(self) -> tuple[str, ...]:
        return stages_of(self.kind, self.config)

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
    head, the followed position among the text's tokens (the follow slider's value), and the row drawn for it
    (a classifier's readouts have one row, for the whole text), each clamped once, here. `angles`: at the rotation
    stage, the angle (radians) by which the followed position turns each pair of dimensions."""

    stage: str
    values: np.ndarray
    rows: list[str]
    cols: list[str]
    points: tuple[str, ...]
    shape: tuple[str, ...]
    applies: bool = True  # False: the stage is not part of this kind of model (a note says so)
    layer: int = 0
    head: int = 0
    position: int = 0  # the followed token, 0..T-1: what the follow slider shows
    follow: int = 0  # the row drawn for it (0 where the stage has one row)
    angles: np.ndarray | None = None
    whole_text: bool = False  # one row for the whole text: a classifier's pooled vector and its readouts
    notice: str = ""  # what was clamped (a link's layer 40 of a 30-layer model), in the reader's words


def models_offered() -> dict[str, str]:
    """Picker label -> checkpoint name: every shipped model and the real LLMs made on this machine (no cheat
    checkpoints, no download)."""
    return store.checkpoints()


# a real LLM's walk at 128 tokens keeps ~150 MB of trace: two of them, beside the small models' walks
_walks: RunCache[Walk] = RunCache(size=16, max_bytes=384 * 2**20)


def walk(model: str, text: str | None) -> Walk:
    """The whole forward pass of `model` (a picker label or checkpoint name) on `text`, computed once (cached)
    and sliced by `stage`: the text read through the one reading path (lab/reading.py)."""
    name, text, cut = _read(model, text)
    run = _walks.get(models.key(name, text), lambda: _compute(name, text))
    return run if not cut else Walk(**{**run.__dict__, "notice": notice(cut, run.notice)})


def _read(model: str, text: str | None) -> tuple[str, str, str]:
    """(the checkpoint's name, the text it reads, the notice of a cut): the walk's one way in."""
    name = models.resolve(model)
    if name == store.GPT2:
        raise InputError(Message("forward.no_gpt2"))
    text, cut = reading.prepare(name, text, Message("attention.type_text"))
    return name, text, cut


def _not_logits(name: str) -> bool:
    return name != "logits"  # the readout keeps what is drawn of them: a real LLM's are T x 262,144 floats


@torch.no_grad()
def _compute(name: str, text: str) -> Walk:
    net, tokenizer = models.load(name)
    config = store.config(name)
    kind = models.checkpoint(name).kind.role
    if kind == "translator":
        return _translator_walk(name, net, tokenizer, config, text)
    read = reading.read(name, tokenizer, text, min(MAX_DRAWN_TOKENS, config["max_len"]), offered=models_offered())
    idx = torch.tensor([read.ids], device=device_of(net))
    if kind == "lm":
        logits, trace = net.run_with_trace(idx, names=_not_logits)
        logits = logits.float().cpu()
        target = read.ids[1:]  # each position is scored against the token that follows it
        readout = Readout.of(logits[0], target)
        vocab = {int(i): tokenizer.decode([int(i)]) for i in readout.columns}
    else:
        logits, trace = net.run_with_trace(idx, torch.tensor([len(read.ids)], device=idx.device), names=_not_logits)
        logits = logits.float().cpu()
        target = [int(logits[0].argmax())]  # the loss of the verdict it gives (the lesson: loss of a label)
        readout = Readout.of(logits, target)
        vocab = {i: Message(f"forward.class.{i}") if config["n_class"] == 2 else str(i)
                 for i in range(config["n_class"])}
    stack = "decoder" if kind == "lm" else "encoder"
    stacks = {stack: dict(blocks=[f"layers.{i}" for i in range(config["n_layer"])], embed="embed",
                          norm="norm.out" if config["norm_first"] else None, labels=read.labels, ids=read.ids)}
    return Walk(name, kind, config, trace, stacks, readout, vocab, target, read.notice)


def _translator_walk(name: str, net, tokenizer, config: dict, text: str) -> Walk:
    from transformer_core.decoding.seq2seq import translate

    codec = Codec(tokenizer)
    text, cut = source_text(codec, config["max_len"], text)
    written = list(translate(net, codec, text, 1).ids)  # the greedy translation Translate shows
    src, src_lengths = codec.sources([text])
    device = device_of(net)
    tgt = torch.tensor([[codec.bos, *written]], device=device)
    logits, trace = net.run_with_trace(src.to(device), tgt, src_lengths.to(device), names=_not_logits)
    logits = logits.float().cpu()
    label = token_label(codec)
    n = config["n_layer"]
    stacks = {"encoder": dict(blocks=[f"encoder.{i}" for i in range(n)], embed="src_embed",
                              norm="encoder_norm.out" if config["norm_first"] else None,
                              labels=[label(int(i)) for i in src[0]], ids=src[0].tolist()),
              "decoder": dict(blocks=[f"decoder.{i}" for i in range(n)], embed="tgt_embed",
                              norm="decoder_norm.out" if config["norm_first"] else None,
                              labels=[label(int(i)) for i in tgt[0]], ids=tgt[0].tolist())}
    target = [*written, codec.eos]
    readout = Readout.of(logits[0], target)
    vocab = {int(i): label(int(i)) for i in readout.columns}
    return Walk(name, "translator", config, trace, stacks, readout, vocab, target, cut, codec.text(written))


# --- the steps of a walk ----------------------------------------------------------------------------

def stage_of(stage) -> str:
    """A stage name, or its number as the stage list shows it (1-19, or 4a, 10a, 11a, 12a for a modern
    decoder's); anything else is an InputError."""
    text = str(stage if stage is not None else "").strip()
    by_number = {number: name for name, number in NUMBERS.items()}
    if text.lower() in by_number:
        return by_number[text.lower()]
    if text not in ORDER:
        raise InputError(Message("forward.bad_stage", stage=quoted(text), n=len(STAGES)))
    return text


Step = tuple[str, str, bool]  # (stage, stack, cross): where the Next button goes


def steps(run: Walk) -> list[Step]:
    """Every step of the walk in the order the model computes it. A translator's: the encoder's stages, then
    the decoder's with its masked self-attention, then its cross-attention (Q from the decoder, K and V from
    the encoder), then its feed-forward and the readouts; the others': their one stack's stages."""
    if run.kind != "translator":
        stack = run.stack(None)
        return [(stage, stack, False) for stage in run.stages]
    encoder = [(s, "encoder", False) for s in run.stages[: run.stages.index("final_norm") + 1]]
    layer = run.stages[run.stages.index("norm"): run.stages.index("resid_mid") + 1]
    decoder = [(s, "decoder", False) for s in run.stages[: run.stages.index("norm")]]
    decoder += [(s, "decoder", False) for s in layer] + [(s, "decoder", True) for s in layer]
    decoder += [(s, "decoder", False) for s in run.stages[run.stages.index("resid_mid") + 1:]]
    return encoder + decoder


def step(run: Walk, stage, stack: str | None, cross: bool, by: int) -> Step:
    """The step `by` places after (stage, stack, cross) in `steps(run)`, the first and last staying put; a stage
    the model has not (a link's "pooled" for a language model) steps from the place it would have."""
    walked = steps(run)
    stage = stage_of(stage)
    here = (stage, run.stack(stack), bool(cross) and run.kind == "translator" and run.stack(stack) == "decoder")
    if here in walked:
        at = walked.index(here)
    else:  # between the steps before it and after it: Previous goes to the one before, Next to the one after
        at = max((i for i, (s, _, _) in enumerate(walked) if ORDER.index(s) <= ORDER.index(stage)), default=0)
        by = by + 1 if by < 0 else by
    return walked[min(max(at + by, 0), len(walked) - 1)]


# --- slicing ----------------------------------------------------------------------------------------

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
        "qkv": (f"{attn}.q", f"{attn}.k", f"{attn}.v"), "rope": (f"{attn}.q", f"{attn}.q_rot", f"{attn}.k",
                                                                  f"{attn}.k_rot"),
        "scores": (f"{attn}.scores",), "mask": (f"{attn}.mask",),
        "attn": (f"{attn}.attn",), "weighted": (f"{attn}.weighted",), "concat": (f"{attn}.concat",),
        "attn_out": (f"{attn}.out",), "attn_post_norm": (f"{block}.norm_self_out.out",), "resid_mid": (resid,),
        "gate_up": (f"{block}.ff.gate", f"{block}.ff.up", f"{block}.ff.hidden"), "ff": (f"{block}.ff.out",),
        "ff_post_norm": (f"{block}.norm_ff_out.out",),
        "block_out": (f"{block}.out",), "final_norm": (s["norm"],) if s["norm"] else (f"{s['blocks'][-1]}.out",),
        "logits": ("logits",), "probs": ("logits",), "next": ("logits",), "pooled": ("pooled",), "loss": ("logits",),
    }[stage]


def stage_slice(run: Walk, stage, layer=0, head=0, stack: str | None = None, cross: bool = False,
                follow: int = 0) -> Slice:
    """Stage `stage` of the run as one matrix (layer, head and stack picked), and where it was cut: the layer, the
    head and the followed position clamped to the model and the text, here and only here."""
    stage = stage_of(stage)
    stack = run.stack(stack)
    said: list[str] = []
    layer = clamp(layer, 0, run.n_layer - 1, Message("setting.layer"), said if stage in LAYER_STAGES else None)
    head = clamp(head, 0, run.n_head - 1, Message("setting.head"), said if stage in HEAD_STAGES else None)
    follow = clamp(follow, 0, len(run.labels(stack)) - 1, Message("setting.position"), said)
    if stage not in run.stages:
        return Slice(stage, np.zeros((0, 0), np.float32), [], [], (), (), applies=False, layer=layer, head=head,
                     position=follow, notice=notice(*said))
    piece = _cut(run, stage, layer, head, stack, bool(cross) and stack == "decoder" and run.kind == "translator",
                 follow)
    # the followed position's row: a classifier's readouts have one row, for the whole text
    return replace(piece, layer=layer, head=head, position=follow, follow=min(follow, max(len(piece.rows) - 1, 0)),
                   notice=notice(*said))


def _cut(run: Walk, stage: str, layer: int, head: int, stack: str, cross: bool, follow: int) -> Slice:
    labels = run.labels(stack)
    T, d_model, d_head = len(labels), run.config["d_model"], run.d_head
    keys = run.labels("encoder") if cross else labels
    names = point_names(run, stage, layer, stack, cross)
    tr = run.trace
    dims = [str(j) for j in range(d_model)]
    kv = run.kv_head(head)
    if stage == "ids":
        ids = run.stacks[stack]["ids"]
        return Slice(stage, np.array(ids, dtype=np.float32)[:, None], labels, ["id"], names, (f"T={T}",))
    if stage in ("embed", "norm", "concat", "attn_out", "attn_post_norm", "resid_mid", "ff", "ff_post_norm",
                 "block_out", "final_norm"):
        return Slice(stage, tr[names[0]][0].numpy(), labels, dims, names, (f"T={T}", f"d_model={d_model}"))
    if stage == "gate_up":  # act(x W_1), x W_3 and their product, side by side: (T, 3 d_ff)
        d_ff = run.config["d_ff"]
        cols = [f"{part}{j}" for part in ("gate", "up", "h") for j in range(d_ff)]
        return Slice(stage, np.concatenate([tr[n][0].numpy() for n in names], axis=1), labels, cols, names,
                     (f"T={T}", f"d_ff={d_ff}"))
    if stage == "qkv":
        # query head `head`, and the key/value head it reads (grouped-query attention: one of n_kv_head)
        q, k, v = tr[names[0]][0, head].numpy(), tr[names[1]][0, kv].numpy(), tr[names[2]][0, kv].numpy()
        cols = [f"{part}{j}" for part in ("q", "k", "v") for j in range(d_head)]
        if cross:  # the three arrows: Q from the decoder's rows, K and V from the encoder's (another length)
            S = len(keys)
            rows = [f"{part} · {token}" for part, side in (("Q", labels), ("K", keys), ("V", keys))
                    for token in side]
            return Slice(stage, np.concatenate([q, k, v], axis=0), rows, [str(j) for j in range(d_head)], names,
                         (f"T={T} + S={S} + S={S}", f"d_head={d_head}"))
        return Slice(stage, np.concatenate([q, k, v], axis=1), labels, cols, names, (f"T={T}", f"d_head={d_head}"))
    if stage == "rope":  # q and k of this head before and after the rotation, and the followed position's angles
        q, q_rot = (tr[n][0, head].numpy() for n in names[:2])
        k, k_rot = (tr[n][0, kv].numpy() for n in names[2:])
        cols = [f"{part}{j}" for part in ("q", "q′", "k", "k′") for j in range(d_head)]
        return Slice(stage, np.concatenate([q, q_rot, k, k_rot], axis=1), labels, cols, names,
                     (f"T={T}", f"d_head={d_head}"), angles=angles(follow, d_head, run.rope_base(layer)))
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


def angles(position: int, d_head: int, base: float) -> np.ndarray:
    """The angle, in radians, by which position `position` turns each of a head's d_head / 2 pairs of dimensions
    (dimension i with i + d_head / 2): position * base^(-2i / d_head), from the model's own rotary_angles."""
    cos, sin = rotary_angles(position, 1, d_head, base)
    return torch.atan2(sin, cos)[0].numpy() % (2 * np.pi)


def _readout(run: Walk, stage: str, names, stack: str, follow: int) -> Slice:
    out = run.readout
    if run.kind == "classifier":
        if stage == "pooled":
            pooled = run.trace["pooled"][0].numpy()[None]
            return Slice(stage, pooled, [WHOLE_TEXT], [str(j) for j in range(pooled.shape[1])], names,
                         (f"d_model={pooled.shape[1]}",), whole_text=True)
        classes = list(range(out.vocab_size))
        values = {"logits": out.at(classes), "probs": out.probs(classes), "loss": out.losses()[None]}[stage]
        cols = [run.vocab[i] for i in classes] if stage != "loss" else [run.vocab[run.target[0]]]
        return Slice(stage, values, [WHOLE_TEXT], cols, names, (f"n_class={out.vocab_size}",), whole_text=True)
    labels = run.labels("decoder" if run.kind == "translator" else stack)
    if stage in ("logits", "probs"):
        top = out.top[follow]
        values = out.at(top) if stage == "logits" else out.probs(top)
        return Slice(stage, values, labels, [run.vocab[int(i)] for i in top], names,
                     (f"T={len(labels)}", f"vocab={out.vocab_size}"))
    if stage == "next":  # the followed row's likeliest candidates, the argmax first: the token the walk picks
        top = out.top[follow][:CANDIDATES]
        return Slice(stage, out.probs(top), labels, [run.vocab[int(i)] for i in top], names,
                     (f"T={len(labels)}", f"vocab={out.vocab_size}"))
    values = out.losses()
    return Slice(stage, values[:, None], labels[: len(values)], ["-log p"], names, (f"T={len(values)}",))


def chosen(run: Walk) -> list[str]:
    """The token the argmax picks at each position (greedy, temperature 0): the next token, per step."""
    return [run.vocab[int(row[0])] for row in run.readout.top]


def picks(run: Walk) -> list[tuple[str, str, float]]:
    """(the token read, the token the argmax picks after it, its probability), position by position."""
    out = run.readout
    first = np.searchsorted(out.columns, out.top[:, 0])
    p = np.exp(out.logits[np.arange(len(first)), first] - out.lse)
    labels = run.labels("decoder" if run.kind == "translator" else None)
    return [(token, run.vocab[int(row[0])], float(q)) for token, row, q in zip(labels, out.top, p)]
