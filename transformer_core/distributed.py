"""Training on several processes at once: torchrun starts them, DistributedDataParallel keeps them in step.

Lesson: data parallelism. Every process (a *rank*) holds the whole model. At each step every rank
draws the same global batch (the batch generator is seeded by the step number) and keeps only its
own slice of the rows; it computes the loss and the gradients of that slice, and DDP averages the
gradients across ranks during the backward pass, so every rank takes the same optimizer step and the
copies never drift apart. Weighting each rank's loss by its share of what the batch's loss averages
over (rows, or target tokens) makes that average the gradient of the whole batch: N processes train
the model one process would, with the same global batch and the same learning-rate schedule.

Run without torchrun, nothing here does anything: one process is the whole world.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel

from .device import World, device_of, world


# How long a collective waits for a rank before it fails. torchrun stops every rank as soon as one
# exits with an error; this bounds the wait when a rank hangs instead, or a machine drops out.
COLLECTIVE_TIMEOUT = timedelta(minutes=10)

# gloo's words when a collective fails because another rank has gone (it crashed or was stopped).
PEER_GONE = ("Connection closed by peer", "Connection reset by peer")

TermsFn = Callable[[object], int]  # batch -> how many terms its loss averages over


class DistributedError(RuntimeError):
    """A batch cannot be split across the ranks; the message says what to change."""


def is_main() -> bool:
    return world().main


def setup(device: torch.device | None = None) -> World:
    """Join the process group torchrun started (once per process): NCCL for GPU tensors, gloo for CPU ones.

    Ranks other than 0 then write nothing to stdout: what a run prints, rank 0 prints once. A GPU
    `device` becomes this process's current one, where NCCL puts what it sends.
    """
    w = world()
    if w.size > 1 and not dist.is_initialized():
        # DDP imports torch.distributed.nn, whose functions take `group=group.WORLD` as a default argument: imported
        # after the group exists, they pin it for good, so destroy_process_group leaves gloo's threads running into
        # interpreter shutdown, where one freeing a finished broadcast aborts the process (about 1 exit in 8).
        # Imported first, those defaults are None.
        import torch.distributed.nn
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo",
                                timeout=COLLECTIVE_TIMEOUT)
        if not w.main:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (open for the life of the process)
    if w.size > 1 and device is not None and device.type == "cuda":
        torch.cuda.set_device(device)
    return w


def run(main: Callable[[], None]) -> None:
    """A training command's entry point: `main()`, and under torchrun inside the process group.

    `record` writes a failing rank's exception where torchrun looks for it, so torchrun's summary
    names the rank that failed first and its error, after stopping the others.
    """
    if setup().size == 1:
        main()
        return
    record(_leaving_the_blame(main))()
    dist.destroy_process_group()


def _leaving_the_blame(main: Callable[[], None]) -> Callable[[], None]:
    """`main`, but a rank whose peer has gone waits for torchrun to stop it instead of failing too.

    torchrun names the failure with the earliest timestamp, in whole seconds: a rank that failed
    because its peer had, ending within the same second, could be named instead of the peer and its
    real error. Waiting, it is stopped once torchrun sees the peer's failure (every 0.1 s by default).
    """
    def waiting_main() -> None:
        try:
            main()
        except RuntimeError as error:
            if any(words in str(error) for words in PEER_GONE):
                time.sleep(COLLECTIVE_TIMEOUT.total_seconds())  # no torchrun to stop it: fail after all
            raise

    return waiting_main


def from_main(obj):
    """Rank 0's `obj` on every rank (pickled over the process group); `obj` itself in one process."""
    if world().size == 1:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def rows(batch) -> int:
    """How many examples a batch holds: the first dimension of its (first) tensor."""
    return len(batch) if isinstance(batch, torch.Tensor) else rows(batch[0])


def shard(batch, rank: int, size: int):
    """Rank `rank`'s rows of a batch (a tensor, or a tuple/list of tensors sharing their first dimension)."""
    if isinstance(batch, torch.Tensor):
        if len(batch) < size:
            raise DistributedError(f"a batch of {len(batch)} rows cannot give each of {size} ranks a share: "
                                   f"use a batch size of at least {size}")
        return batch.tensor_split(size)[rank]
    if isinstance(batch, (tuple, list)):
        return type(batch)(shard(part, rank, size) for part in batch)
    raise DistributedError(f"get_batch returned a {type(batch).__name__}: only tensors, or tuples or lists of "
                           "tensors, can be split into one share of rows per rank")


class _Loss(nn.Module):
    """The loss as a module, so DDP sees every use of the weights (loss functions call heads, `encode`...)."""

    def __init__(self, model: nn.Module, loss_fn: Callable[[nn.Module, object], torch.Tensor]):
        super().__init__()
        self.model, self.loss_fn = model, loss_fn

    def forward(self, batch) -> torch.Tensor:
        return self.loss_fn(self.model, batch)


class OneProcess:
    """A step's loss in one process: the loss of the whole batch, as it always was."""

    def __init__(self, model: nn.Module, loss_fn: Callable[[nn.Module, object], torch.Tensor]):
        self.model, self.loss_fn = model, loss_fn

    def __call__(self, batch) -> torch.Tensor:
        return self.loss_fn(self.model, batch)

    def agree(self, loss: torch.Tensor, seconds: float) -> tuple[float, float]:
        return loss.item(), seconds


class DataParallel:
    """A step's loss on this rank: its rows of the global batch, weighted so that DDP's gradient
    average is the gradient of the whole batch's loss."""

    def __init__(self, model: nn.Module, loss_fn: Callable[[nn.Module, object], torch.Tensor],
                 terms: TermsFn | None = None):
        self.world = world()
        self.device = device_of(model)
        # buffers are not synced at every forward: ours are constants (position tables, masks), and a sync is a collective;
        # static_graph: the same weights take part every step, some never (a pre-training head while fine-tuning)
        self.ddp = DistributedDataParallel(_Loss(model, loss_fn), forward_sync_buffers=False, static_graph=True,
                                           device_ids=[self.device.index] if self.device.type == "cuda" else None)
        self.terms = terms or rows

    def __call__(self, batch) -> torch.Tensor:
        size = self.world.size
        part = shard(batch, self.world.rank, size)
        # DDP averages the ranks' gradients; weighting each by its share of the terms makes that the whole mean
        return self.ddp(part) * (size * self.terms(part) / self.terms(batch))

    def agree(self, loss: torch.Tensor, seconds: float) -> tuple[float, float]:
        """The whole batch's loss and the ranks' mean clock, from one all-reduce: every rank takes the same
        decisions from them (learning rate under a time budget, when to stop, what a callback sees)."""
        both = torch.tensor([loss.item() / self.world.size, seconds], dtype=torch.float64, device=self.device)
        dist.all_reduce(both)
        return both[0].item(), both[1].item() / self.world.size


def data_parallel(model: nn.Module, loss_fn: Callable[[nn.Module, object], torch.Tensor],
                  terms: TermsFn | None = None) -> OneProcess | DataParallel:
    """batch -> the loss this process back-propagates, for one process or for this rank of many."""
    return OneProcess(model, loss_fn) if world().size == 1 else DataParallel(model, loss_fn, terms)
