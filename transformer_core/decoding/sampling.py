"""Sampling: how a distribution over the next token becomes one token.

Lesson: the model gives logits; decoding decides what to do with them. The
textbook pipeline reshapes and cuts the distribution in a fixed order, then draws:

  1. repetition penalty: tokens already in the text get their logit pushed down
     (divided by the penalty when positive, multiplied when negative, as in CTRL);
  2. temperature T: softmax(logits / T); T < 1 sharpens, T > 1 flattens, T = 0 is argmax;
  3. top-k: keep only the k most likely tokens;
  4. top-p (nucleus): keep the smallest set of most likely tokens whose probability reaches p;
  5. min-p: keep tokens at least min_p times as likely as the most likely one;
  6. renormalise and draw with a seeded generator, so a run can be repeated exactly.

`Sampler` does all of that as a `choose` callable for `generation.stream`, and
each step returns a `StepRecord`: the top candidates' probabilities after every
stage, which of them each cut removed, and the token that was chosen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

# The stages a distribution passes through, in order; a record keeps each one.
STAGES = ("raw", "penalty", "temperature", "top-k", "top-p", "min-p")
# float32 probabilities carry rounding errors of ~1e-7; top-p counts a total this close to p as reaching it
TOP_P_TOLERANCE = 1e-6


class SamplingError(ValueError):
    """Sampling settings outside their meaningful range (e.g. top_p = 0)."""


@dataclass(frozen=True)
class SamplingConfig:
    """Decoding knobs; each default leaves the distribution unchanged (temperature 1, no cuts)."""

    temperature: float = 1.0  # 0 means greedy (argmax)
    top_k: int = 0  # 0 means off
    top_p: float = 1.0  # 1 means off
    min_p: float = 0.0  # 0 means off
    repetition_penalty: float = 1.0  # 1 means off
    seed: int = 0

    def __post_init__(self):
        if not self.temperature >= 0:
            raise SamplingError(f"temperature must be >= 0 (0 = greedy), got {self.temperature}")
        if self.top_k < 0:
            raise SamplingError(f"top_k must be >= 0 (0 = off), got {self.top_k}")
        if not 0 < self.top_p <= 1:
            raise SamplingError(f"top_p must be in (0, 1] (1 = off), got {self.top_p}")
        if not 0 <= self.min_p <= 1:
            raise SamplingError(f"min_p must be in [0, 1] (0 = off), got {self.min_p}")
        # an infinite penalty is no limit of a finite one: it sends a seen logit of 0 to 0 x inf = NaN
        if not 0 < self.repetition_penalty < math.inf:
            raise SamplingError(f"repetition_penalty must be finite and > 0 (1 = off), got {self.repetition_penalty}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


# ---------------------------------------------------------------- the processors


def apply_repetition_penalty(logits: torch.Tensor, ids: list[int], penalty: float) -> torch.Tensor:
    """logits (V,) with every token of `ids` made less likely: divided by `penalty` if positive, else multiplied."""
    if penalty == 1 or not ids:
        return logits
    seen = sorted(set(ids))  # a list indexes a tensor on any device
    out = logits.clone()
    out[seen] = torch.where(logits[seen] > 0, logits[seen] / penalty, logits[seen] * penalty)
    return out


def apply_temperature(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Probabilities (V,) of softmax(logits / T); T = 0 puts all mass on the argmax (lowest id on ties)."""
    if temperature == 0:
        probs = torch.zeros_like(logits)
        probs[torch.argmax(logits)] = 1.0
        return probs
    # In float64 and shifted so the top logit is 0: a tiny T (which would underflow to 0 in
    # float32) then sends the others towards -inf, the argmax limit, instead of giving NaN.
    shifted = logits.double() - logits.max().double()
    return torch.softmax(shifted / temperature, dim=-1).to(logits.dtype)


def _descending(probs: torch.Tensor) -> torch.Tensor:
    """Token ids from most to least likely; equal probabilities keep id order (lower id first)."""
    return torch.sort(probs, descending=True, stable=True).indices


def _renormalised(probs: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """probs where `keep` (bool, (V,)) holds, 0 elsewhere, rescaled to sum to 1."""
    kept = torch.where(keep, probs, 0.0)
    return kept / kept.sum()


def top_k_filter(probs: torch.Tensor, k: int) -> torch.Tensor:
    """probs (V,) restricted to the k most likely tokens and renormalised; k = 0 keeps all.
    Ties at the boundary are broken towards the lower id, so exactly k tokens remain."""
    if k == 0 or k >= probs.numel():
        return probs
    keep = torch.zeros_like(probs, dtype=torch.bool)
    keep[_descending(probs)[:k]] = True
    return _renormalised(probs, keep)


def top_p_filter(probs: torch.Tensor, p: float) -> torch.Tensor:
    """probs (V,) restricted to the nucleus: the shortest run of most likely tokens whose
    total probability reaches p, renormalised; the most likely token always stays. p = 1 keeps all.

    "Reaches" allows for rounding: a run whose total is within TOP_P_TOLERANCE of p has
    reached it, so [0.7, 0.2, 0.1] with p = 0.9 keeps two tokens (as transformers' top-p
    does), although 0.7 + 0.2 is 0.8999999762 in float32."""
    if p >= 1:
        return probs
    order = _descending(probs)
    sorted_probs = probs[order].double()
    mass_before = torch.cumsum(sorted_probs, 0) - sorted_probs  # probability of the tokens ranked above
    needed = mass_before < p - TOP_P_TOLERANCE  # a token is needed while the mass so far is short of p
    needed[0] = True
    keep = torch.zeros_like(probs, dtype=torch.bool)
    keep[order[needed]] = True
    return _renormalised(probs, keep)


def min_p_filter(probs: torch.Tensor, min_p: float) -> torch.Tensor:
    """probs (V,) restricted to tokens with probability >= min_p x the top probability, renormalised."""
    if min_p == 0:
        return probs
    return _renormalised(probs, probs >= min_p * probs.max())


def process(logits: torch.Tensor, ids: list[int], config: SamplingConfig) -> dict[str, torch.Tensor]:
    """Every stage's distribution over the vocabulary, in order: stage name -> probs (V,).

    The last one ("min-p") is the distribution the token is drawn from.
    """
    logits = logits.float()
    penalised = apply_repetition_penalty(logits, ids, config.repetition_penalty)
    stages = {"raw": torch.softmax(logits, -1), "penalty": torch.softmax(penalised, -1)}
    stages["temperature"] = apply_temperature(penalised, config.temperature)
    stages["top-k"] = top_k_filter(stages["temperature"], config.top_k)
    stages["top-p"] = top_p_filter(stages["top-k"], config.top_p)
    stages["min-p"] = min_p_filter(stages["top-p"], config.min_p)
    return stages


# ---------------------------------------------------------------- one step, recorded


@dataclass(frozen=True)
class StepRecord:
    """What happened at one decoding step, for the top candidates.

    candidates: token ids, most likely first by the penalised logits (temperature keeps that order);
    probs:      stage name -> each candidate's probability after that stage (0 once cut);
    kept:       stage name -> how many tokens of the whole vocabulary survive that stage;
    chosen:     the token drawn; chosen_prob: its probability in the distribution it was drawn from.
    """

    step: int
    candidates: list[int]
    probs: dict[str, list[float]]
    kept: dict[str, int]
    chosen: int
    chosen_prob: float
    chosen_raw_prob: float

    def cut_at(self, stage: str) -> list[int]:
        """Candidates removed by `stage` (they had probability before it and none after it)."""
        i = STAGES.index(stage)
        before, after = self.probs[STAGES[i - 1]], self.probs[stage]
        return [t for t, b, a in zip(self.candidates, before, after) if b > 0 and a == 0]


def record_step(step: int, stages: dict[str, torch.Tensor], chosen: int, n_candidates: int) -> StepRecord:
    """The record of one step: the n most likely candidates (plus the chosen token if it ranks lower)."""
    order = _descending(stages["penalty"])[:n_candidates].tolist()
    if chosen not in order:
        order.append(chosen)
    index = torch.tensor(order)
    final = stages[STAGES[-1]]
    return StepRecord(
        step=step,
        candidates=order,
        probs={name: probs[index].tolist() for name, probs in stages.items()},
        kept={name: int((probs > 0).sum()) for name, probs in stages.items()},
        chosen=chosen,
        chosen_prob=float(final[chosen]),
        chosen_raw_prob=float(stages["raw"][chosen]),
    )


class Sampler:
    """A `choose` callable for `generation.stream`: process, draw with a seeded generator, record.

        sampler = Sampler(SamplingConfig(temperature=0.8, top_p=0.9, seed=1))
        for token, record in stream(model, prompt, 50, choose=sampler): ...

    A fresh Sampler with the same config replays the same tokens.
    """

    def __init__(self, config: SamplingConfig = SamplingConfig(), n_candidates: int = 10):
        self.config, self.n_candidates = config, n_candidates
        self.generator = torch.Generator().manual_seed(config.seed)
        self.step = 0

    def __call__(self, logits: torch.Tensor, ids: list[int]) -> tuple[int, StepRecord]:
        stages = process(logits.detach().cpu(), ids, self.config)
        final = stages[STAGES[-1]]
        if self.config.greedy:
            chosen = int(torch.argmax(final))
        else:
            chosen = int(torch.multinomial(final, 1, generator=self.generator))
        record = record_step(self.step, stages, chosen, self.n_candidates)
        self.step += 1
        return chosen, record
