"""Requests that arrive together share one forward pass: a lecture hall typing at once.

A forward pass over 12 tokens is mostly Python calling into torch, holding the GIL, so
100 students' passes run one after another on one core. One padded pass over 16 texts
costs little more than over one, and its larger matrix products release the GIL, so the
second core builds the other requests' figures meanwhile.

No request waits for a batch to fill: the first one runs at once, alone. Requests that
arrive while a pass for the same key is running queue up, and the next pass takes all of
them (up to MAX_BATCH). If a batched pass fails, each of its items runs alone, so one
student's bad text cannot fail the others.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

In = TypeVar("In")
Out = TypeVar("Out")

MAX_BATCH = 16  # texts per pass: beyond this a 128-token pass grows past what one request is worth waiting


class _Pending(Generic[In, Out]):
    """One request in a queue: its item, and (once set) its result, its error or its turn to lead."""

    def __init__(self, item: In):
        self.item = item
        self.ready = threading.Event()
        self.leads = False
        self.result: Out | None = None
        self.error: BaseException | None = None

    def answer(self) -> Out:
        if self.error is not None:
            raise self.error
        return self.result


class Batcher(Generic[In, Out]):
    """Runs `run_batch(key, items) -> outputs` (one output per item, in order) for requests that arrive together."""

    def __init__(self, run_batch: Callable[[Hashable, list[In]], list[Out]], max_batch: int = MAX_BATCH):
        self.run_batch, self.max_batch = run_batch, max_batch
        self._lock = threading.Lock()
        self._queues: dict[Hashable, list[_Pending]] = {}
        self._running: set[Hashable] = set()
        self.passes = 0  # how many batched passes ran (tests and benchmarks read it)

    def __call__(self, key: Hashable, item: In) -> Out:
        """`item`'s output, computed in a pass with whatever else for `key` is waiting."""
        mine = _Pending(item)
        with self._lock:
            queue = self._queues.setdefault(key, [])
            queue.append(mine)
            leads = key not in self._running
            self._running.add(key)
        if not leads:
            mine.ready.wait()  # answered by someone else's pass, or handed the lead for the next one
            if not mine.leads:
                return mine.answer()
        self._lead(key, queue)
        return mine.answer()

    def _lead(self, key: Hashable, queue: list[_Pending]) -> None:
        """Run one pass over what is queued for `key`, then hand the lead to the next in line (if any)."""
        with self._lock:
            batch = queue[: self.max_batch]
            del queue[: len(batch)]
            self.passes += 1
        try:
            self._answer(key, batch)
        finally:
            with self._lock:
                if queue:
                    queue[0].leads = True
                    queue[0].ready.set()
                else:
                    self._running.discard(key)
                    del self._queues[key]

    def _answer(self, key: Hashable, batch: list[_Pending]) -> None:
        try:
            outputs = self.run_batch(key, [p.item for p in batch])
            for pending, output in zip(batch, outputs, strict=True):
                pending.result = output
        except Exception as e:  # noqa: BLE001 -- handed to the requests it belongs to
            if len(batch) == 1:
                batch[0].error = e
            else:  # find whose item it was: each runs alone and keeps its own error
                for pending in batch:
                    _alone(pending, lambda p=pending: self.run_batch(key, [p.item])[0])
        finally:
            for pending in batch:  # whatever happened, nobody waits forever
                if pending.result is None and pending.error is None:
                    pending.error = RuntimeError("the batched computation was stopped")
                pending.ready.set()


def _alone(pending: _Pending, compute: Callable[[], Out]) -> None:
    """Set `pending`'s result from `compute()`, or the error it raised."""
    try:
        pending.result = compute()
    except Exception as e:  # noqa: BLE001 -- handed to the request it belongs to
        pending.error = e
