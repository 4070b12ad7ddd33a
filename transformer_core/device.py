"""Where the models run: cuda > mps > cpu, unless TRANSFORMER_CORE_DEVICE says otherwise.

Under torchrun each process takes its own GPU; the process layout is read here from the variables
torchrun sets, so serving never imports the training code that runs DDP (distributed.py).

On CUDA the forward pass runs under bf16 autocast: matrix products in bfloat16
(twice the tensor-core throughput, the same exponent range as fp32, so no loss
scaling), reductions such as softmax and LayerNorm kept in fp32 by autocast.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass

import torch

ENV_VAR = "TRANSFORMER_CORE_DEVICE"


@dataclass(frozen=True)
class World:
    """Where this process stands among those torchrun started (one process: rank 0 of 1)."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0  # the rank on this machine, which picks its GPU
    machines: int = 1

    @property
    def main(self) -> bool:
        """Rank 0 alone logs, evaluates and writes checkpoints."""
        return self.rank == 0


def world() -> World:
    """This process's World, from the variables torchrun sets (RANK, WORLD_SIZE, ...)."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    return World(rank=int(os.environ.get("RANK", "0")), size=size, local_rank=int(os.environ.get("LOCAL_RANK", "0")),
                 machines=max(1, size // int(os.environ.get("LOCAL_WORLD_SIZE", str(size)))))


def local(device: torch.device) -> torch.device:
    """Under torchrun each process on a machine takes its own GPU: `cuda` becomes `cuda:LOCAL_RANK`."""
    w = world()
    if device.type == "cuda" and device.index is None and w.size > 1:
        return torch.device("cuda", w.local_rank)
    return device


def hardware(one: str, device: torch.device) -> str:
    """A model card's "trained on": `one` (what a process ran on `device`) and, under torchrun, how many did."""
    w = world()
    if w.size == 1:
        return one
    backend = "NCCL" if device.type == "cuda" else "gloo"
    return f"{w.size} processes on {w.machines} machine(s) (torchrun, DDP over {backend}), each on {one}"


class DeviceError(ValueError):
    """TRANSFORMER_CORE_DEVICE names a device torch does not know, or one this machine lacks."""


def default_device() -> torch.device:
    """The device models should run on."""
    chosen = os.environ.get(ENV_VAR)
    if chosen:
        try:
            device = torch.device(chosen)
        except RuntimeError as e:
            raise DeviceError(f"{ENV_VAR}={chosen!r} is not a device (try cpu, cuda, cuda:1 or mps)") from e
        if device.type == "cuda" and not torch.cuda.is_available():
            raise DeviceError(f"{ENV_VAR}={chosen!r} but this machine has no CUDA GPU that torch can use")
        return local(device)
    if torch.cuda.is_available():
        return local(torch.device("cuda"))
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def device_of(model: torch.nn.Module) -> torch.device:
    """The device a model's weights are on: inputs must be built there."""
    return next(model.parameters()).device


def autocast(device: torch.device | str):
    """bf16 autocast on CUDA; nothing elsewhere (CPU bf16 is slower than fp32 on most CPUs)."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return nullcontext()


def describe(device: torch.device | str) -> str:
    """What a model card says a run trained on (under torchrun: how many processes, and each one's device)."""
    device = torch.device(device)
    if device.type == "cuda":
        return hardware(f"one {torch.cuda.get_device_name(device)} (bf16 autocast)", device)
    if device.type == "cpu":
        return hardware(f"{torch.get_num_threads()} CPU thread(s) of a shared machine", device)
    return hardware(device.type, device)


_PAIR = "cpu-pair"  # the name of the threads of on_two_cores


@functools.cache
def _pair() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(2, thread_name_prefix=_PAIR)


def _lowered() -> bool:
    """Whether the calling thread runs below the process's CPU priority (a real LLM's generation, lab/llms.py): its
    work stays in it, at its priority, and never takes the pair's threads from the requests a hall waits for."""
    try:  # on Linux a thread's id names that thread, and the process's id its main thread
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) > os.getpriority(os.PRIO_PROCESS, os.getpid())
    except (OSError, AttributeError):  # not Linux: no thread has a priority of its own
        return False


def on_two_cores(fn: Callable, items: Iterable) -> list:
    """[fn(item) for item in items], spread over two CPU threads.

    The app gives each request one torch thread (lab/store.set_threads): one core each when several requests run
    at once, and a single request leaves the second core idle. A few large, independent pieces of one request
    (halves of a product) can take it: torch lets go of the GIL inside each call, and two threads of one torch
    thread each share the cores gracefully with other requests (no OpenMP team spinning at a barrier). The
    caller's grad mode holds in the threads; called from one of them, it runs in place (no thread waits on its
    own pool), and so it does in a thread of lowered priority."""
    items = list(items)
    if threading.current_thread().name.startswith(_PAIR) or len(items) < 2 or _lowered():
        return [fn(item) for item in items]
    grad = torch.is_grad_enabled()

    def run(item):
        with torch.set_grad_enabled(grad):
            return fn(item)

    return list(_pair().map(run, items))

