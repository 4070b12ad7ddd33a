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

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The cached result for `key`, or `compute()`'s (an exception is raised to every waiter, not kept)."""
        with self._lock:
            if key in self._done:
                self._done.move_to_end(key)
                self.hits += 1
                return self._done[key]
            running = self._running.get(key)
            if running is None:
                running = self._running[key] = Future()
                owner = True
                self.misses += 1
            else:
                owner = False
                self.hits += 1
        if not owner:
            return running.result()
        try:
            result = compute()
        except BaseException as e:
            with self._lock:
                del self._running[key]
            running.set_exception(e)
            raise
        self._finish(key, running, result)
        return result

    def stream(self, key: Hashable, produce: Callable[[], Iterator[T]],
               keep: Callable[[T], T] = lambda result: result) -> Iterator[T]:
        """`get` for a computation that yields partial results (a text growing token by token).

        The first caller for `key` streams every partial result and `keep(last one)` is cached;
        callers that arrive while it runs, or later, get only `keep(cached result)` (with
        keep=copy.deepcopy, everyone gets a copy of their own to change).
        """
        with self._lock:
            if key in self._done:
                self._done.move_to_end(key)
                self.hits += 1
                done, running = True, None
            else:
                done, running = False, self._running.get(key)
                if running is None:
                    running = self._running[key] = Future()
                    owner = True
                    self.misses += 1
                else:
                    owner = False
                    self.hits += 1
        if done:
            yield keep(self._done[key])
            return
        if not owner:
            yield keep(running.result())
            return
        last = None
        try:
            for last in produce():
                yield last
        except BaseException as e:  # also a closed stream (GeneratorExit): waiters must not hang
            with self._lock:
                del self._running[key]
            running.set_exception(e if isinstance(e, Exception) else RuntimeError("the computation was stopped"))
            raise
        self._finish(key, running, keep(last))

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
