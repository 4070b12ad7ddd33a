"""Compute each deterministic view once: a cache bounded in bytes whose concurrent identical calls share one run.

A lecture hall opens the same link at once: a hundred identical requests. The first one
computes; the other ninety-nine wait for it and get the same (immutable) result. If the
first asker leaves (closes the tab, cancels), its run stops, and one of the waiters takes
over and computes it again for the rest: nobody is told "stopped" because someone else left.
The key is every input that changes the result, model and settings included; sampling
without a seed is never cached, because two people asking for a sample expect two samples.

The bound is in bytes, not entries: an anonymous client could otherwise pin gigabytes
with a few dozen large results. A result larger than the whole cache is answered, not kept.
All caches together share one budget (`set_budget`, app.py --cache-mb, TRANSFORMER_LAB_CACHE_MB):
29 caches of 64 MB each had a 1.9 GB ceiling; now the least recently used result of any cache goes
first once they hold BUDGET_BYTES together.

Requests for different texts that arrive together share one forward pass instead (`Batcher`, below).
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

import itertools
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import Future
from dataclasses import fields, is_dataclass
from typing import Generic, TypeVar

T = TypeVar("T")
In = TypeVar("In")
Out = TypeVar("Out")
_ALL: list[RunCache] = []  # every cache, so tests (and a new model folder) can start from nothing
MAX_BYTES = 64 * 2**20  # per cache: no one view takes the whole budget
# All caches together. 1 GiB on a free CPU Space (16 GB): beside it the app at rest (0.7 GB, models loaded)
# and the sessions' state (ui/sessions.py, ~1 GB at most) leave most of the 16 GB free.
BUDGET_BYTES = 1 * 2**30
_LOCK = threading.Lock()  # one lock for every cache: evicting across caches takes one lock, never two
_budget = BUDGET_BYTES
_stamp = itertools.count()  # the order results were last used in, across caches


def set_budget(n_bytes: int) -> None:
    """The bytes every cache together may hold (app.py --cache-mb); what is over it is evicted now."""
    global _budget
    if n_bytes < 0:
        raise ValueError(f"a cache budget cannot be negative ({n_bytes})")
    with _LOCK:
        _budget = n_bytes
        _evict_over_budget()


def total_bytes() -> int:
    with _LOCK:
        return sum(cache.bytes for cache in _ALL)


def _evict_over_budget() -> None:
    """Evict the least recently used results of all caches until they fit the budget (caller holds _LOCK)."""
    total = sum(cache.bytes for cache in _ALL)
    while total > _budget:
        oldest = min((c for c in _ALL if c._done), key=lambda c: next(iter(c._done.values()))[2], default=None)
        if oldest is None:
            return
        _, (_, evicted, _) = oldest._done.popitem(last=False)
        oldest.bytes -= evicted
        total -= evicted


class _Abandoned(Exception):
    """The running computation's caller left (not an error of the computation): a waiter takes over."""


def nbytes(value, _seen: set[int] | None = None) -> int:
    """About how many bytes `value` holds: tensors and arrays by their data, containers by their items."""
    seen = set() if _seen is None else _seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if hasattr(value, "element_size") and hasattr(value, "numel"):  # a torch tensor
        return value.element_size() * value.numel()
    if hasattr(value, "nbytes") and isinstance(getattr(value, "nbytes"), int):  # a numpy array
        return value.nbytes
    size = sys.getsizeof(value, 64)
    if isinstance(value, (str, bytes, bytearray, int, float, bool, type(None))):
        return size
    if isinstance(value, dict):
        return size + sum(nbytes(k, seen) + nbytes(v, seen) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return size + sum(nbytes(v, seen) for v in value)
    if is_dataclass(value):
        return size + sum(nbytes(getattr(value, f.name, None), seen) for f in fields(value))
    if hasattr(value, "__dict__"):  # e.g. Gradio's PlotData, a run object
        return size + nbytes(vars(value), seen)
    return size


class RunCache(Generic[T]):
    """Results up to `max_bytes` (and at most `size` of them), least recently used evicted first;
    one computation per key at a time."""

    def __init__(self, size: int = 64, max_bytes: int = MAX_BYTES):
        self.size, self.max_bytes = size, max_bytes
        self._lock = _LOCK
        # key -> (result, its bytes, when last used), least recently used first
        self._done: OrderedDict[Hashable, tuple[T, int, int]] = OrderedDict()
        self._running: dict[Hashable, Future] = {}
        self.hits = self.misses = self.bytes = 0
        _ALL.append(self)

    def _claim(self, key: Hashable) -> tuple[str, object]:
        """("done", result) | ("wait", the running Future) | ("own", a new Future this caller must fulfil)."""
        with self._lock:
            if key in self._done:
                result, size, _ = self._done[key]
                self._done[key] = (result, size, next(_stamp))
                self._done.move_to_end(key)
                self.hits += 1
                return "done", result
            if key in self._running:
                self.hits += 1
                return "wait", self._running[key]
            self.misses += 1
            running = self._running[key] = Future()
            return "own", running

    def _fail(self, key: Hashable, running: Future, error: BaseException) -> None:
        with self._lock:
            del self._running[key]
        # An Exception is the computation's own answer (the same input fails again): every waiter gets it.
        # Anything else (a closed stream's GeneratorExit, a cancelled task) means the caller left.
        running.set_exception(error if isinstance(error, Exception) else _Abandoned())

    def holds(self, key: Hashable) -> bool:
        """Whether `key`'s result is ready (one still being computed is not)."""
        with self._lock:
            return key in self._done

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The cached result for `key`, or `compute()`'s (an exception is raised to every waiter, not kept)."""
        while True:
            state, value = self._claim(key)
            if state == "done":
                return value
            if state == "wait":
                try:
                    return value.result()
                except _Abandoned:
                    continue  # its caller left: claim it again (one waiter computes, the rest wait on it)
            try:
                result = compute()
            except BaseException as e:
                self._fail(key, value, e)
                raise
            self._finish(key, value, result)
            return result

    def stream(self, key: Hashable, produce: Callable[[], Iterator[T]],
               keep: Callable[[T], T] = lambda result: result) -> Iterator[T]:
        """`get` for a computation that yields partial results (a text growing token by token).

        The first caller for `key` streams every partial result and `keep(last one)` is cached;
        callers that arrive while it runs, or later, get only `keep(cached result)` (with
        keep=copy.deepcopy, everyone gets a copy of their own to change). If the first caller
        closes its stream, a waiter takes over and streams the run itself.
        """
        while True:
            state, value = self._claim(key)
            if state == "done":
                yield keep(value)
                return
            if state == "wait":
                try:
                    result = value.result()
                except _Abandoned:
                    continue
                yield keep(result)
                return
            break
        last = None
        try:
            for last in produce():
                yield last
        except BaseException as e:
            self._fail(key, value, e)
            raise
        self._finish(key, value, keep(last))

    def _finish(self, key: Hashable, running: Future, result: T) -> None:
        size = nbytes(result)
        with self._lock:
            del self._running[key]
            if size <= min(self.max_bytes, _budget):
                self._done[key] = (result, size, next(_stamp))
                self.bytes += size
            while len(self._done) > self.size or self.bytes > self.max_bytes:
                _, (_, evicted, _) = self._done.popitem(last=False)
                self.bytes -= evicted
            _evict_over_budget()
        running.set_result(result)

    def clear(self) -> None:
        with self._lock:
            self._done.clear()
            self.bytes = 0


def clear_all() -> None:
    """Forget every cached view (a test that swaps a model out must not see the old one's results)."""
    for cache in _ALL:
        cache.clear()


# ---------------------------------------------------------------- one pass for requests that arrive together

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
