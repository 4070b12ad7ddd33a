"""Live training control: one run at a time, app-wide, in a process of its own.

A lecturer trains a brand-new encoder-decoder in front of the class. The run gets its
own process with one torch thread, so it neither changes the thread count of the
server that is answering everyone else, nor waits on it; its losses stream back
through a queue, and it stops as soon as it gets 99% of held-out sources right.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import threading
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field

import safetensors.torch
import torch

from i18n import Message
from transformer_core import EncoderDecoder, EncoderDecoderConfig, exact_match
from transformer_core.decoding.seq2seq import Codec, char_tokenizer
from transformer_core.tasks import PRESETS, TOY_TASKS, examples, get_task  # noqa: F401 -- PRESETS: the sizes the UI offers

from .policy import InputError

BUSY = Message("translate.busy")
SIZES = ("tiny", "small", "medium")  # the model sizes (PRESETS) a live run offers
STEPS = (50, 3000)  # the steps a live run may take, least and most
SECONDS = (10, 180)  # its time budget, least and most
FINAL_CHECK_SIZE = 200  # held-out sources scored after a live run (1,000 would keep the class waiting)
GOAL = 0.99  # exact match on held-out sources at which a live run has learned the task
CHECK_EVERY = 50  # steps between the goal checks
GOAL_CHECK_SIZE = 100  # held-out sources per goal check: about 0.1 s for a small model
MIN_SECONDS = 1e-3  # a run whose start-up used its whole budget still takes one step, then sends its model
SEND_BACK_S = 10.0  # after its budget, a run has this long to send its model back before it is stopped
THREADS = 1  # a loaded 2-core CPU ran a step ~15x slower with two threads fighting (5.8 s vs 0.35 s)
# The run's process yields the CPU to the server: on 2 cores a run at the server's priority took a core from every
# request, and a 30 ms tokenize beside it had a p95 of 0.4-0.8 s (benchmarks/door.py). At nice 10 it gets a
# tenth of a core the server wants, and all of one the server leaves idle.
NICE = 10


@dataclass
class Progress:
    """What the app shows while a run trains, and the fresh model once it is done."""

    losses: list[tuple[int, float]] = field(default_factory=list)
    checks: list[tuple[int, float]] = field(default_factory=list)  # (step, held-out exact match)
    seconds: float = 0.0
    model: EncoderDecoder | None = None
    codec: Codec | None = None
    reached_goal: bool = False


def _train(task_name: str, preset: str, steps: int, deadline: float, out: mp.Queue) -> None:
    """The child process: train until `deadline` (time.time()), report every step, send the weights back (or
    the error's message). The budget counts from the request, not from here: starting a process and importing
    torch took 30-40 s on a busy machine, and a 10 s run held the slot for 38-50 s."""
    # training code only here, in the child: serving the app imports none of it
    from transformer_core.training.translation import LIVE_BATCH, build_model, fit, live_config

    torch.set_num_threads(THREADS)
    try:
        task = get_task(task_name)
        model, codec = build_model(task, preset)
        held_out = examples(task, "test", GOAL_CHECK_SIZE, seed=1)

        def on_step(step: int, loss: float) -> bool:
            out.put(("loss", step + 1, loss))
            if (step + 1) % CHECK_EVERY:
                return False
            model.eval()
            score = exact_match(model, codec, held_out)
            model.train()
            out.put(("check", step + 1, score))
            return score >= GOAL

        seconds = max(deadline - time.time(), MIN_SECONDS)  # what start-up left of the budget (a step at least)
        fit(model, codec, task, live_config(steps, seconds), LIVE_BATCH, on_step=on_step, progress=False)
        # plain bytes: torch's shared-memory tensors would vanish with this process
        out.put(("done", model.config, safetensors.torch.save({k: v.contiguous() for k, v in model.state_dict().items()})))
    except Exception as e:  # noqa: BLE001 -- reported to the person by the parent
        out.put(("error", f"{type(e).__name__}: {e}"))


def held_out_score(model: EncoderDecoder, codec: Codec, task_name: str, n: int) -> float:
    """Exact match on n held-out test sources of a toy task (other sources than the goal checks use)."""
    return exact_match(model, codec, examples(task_name, "test", n))


_SLOTS: weakref.WeakSet = weakref.WeakSet()  # the app has one slot; tests make their own


def seconds_until_free() -> float:
    """How long until every training slot is free at the latest (0 when all are)."""
    return max((slot.seconds_left() for slot in list(_SLOTS)), default=0.0)


class LiveTraining:
    """The app's one training slot."""

    def __init__(self):
        _SLOTS.add(self)
        self._lock = threading.Lock()
        self._ends = 0.0  # time.monotonic() by which the running run is over, sent back or stopped

    @property
    def busy(self) -> bool:
        return self._lock.locked()

    def seconds_left(self) -> float:
        """How long until the slot is free at the latest (0 when it is free now)."""
        return max(self._ends - time.monotonic(), 0.0) if self.busy else 0.0

    def run(self, task_name: str, preset: str, steps: int, seconds: float, poll: float = 0.5) -> Iterator[Progress]:
        """Train in a child process, yielding the progress every `poll` seconds and once at the end.

        A second run while one is going raises InputError(BUSY) at once: the CPU is shared, and a
        lecturer would rather hear "busy" than stare at a queue.
        """
        task = get_task(task_name)
        if task.name not in TOY_TASKS:
            raise InputError(Message("translate.live_tasks", tasks=", ".join(TOY_TASKS)))
        if not self._lock.acquire(blocking=False):
            raise InputError(BUSY)
        self._ends = time.monotonic() + seconds + SEND_BACK_S
        deadline = time.time() + seconds
        context = mp.get_context("spawn")  # a fork of a threaded server could inherit held locks
        messages = context.Queue()
        child = context.Process(target=_train, args=(task.name, preset, steps, deadline, messages), daemon=True)
        state = Progress()
        t0 = shown = time.perf_counter()
        finished = False
        try:
            child.start()
            lower_priority(child.pid)
            while True:
                try:
                    message = messages.get(timeout=poll)
                except queue.Empty:
                    if not child.is_alive() or time.monotonic() > self._ends:  # gone, or over budget and silent
                        raise InputError(Message("translate.no_result")) from None
                    message = ("wait",)
                if time.perf_counter() - shown >= poll:
                    shown = time.perf_counter()
                    state.seconds = shown - t0
                    yield state
                kind, *rest = message
                if kind == "loss":
                    state.losses.append((rest[0], rest[1]))
                elif kind == "check":
                    state.checks.append((rest[0], rest[1]))
                    state.reached_goal = rest[1] >= GOAL
                elif kind == "error":
                    raise InputError(Message("translate.stopped", error=rest[0]))
                elif kind == "done":
                    config, weights = rest
                    state.model, state.codec = _rebuild(config, weights, task.symbols)
                    state.seconds = time.perf_counter() - t0
                    yield state
                    finished = True
                    return
        finally:
            if child.pid is None:  # never started: nothing to stop
                self._lock.release()
            elif finished:  # the child sent its result and is exiting by itself; we are on a worker thread
                self._stop(child, wait=5)
            else:
                # The person left (Gradio closes the stream on its event loop) or the run failed: kill
                # now, without waiting, and free the slot from a thread of its own once the child is gone.
                child.kill()
                threading.Thread(target=self._stop, args=(child, 0), daemon=True).start()

    def _stop(self, child, wait: float) -> None:
        """Let `child` end within `wait` seconds, else kill it; then free the slot."""
        try:
            child.join(timeout=wait)
            if child.is_alive():
                child.kill()
            child.join()
        finally:
            self._lock.release()


def lower_priority(pid: int) -> None:
    """Run process `pid` at NICE, from the parent at once: the child's own start-up (importing torch, seconds of
    CPU) is already behind the server's requests. Nothing on a system without priorities."""
    if hasattr(os, "setpriority"):
        try:
            os.setpriority(os.PRIO_PROCESS, pid, max(NICE, os.getpriority(os.PRIO_PROCESS, pid)))
        except OSError:  # not allowed here (a container's policy): the run trains at the server's priority
            pass


def _rebuild(config: EncoderDecoderConfig, weights: bytes, symbols: str) -> tuple[EncoderDecoder, Codec]:
    model = EncoderDecoder(config)
    model.load_state_dict(safetensors.torch.load(weights))
    return model.eval(), Codec(char_tokenizer(symbols))
