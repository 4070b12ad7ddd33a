"""lab.cache: one computation per key, shared by concurrent equal requests, bounded in bytes, and never lost when its first asker leaves."""

import threading
import time

import numpy as np
import torch

from lab.cache import RunCache, nbytes


def test_concurrent_equal_requests_share_one_computation():
    cache, calls = RunCache(size=4), []

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
    cache, calls, started = RunCache(size=4), [], threading.Event()

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
    cache, calls = RunCache(size=2), []

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
    cache, calls = RunCache(size=4), []

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
    waiter = threading.Thread(target=lambda: answers.append(list(cache.stream("s", produce))))
    hits = cache.hits
    waiter.start()
    deadline = time.monotonic() + 5
    while cache.hits == hits and time.monotonic() < deadline:  # until the waiter waits on the running stream
        time.sleep(0.01)
    stopped.close()  # the person closed the page mid-stream
    waiter.join(5)
    assert not waiter.is_alive() and answers == [[[0], [1], [2]]]  # the waiter took over instead of hanging


def _wait_until(condition, seconds=5.0):
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_when_the_first_asker_leaves_a_waiter_takes_over_the_stream():
    """A lecture hall on one link: the student whose request computes closes the tab; the others get it."""
    cache, calls = RunCache(size=4), []

    def produce():
        calls.append(1)
        for i in range(3):
            time.sleep(0.05)
            yield [i]

    first = cache.stream("k", produce, keep=list)
    assert next(first) == [0]
    answers = []
    waiters = [threading.Thread(target=lambda: answers.append(list(cache.stream("k", produce, keep=list))))
               for _ in range(3)]
    hits = cache.hits
    for t in waiters:
        t.start()
    _wait_until(lambda: cache.hits >= hits + 3)  # all three wait on the running stream
    first.close()  # the first student left
    for t in waiters:
        t.join(5)
    assert len(answers) == 3 and all(a[-1] == [2] for a in answers), answers
    assert len(calls) == 2  # one waiter recomputed; the other two shared its run
    assert list(cache.stream("k", produce, keep=list)) == [[2]]  # and its result is kept


def test_when_the_first_caller_is_interrupted_a_waiter_computes_instead():
    cache, started = RunCache(size=4), threading.Event()

    def interrupted():
        started.set()
        time.sleep(0.2)
        raise KeyboardInterrupt  # not an error of the computation: the caller was stopped

    def ask_first():
        try:
            cache.get("k", interrupted)
        except KeyboardInterrupt:
            pass

    first = threading.Thread(target=ask_first)
    first.start()
    started.wait(5)
    answer = []
    waiter = threading.Thread(target=lambda: answer.append(cache.get("k", lambda: "computed again")))
    waiter.start()
    first.join(5)
    waiter.join(5)
    assert answer == ["computed again"]


def test_the_cache_is_bounded_by_the_bytes_its_results_hold():
    cache = RunCache(size=100, max_bytes=10_000)
    for key in range(12):
        cache.get(key, lambda: np.zeros(1000, dtype=np.uint8))  # 1,000 bytes each
    assert cache.bytes <= 10_000
    big = cache.get("big", lambda: torch.zeros(5000))  # 20,000 bytes: larger than the whole cache
    assert big.numel() == 5000 and not cache.holds("big")  # answered, not kept
    assert cache.bytes <= 10_000 and cache.holds(11) and not cache.holds(0)


def test_nbytes_counts_what_a_result_holds():
    assert nbytes("x" * 1000) >= 1000
    assert nbytes((torch.zeros(100), [np.zeros(50)], {"a": b"x" * 30})) >= 400 + 400 + 30
    assert nbytes(object()) > 0
    loop = []
    loop.append(loop)
    assert nbytes(loop) > 0  # a cycle is counted once, not forever


def test_every_cache_together_stays_within_one_byte_budget():
    from lab import cache as caches

    first, second = RunCache(size=100, max_bytes=10 * 2**20), RunCache(size=100, max_bytes=10 * 2**20)
    try:
        caches.set_budget(3 * 2**20)
        for i in range(4):
            first.get(("a", i), lambda: b"x" * 2**20)
            second.get(("b", i), lambda: b"y" * 2**20)
        assert caches.total_bytes() <= 3 * 2**20  # each cache alone was under its own 10 MB
        assert second.holds(("b", 3)) and not first.holds(("a", 0))  # the least recently used went first
    finally:
        caches.set_budget(caches.BUDGET_BYTES)
        caches._ALL.remove(first)
        caches._ALL.remove(second)
