"""The handlers' cache: what a lecture hall of equal requests costs the app."""

import threading
import time

import plotly.graph_objects as go
import pytest
from gradio.caching import CacheMissError, ProbeCache
from gradio.components.plot import PlotData

from ui.common import cached


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
