"""lab.cache: one computation per key, shared, bounded in bytes, and never lost when its first asker leaves."""

import threading
import time

import numpy as np
import torch

from lab.cache import ViewCache, nbytes


def _wait_until(condition, seconds=5.0):
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_when_the_first_asker_leaves_a_waiter_takes_over_the_stream():
    """A lecture hall on one link: the student whose request computes closes the tab; the others get it."""
    cache, calls = ViewCache(size=4), []

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
    cache, started = ViewCache(size=4), threading.Event()

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
    cache = ViewCache(size=100, max_bytes=10_000)
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
