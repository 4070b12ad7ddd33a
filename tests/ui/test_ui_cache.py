"""The handlers' cache: what a lecture hall of equal requests costs the app."""

import threading
import time

import plotly.graph_objects as go
import pytest
from gradio.caching import CacheMissError, ProbeCache
from gradio.components.plot import PlotData

from ui.handlers import cached


def test_a_figure_is_kept_encoded_and_every_caller_gets_the_same_one():
    calls = []

    @cached
    def view(text):
        calls.append(text)
        return text.upper(), go.Figure(go.Bar(y=[1, 2, 3]))

    first = view("a")
    assert isinstance(first[1], PlotData) and '"y":[1,2,3]' in first[1].plot.replace(" ", "")
    assert view("a") is first and view("b") is not first and calls == ["a", "b"]


def test_gradio_asks_the_cache_first_and_only_a_finished_result_answers_outside_the_queue():
    calls = []

    @cached
    def view(text):
        calls.append(text)
        return text

    with ProbeCache(), pytest.raises(CacheMissError):  # a miss is queued, not computed by the probe
        view("a")
    assert calls == []
    assert view("a") == "a"
    with ProbeCache():
        assert view("a") == "a" and calls == ["a"]  # a hit is answered at once


def test_concurrent_equal_requests_share_one_computation():
    calls = []

    @cached
    def view(text):
        calls.append(text)
        time.sleep(0.2)
        return text

    answers = []
    threads = [threading.Thread(target=lambda: answers.append(view("a"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == ["a"] * 8 and calls == ["a"]


def test_a_cached_stream_answers_with_its_finished_output_only():
    @cached
    def stream(n):
        for i in range(n):
            yield i, go.Figure(go.Bar(y=[i]))

    assert [i for i, _ in stream(5)] == [0, 1, 2, 3, 4]  # the first asker sees it grow
    again = list(stream(5))
    assert [i for i, _ in again] == [4] and isinstance(again[0][1], PlotData)
    with ProbeCache():
        assert [i for i, _ in stream(5)] == [4]
        with pytest.raises(CacheMissError):
            list(stream(6))


def test_a_cached_handler_shows_gradio_its_cache_so_a_hit_skips_the_queue():
    """Gradio's queue probes a function for a cached answer only if it has a `.cache` attribute."""
    @cached
    def view(text):
        return text

    @cached
    def stream(text):
        yield text

    assert hasattr(view, "cache") and hasattr(stream, "cache")


def test_large_texts_do_not_stay_in_memory_as_cache_keys():
    """64 distinct 4 MB texts once pinned 438 MiB: a key holds at most what the model reads, plus a digest."""
    import gc
    import tracemalloc

    @cached
    def length(text):
        return len(text)

    gc.collect()
    tracemalloc.start()
    try:
        for i in range(64):
            assert length(str(i) + "x" * 4_000_000) == 4_000_000 + len(str(i))
        gc.collect()
        kept, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert kept < 8 * 2**20, f"{kept / 2**20:.0f} MiB kept"
