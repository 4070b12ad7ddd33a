"""One training loop for every model we ship: seeded, resumable, with a progress bar.

Lesson: training is the same loop whatever the model: sample a batch, compute a
loss, step AdamW with warm-up then cosine decay, clip the gradient, and look at
held-out data now and then so over-fitting is seen, not guessed. Under torchrun
the same loop runs on every rank, each on its share of the batch (distributed.py).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from tqdm.auto import tqdm

from .. import distributed
from ..device import autocast, device_of
from ..distributed import TermsFn

# get_batch(split, generator) -> batch; loss_fn(model, batch) -> scalar loss
BatchFn = Callable[[str, torch.Generator], object]
LossFn = Callable[[nn.Module, object], torch.Tensor]
IGNORE = -100  # cross_entropy's ignore_index: a target that is not scored


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 1000
    lr: float = 1e-3
    min_lr: float = 1e-4
    warmup: int = 100
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    eval_every: int = 200
    eval_batches: int = 20
    seed: int = 0
    time_budget_s: float | None = None  # stop early (and say so) after this many seconds


def learning_rate(step: int, cfg: TrainConfig, seconds: float = 0.0) -> float:
    """Linear warm-up, then cosine decay from lr to min_lr.

    With a time budget the decay runs on whichever ends first, the steps or the
    seconds, so a run cut short by the clock still finishes at a low learning rate.
    """
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    if cfg.time_budget_s:
        progress = max(progress, seconds / cfg.time_budget_s)
    progress = min(1.0, progress)
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1 + math.cos(math.pi * progress))


def make_optimizer(model: nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    """AdamW; weight decay only on matrices (not biases, LayerNorms or embeddings' 1-D params)."""
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.95))


@torch.no_grad()
def evaluate(model: nn.Module, get_batch: BatchFn, loss_fn: LossFn, batches: int, seed: int = 1234) -> float:
    """Mean loss over `batches` validation batches (the same batches every time)."""
    was_training = model.training
    model.eval()
    g = torch.Generator().manual_seed(seed)
    device = device_of(model)
    with autocast(device):
        total = sum(float(loss_fn(model, get_batch("validation", g))) for _ in range(batches))
    model.train(was_training)
    return total / batches


def scored_targets(batch) -> int:
    """`terms` of a loss that averages over the targets in the batch's last tensor not set to IGNORE."""
    return int((batch[-1] != IGNORE).sum())


def train(
    model: nn.Module,
    cfg: TrainConfig,
    get_batch: BatchFn,
    loss_fn: LossFn,
    resume_path: str | Path | None = None,
    on_step: Callable[[int, float], None] | None = None,
    progress: bool = True,
    terms: TermsFn | None = None,
) -> list[dict]:
    """Train in place and return the history: one row per evaluation {step, train_loss, val_loss, seconds}.

    With `resume_path`, state (weights, optimizer, step, history) is saved there at
    every evaluation and training continues from it if it exists. `on_step(step, loss)`
    returning True stops training after that step (a goal reached, e.g. 99% held-out accuracy).

    Under torchrun every rank calls this with the same arguments: each trains on its rows
    of every batch, `terms(batch)` (default: rows) saying how many terms `loss_fn` averages
    over; `on_step` runs on every rank with the loss of the whole batch; rank 0 alone
    evaluates and saves, and every rank returns rank 0's history.
    """
    device = device_of(model)
    world = distributed.setup(device)
    torch.manual_seed(cfg.seed + world.rank)  # ranks draw their own dropout; rank 0 the one process's
    optimizer = make_optimizer(model, cfg)
    start, history, elapsed = 0, [], 0.0
    resume_path = Path(resume_path) if resume_path else None
    state = None
    if world.main and resume_path is not None and resume_path.exists():
        state = torch.load(resume_path, map_location="cpu", weights_only=True)  # no pickle
    state = distributed.from_main(state)  # rank 0's file: other machines may not see it
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start, history, elapsed = state["step"], json.loads(state["history"]), state["seconds"]
    model.train()
    step_loss = distributed.data_parallel(model, loss_fn, terms)
    running, t0, agreed = None, time.perf_counter() - elapsed, elapsed

    def clock() -> float:
        # ranks must take the same decisions, so they read the clock they agreed on at the last step
        return time.perf_counter() - t0 if world.size == 1 else agreed

    bar = tqdm(range(start, cfg.steps), initial=start, total=cfg.steps, disable=not (progress and world.main),
               desc="train")
    for step in bar:
        # a generator per step: resuming at step s draws the same batches as an unbroken run, and
        # every rank draws the same global batch (it keeps its own rows of it)
        g = torch.Generator().manual_seed(cfg.seed * 1_000_003 + step)
        batch = get_batch("train", g)
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, cfg, clock())
        with autocast(device):
            loss = step_loss(batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimizer.step()
        value, agreed = step_loss.agree(loss, time.perf_counter() - t0)
        running = value if running is None else 0.95 * running + 0.05 * value
        done = on_step is not None and on_step(step, value) is True  # the caller's goal is reached
        last = step + 1 == cfg.steps
        over_time = cfg.time_budget_s is not None and clock() > cfg.time_budget_s
        if world.main and ((step + 1) % cfg.eval_every == 0 or last or over_time or done):
            val = evaluate(model, get_batch, loss_fn, cfg.eval_batches)
            history.append({"step": step + 1, "train_loss": running, "val_loss": val,
                            "seconds": round(time.perf_counter() - t0, 1)})
            bar.set_postfix(train=f"{running:.3f}", val=f"{val:.3f}")
            if resume_path is not None:
                resume_path.parent.mkdir(parents=True, exist_ok=True)
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step + 1,
                            "history": json.dumps(history), "seconds": time.perf_counter() - t0}, resume_path)
        if over_time:
            tqdm.write(f"stopping at step {step + 1}: time budget of {cfg.time_budget_s:.0f}s used")
        if over_time or done:
            break
    model.eval()
    return distributed.from_main(history)

