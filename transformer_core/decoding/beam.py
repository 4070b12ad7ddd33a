"""Beam search: keep the `width` most likely partial sequences instead of one.

Lesson: greedy decoding commits to the best next token; beam search keeps
several hypotheses alive and scores each by its cumulative log-probability
log p(y_1..y_t) = Σ log p(y_i | y_<i). At every step each beam proposes
extensions, all extensions compete, and only the best `width` survive; the rest
are pruned. Finished hypotheses (ending in `eos_id`) are ranked by
log p / length^length_penalty, so a penalty > 0 stops short outputs from
winning only because they multiplied fewer probabilities.

The search is model-agnostic. It only needs a step function

    step_fn(tokens (width, T_new), cache) -> log-probs (width, vocab)

that feeds each beam's new tokens (the prompt on the first call, then one token
per beam) through the model with its KV cache and returns the next-token
log-probabilities. Between steps the search calls `cache.reorder(parents)` so
every cache row follows its beam. `decoder_lm_step` and `encoder_decoder_step`
build step functions for our two generative models.

The result keeps the beam tree: at each step, every beam's candidate
extensions with their cumulative log-probabilities, marked kept, pruned or finished.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from ..model.kv_cache import KVCache
from ..device import device_of

StepFn = Callable[[torch.Tensor, KVCache], torch.Tensor]
MAX_WIDTH = 8


@dataclass(frozen=True)
class Candidate:
    """One proposed extension: beam `parent` (its index at the previous step) + `token`.

    logprob: log p(token | that beam); cumulative: the beam's total after adding it;
    status: "kept" (it is beam `slot` from now on), "finished" (it ended in eos) or "pruned".
    """

    parent: int
    token: int
    logprob: float
    cumulative: float
    status: str
    slot: int | None = None


@dataclass(frozen=True)
class Hypothesis:
    tokens: list[int]  # generated tokens, prompt excluded
    logprob: float  # cumulative log-probability
    score: float  # logprob / len(tokens) ** length_penalty: what finished hypotheses are ranked by


@dataclass
class BeamResult:
    """Hypotheses best first, and per step the candidates that competed (the beam tree)."""

    hypotheses: list[Hypothesis]
    steps: list[list[Candidate]] = field(default_factory=list)

    @property
    def best(self) -> Hypothesis:
        return self.hypotheses[0]


def _score(logprob: float, length: int, length_penalty: float) -> float:
    return logprob / max(length, 1) ** length_penalty


@torch.no_grad()
def beam_search(
    step_fn: StepFn,
    cache: KVCache,
    prompt: list[int],
    width: int,
    max_new_tokens: int,
    length_penalty: float = 1.0,
    eos_id: int | tuple[int, ...] | None = None,
) -> BeamResult:
    """Beam search from `prompt` with `width` beams (1 = greedy) for up to max_new_tokens steps; a hypothesis
    ends with `eos_id` (or any id of a tuple: a chat model's end of turn and end of text).

    The batch always has `width` rows: at the start every row holds the prompt but
    only row 0 is alive (the others score -inf), so the first step expands one beam.
    """
    if not 1 <= width <= MAX_WIDTH:
        raise ValueError(f"beam width must be between 1 and {MAX_WIDTH}, got {width}")
    if not prompt:
        raise ValueError("beam search needs a prompt of at least one token")
    ends = {eos_id} if isinstance(eos_id, int) else set(eos_id or ())
    scores = [0.0] + [float("-inf")] * (width - 1)
    beams: list[list[int]] = [[] for _ in range(width)]
    feed = torch.tensor([prompt] * width)
    finished: list[Hypothesis] = []
    steps: list[list[Candidate]] = []
    for _ in range(max_new_tokens):
        logprobs = step_fn(feed, cache).float()  # (width, V)
        device, logprobs = logprobs.device, logprobs.cpu()
        total = torch.tensor(scores)[:, None] + logprobs  # cumulative log-prob of every extension
        # each live beam's `width` best extensions (nothing it ranks lower could be kept),
        # plus one more, so the tree always shows at least one pruned alternative per beam
        top_total, top_token = total.topk(min(width + 1, total.shape[1]), dim=-1)
        ranked = sorted(
            (
                (float(top_total[b, j]), b, int(top_token[b, j]))
                for b in range(width)
                if scores[b] > float("-inf")
                for j in range(top_total.shape[1])
            ),
            key=lambda c: -c[0],
        )
        candidates, parents, next_beams, next_scores = [], [], [], []
        for cumulative, b, token in ranked:
            if len(next_beams) == width:
                status, slot = "pruned", None
            elif token in ends:  # an ended hypothesis leaves the beam
                status, slot = "finished", None
                length = len(beams[b]) + 1
                finished.append(Hypothesis(beams[b] + [token], cumulative, _score(cumulative, length, length_penalty)))
            else:
                status, slot = "kept", len(next_beams)
                parents.append(b)
                next_beams.append(beams[b] + [token])
                next_scores.append(cumulative)
            candidates.append(Candidate(b, token, float(logprobs[b, token]), cumulative, status, slot))
        steps.append(candidates)
        beams, scores = next_beams, next_scores
        if not beams or _done(finished, scores, len(beams[0]), max_new_tokens, width, length_penalty):
            break
        while len(beams) < width:  # fewer live beams than rows: fill with dead copies
            parents.append(parents[0])
            beams.append(beams[0])
            scores.append(float("-inf"))
        cache.reorder(torch.tensor(parents, device=device))
        feed = torch.tensor([[beam[-1]] for beam in beams])
    live = [Hypothesis(beam, s, _score(s, len(beam), length_penalty))
            for beam, s in zip(beams, scores) if s > float("-inf")]
    hypotheses = sorted(finished + live, key=lambda h: -h.score)[:width]
    return BeamResult(hypotheses, steps)


def _done(finished: list[Hypothesis], scores: list[float], length: int, max_length: int, width: int,
          length_penalty: float) -> bool:
    """Stop once `width` hypotheses have finished and no live beam can still beat the worst of them.

    Exact, not a guess: every further token adds a log-probability <= 0, so a live beam's
    final log-probability is at most today's, and its score is at most today's
    log-probability over length**length_penalty at the best length it can still reach.
    That score is monotonic in the length, so the best is at one end: the current length
    or `max_length` (with a positive penalty, a longer hypothesis divides its negative
    log-probability by more).
    """
    if len(finished) < width:
        return False
    worst_kept = sorted(h.score for h in finished)[-width]
    best = max(_score(s, n, length_penalty) for s in scores for n in (length, max_length))
    return best <= worst_kept


def decoder_lm_step(model) -> StepFn:
    """Step function for a DecoderLM: feed the new tokens, return the last position's log-probs."""
    device = device_of(model)

    def step(tokens: torch.Tensor, cache: KVCache) -> torch.Tensor:
        logits = model(tokens.to(device), cache=cache)[:, -1]
        return torch.log_softmax(logits.float(), dim=-1)

    return step


def encoder_decoder_step(model, src: torch.Tensor, src_lengths: torch.Tensor | None, width: int) -> StepFn:
    """Step function for an EncoderDecoder translating one source `src` (1, S): the memory is
    computed once and shared by all `width` beams (their cross-attention caches are equal rows)."""
    device = device_of(model)
    lengths = None if src_lengths is None else src_lengths.expand(width)
    memory = model.encode(src.to(device), src_lengths).expand(width, -1, -1)

    def step(tokens: torch.Tensor, cache: KVCache) -> torch.Tensor:
        logits = model.decode(tokens.to(device), memory, lengths, cache=cache)[:, -1]
        return torch.log_softmax(logits.float(), dim=-1)

    return step


def beam_search_lm(model, prompt: list[int], width: int, max_new_tokens: int, length_penalty: float = 1.0,
                   eos_id: int | tuple[int, ...] | None = None) -> BeamResult:
    """Beam search with a DecoderLM. The prompt plus the new tokens must fit in the context (max_len)."""
    if len(prompt) + max_new_tokens > model.config.max_len:
        raise ValueError(
            f"beam search keeps every beam in the KV cache: prompt ({len(prompt)}) + new tokens "
            f"({max_new_tokens}) must fit in the context of {model.config.max_len} tokens"
        )
    return beam_search(decoder_lm_step(model), model.new_cache(), prompt, width, max_new_tokens, length_penalty, eos_id)
