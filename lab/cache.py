"""Compute each deterministic view once: a bounded LRU cache whose concurrent identical calls share one run.

A lecture hall opens the same link at once: a hundred identical requests. The first one
computes; the other ninety-nine wait for it and get the same (immutable) result. The key
is every input that changes the result, model and settings included; sampling without a
seed is never cached, because two people asking for a sample expect two samples.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import Future
from typing import Generic, TypeVar

T = TypeVar("T")
_ALL: list[ViewCache] = []  # every cache, so tests (and a new model folder) can start from nothing


class ViewCache(Generic[T]):
    """At most `size` results, least recently used evicted first; one computation per key at a time."""

    def __init__(self, size: int = 64):
        self.size = size
        self._lock = threading.Lock()
        self._done: OrderedDict[Hashable, T] = OrderedDict()
        self._running: dict[Hashable, Future] = {}
        self.hits = self.misses = 0
        _ALL.append(self)

    def _claim(self, key: Hashable) -> tuple[str, object]:
        """("done", result) | ("wait", the running Future) | ("own", a new Future this caller must fulfil)."""
        with self._lock:
            if key in self._done:
                self._done.move_to_end(key)
                self.hits += 1
                return "done", self._done[key]
            if key in self._running:
                self.hits += 1
                return "wait", self._running[key]
            self.misses += 1
            running = self._running[key] = Future()
            return "own", running

    def _fail(self, key: Hashable, running: Future, error: BaseException) -> None:
        with self._lock:
            del self._running[key]
        # a closed stream (GeneratorExit) too: waiters must get an answer, not hang
        running.set_exception(error if isinstance(error, Exception) else RuntimeError("the computation was stopped"))

    def holds(self, key: Hashable) -> bool:
        """Whether `key`'s result is ready (one still being computed is not)."""
        with self._lock:
            return key in self._done

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The cached result for `key`, or `compute()`'s (an exception is raised to every waiter, not kept)."""
        state, value = self._claim(key)
        if state == "done":
            return value
        if state == "wait":
            return value.result()
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
        keep=copy.deepcopy, everyone gets a copy of their own to change).
        """
        state, value = self._claim(key)
        if state != "own":
            yield keep(value if state == "done" else value.result())
            return
        last = None
        try:
            for last in produce():
                yield last
        except BaseException as e:
            self._fail(key, value, e)
            raise
        self._finish(key, value, keep(last))

    def _finish(self, key: Hashable, running: Future, result: T) -> None:
        with self._lock:
            del self._running[key]
            self._done[key] = result
            while len(self._done) > self.size:
                self._done.popitem(last=False)
        running.set_result(result)

    def clear(self) -> None:
        with self._lock:
            self._done.clear()


def clear_all() -> None:
    """Forget every cached view (a test that swaps a model out must not see the old one's results)."""
    for cache in _ALL:
        cache.clear()
