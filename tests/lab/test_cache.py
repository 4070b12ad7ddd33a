"""The run cache: bounded, shared by concurrent equal requests."""

import threading
import time

import pytest

from lab.cache import ViewCache


def test_concurrent_equal_requests_share_one_computation():
    cache, calls = ViewCache(size=4), []

    def slow():
        calls.append(1)
        time.sleep(0.2)
        return object()

    results = []
    threads = [threading.Thread(target=lambda: results.append(cache.get("k", slow))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len({id(r) for r in results}) == 1


def test_an_exception_reaches_every_waiter_and_is_not_kept():
    cache, calls, started = ViewCache(size=4), [], threading.Event()

    def failing():
        calls.append(1)
        started.set()
        time.sleep(0.3)
        raise ValueError("the model ran out of memory")

    outcomes = []

    def ask():
        try:
            outcomes.append(cache.get("k", failing))
        except ValueError as e:
            outcomes.append(e)

    first = threading.Thread(target=ask)
    first.start()
    started.wait(5)
    waiters = [threading.Thread(target=ask) for _ in range(5)]
    for t in waiters:
        t.start()
    for t in [first, *waiters]:
        t.join(10)
    assert len(calls) == 1 and len(outcomes) == 6
    assert all(isinstance(o, ValueError) and "out of memory" in str(o) for o in outcomes)
    assert cache.get("k", lambda: "fine now") == "fine now"  # the failure was not kept: the next call computes
    assert cache.get("k", lambda: "not asked") == "fine now"


def test_the_cache_keeps_the_most_recently_used_results_up_to_its_size():
    cache, calls = ViewCache(size=2), []

    def compute(key):
        return lambda: calls.append(key) or key.upper()

    assert cache.get("a", compute("a")) == "A" and cache.get("b", compute("b")) == "B"
    assert cache.get("a", compute("a")) == "A"  # a hit: "a" is now the most recent
    assert cache.get("c", compute("c")) == "C"  # over the size: "b", the least recent, goes
    assert calls == ["a", "b", "c"]
    assert cache.get("a", compute("a")) == "A" and calls == ["a", "b", "c"]
    assert cache.get("b", compute("b")) == "B" and calls == ["a", "b", "c", "b"]
    assert (cache.hits, cache.misses) == (2, 4)
    cache.clear()
    cache.get("a", compute("a"))
    assert calls[-1] == "a"


def test_a_stream_is_shared_with_late_comers_and_a_closed_stream_answers_its_waiters():
    cache, calls = ViewCache(size=4), []

    def produce():
        calls.append(1)
        for i in range(3):
            time.sleep(0.1)
            yield [i]

    first = cache.stream("k", produce, keep=list)
    assert next(first) == [0]
    late = []
    waiter = threading.Thread(target=lambda: late.extend(cache.stream("k", produce, keep=list)))
    waiter.start()
    assert list(first) == [[1], [2]]
    waiter.join(5)
    assert late == [[2]] and len(calls) == 1  # only the end, from the one run

    stopped = cache.stream("s", produce)
    next(stopped)
    answers = []
    waiter = threading.Thread(target=lambda: answers.append(pytest.raises(RuntimeError, list,
                                                                          cache.stream("s", produce))))
    hits = cache.hits
    waiter.start()
    deadline = time.monotonic() + 5
    while cache.hits == hits and time.monotonic() < deadline:  # until the waiter waits on the running stream
        time.sleep(0.01)
    stopped.close()  # the person closed the page mid-stream
    waiter.join(5)
    assert not waiter.is_alive() and answers  # the waiter got an answer instead of hanging
    assert list(cache.stream("s", produce)) == [[0], [1], [2]]  # and nothing half-done was kept
