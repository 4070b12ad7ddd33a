"""Requests that arrive together share a forward pass, and each gets exactly its own answer."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from lab import attention, models, sentiment, store
from lab.cache import Batcher
from lab.cache import clear_all


def test_requests_arriving_during_a_pass_share_the_next_one_and_get_their_own_answers():
    first_pass_may_end, sizes = threading.Event(), []

    def double(key, items):
        sizes.append(len(items))
        if len(sizes) == 1:
            first_pass_may_end.wait(10)
        return [2 * i for i in items]

    batcher = Batcher(double, max_batch=8)
    with ThreadPoolExecutor(12) as pool:
        first = pool.submit(batcher, "m", 0)
        while not sizes:  # the first request runs at once, alone
            time.sleep(0.001)
        rest = [pool.submit(batcher, "m", i) for i in range(1, 12)]
        while len(batcher._queues["m"]) < 11:
            time.sleep(0.001)
        first_pass_may_end.set()
        answers = [first.result()] + [f.result() for f in rest]
    assert answers == [2 * i for i in range(12)]
    assert sizes == [1, 8, 3]  # the eleven that waited: one pass of MAX, then the rest


def test_one_bad_item_fails_only_its_own_request():
    def invert(key, items):
        return [1 / i for i in items]

    batcher = Batcher(invert)
    gate = threading.Barrier(4)

    def ask(i):
        gate.wait()
        return batcher("m", i)

    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(ask, i) for i in (1, 0, 2, 4)]
    assert futures[0].result() == 1 and futures[2].result() == 0.5 and futures[3].result() == 0.25
    with pytest.raises(ZeroDivisionError):
        futures[1].result()
    assert not batcher._running and not batcher._queues  # nothing left behind


TEXTS = ["To be, or not to be.", "Now is the winter of our discontent made glorious summer by this sun of York.",
         "The film was slow at first, but the ending moved me to tears.", "A dull mess.", "Not bad at all!",
         "ROMEO: But soft, what light through yonder window breaks?"]
TEXTS_ZH = ["非常好的一本书，值得一读，推荐！", "质量太差了，非常失望。", "这只动物没有过马路，因为它太累了。", "还行吧。",
            "物流很快，包装也很好，下次还会再来买的。", "一点也不好看。"]


def at_once(fn, texts):
    clear_all()
    gate = threading.Barrier(len(texts))

    def ask(text):
        gate.wait()
        return fn(text)

    with ThreadPoolExecutor(len(texts)) as pool:
        return list(pool.map(ask, texts))


def one_by_one(fn, texts):
    answers = []
    for text in texts:
        clear_all()
        answers.append(fn(text))
    return answers


@pytest.mark.parametrize("model", ["shakespeare-lm", "sentiment"])
def test_students_asking_at_once_see_the_attention_they_see_alone(model, monkeypatch):
    if not (store.model_dir() / model / "model.safetensors").is_file():
        pytest.skip(f"{model} is not in {store.model_dir()}")
    batcher, sizes = attention._traced, []
    run_batch = batcher.run_batch

    def first_waits(key, items):
        # the first pass ends once the other students wait behind it, as in a hall: on a loaded machine the threads
        # had once asked one after another's pass, and no pass was shared
        sizes.append(len(items))
        deadline = time.monotonic() + 10
        while len(sizes) == 1 and len(batcher._queues.get(key, [])) < len(TEXTS) - len(items) \
                and time.monotonic() < deadline:
            time.sleep(0.001)
        return run_batch(key, items)

    monkeypatch.setattr(batcher, "run_batch", first_waits)
    run = lambda text: attention.attention_run(model, text)  # noqa: E731
    together = at_once(run, TEXTS)
    assert sum(sizes) == len(TEXTS) and len(sizes) <= 2  # those who waited shared one pass
    alone = one_by_one(run, TEXTS)
    for a, b in zip(together, alone):
        assert a.q_labels == b.q_labels
        np.testing.assert_allclose(a.attn, b.attn, atol=1e-5)
        np.testing.assert_allclose(a.rollout, b.rollout, atol=1e-5)


def test_students_classifying_at_once_get_the_verdicts_they_get_alone():
    installed = sentiment.classifiers()
    if not installed:
        pytest.skip(f"no classifier in {store.model_dir()}")
    for name in installed.values():
        run = lambda text: sentiment.classify(text, name)  # noqa: E731
        texts = TEXTS if models.checkpoint(name).reads("en") else TEXTS_ZH  # a Chinese classifier refuses English
        for a, b in zip(at_once(run, texts), one_by_one(run, texts)):
            assert a.labels == b.labels and max(a.probs, key=a.probs.get) == max(b.probs, key=b.probs.get)
            np.testing.assert_allclose(list(a.probs.values()), list(b.probs.values()), atol=1e-5)
            np.testing.assert_allclose(a.attn, b.attn, atol=1e-5)
            np.testing.assert_allclose(a.shares, b.shares, atol=1e-4, rtol=1e-3)
