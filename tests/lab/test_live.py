"""lab.live: the app's one training slot, stopped at the bar, which never holds up the server that answers everyone else."""

import multiprocessing
import time
from types import SimpleNamespace

import pytest
import torch

from lab import live, policy
from lab.live import LiveTraining


def test_a_second_live_run_is_refused_while_one_trains_and_the_slot_frees_when_it_ends():
    slot, threads = live.LiveTraining(), torch.get_num_threads()
    running = slot.run("copy", "tiny", 50, 60, poll=0.1)
    next(running)  # the child process is started and holds the slot
    assert slot.busy
    with pytest.raises(policy.InputError) as refused:
        next(slot.run("reverse", "tiny", 50, 60))
    assert str(refused.value) == live.BUSY
    *_, last = running
    assert not slot.busy and last.model is not None and last.codec is not None
    assert 0 <= live.held_out_score(last.model, last.codec, "copy", 5) <= 1
    assert [step for step, _ in last.losses] == list(range(1, 51)) and [c[0] for c in last.checks] == [50]
    assert torch.get_num_threads() == threads  # trained in its own process, with its own thread count
    with pytest.raises(policy.InputError, match="pig latin takes far longer"):
        next(slot.run("pig_latin", "tiny", 50, 60))
    assert not slot.busy


class _Messages(list):
    """A stand-in for the child's queue when `_train` runs in this process."""

    def put(self, message):
        self.append(message)


@pytest.mark.parametrize("score, steps, stops_at, checks", [(0.99, 1000, 50, [50]), (0.98, 100, 100, [50, 100])])
def test_live_training_stops_at_the_first_check_that_reaches_99_percent(monkeypatch, score, steps, stops_at, checks):
    monkeypatch.setattr(live, "exact_match", lambda *args: score)  # the held-out score each check sees
    messages, threads = _Messages(), torch.get_num_threads()
    try:
        live._train("copy", "tiny", steps, time.time() + 60, messages)
    finally:
        torch.set_num_threads(threads)  # _train sets the child's thread count
    kinds = [m[0] for m in messages]
    assert kinds[-1] == "done" and "error" not in kinds
    assert max(m[1] for m in messages if m[0] == "loss") == stops_at
    assert [m[1] for m in messages if m[0] == "check"] == checks


def test_a_live_runs_time_budget_counts_its_start_up(monkeypatch):
    """A 10 s run held the slot 38-50 s: its budget began only once the child had started and built its model."""
    from transformer_core.training import translation

    build = translation.build_model

    def slow_start(*args):  # a busy machine's process start-up and imports, compressed into 2 s
        time.sleep(2.0)
        return build(*args)

    monkeypatch.setattr(translation, "build_model", slow_start)
    messages, threads, t0 = _Messages(), torch.get_num_threads(), time.time()
    try:
        live._train("sort", "tiny", 3000, t0 + 2.0, messages)  # the budget is used up by the start-up
    finally:
        torch.set_num_threads(threads)
    assert messages[-1][0] == "done"
    assert max(m[1] for m in messages if m[0] == "loss") == 1  # one step, then the model goes back


def test_a_busy_slot_says_how_long_until_it_is_free():
    slot = LiveTraining()
    assert slot.seconds_left() == 0
    running = slot.run("copy", "tiny", 100_000, 30, poll=0.1)
    next(running)
    try:
        assert 25 < slot.seconds_left() <= 30 + live.SEND_BACK_S
    finally:
        running.close()
    deadline = time.time() + 10
    while slot.busy and time.time() < deadline:
        time.sleep(0.1)
    assert slot.seconds_left() == 0


def test_a_live_run_that_cannot_start_frees_the_slot_and_says_why(monkeypatch):
    spawn = multiprocessing.get_context("spawn")

    class Unstartable(spawn.Process):
        def start(self):
            raise OSError("cannot start a process: resource temporarily unavailable")

    monkeypatch.setattr(live, "mp", SimpleNamespace(get_context=lambda method=None: SimpleNamespace(
        Queue=spawn.Queue, Process=Unstartable)))
    slot = live.LiveTraining()
    with pytest.raises(OSError, match="resource temporarily unavailable"):
        next(slot.run("copy", "tiny", 50, 60))
    assert not slot.busy  # or every later Train press would hear "busy" until the app restarts


def test_a_visitor_who_leaves_mid_run_never_blocks_the_caller_and_frees_the_slot():
    """Gradio closes a left visitor's stream on its event loop: closing must return at once."""
    slot = LiveTraining()
    running = slot.run("copy", "tiny", 100_000, 120, poll=0.1)
    next(running)  # the child trains and holds the slot
    children = {p.pid for p in multiprocessing.active_children()}
    assert children
    t0 = time.perf_counter()
    running.close()  # the visitor closed the tab
    closed_in = time.perf_counter() - t0
    assert closed_in < 0.5, f"closing took {closed_in:.2f} s: every other request waited that long"
    deadline = time.monotonic() + 5
    while slot.busy and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not slot.busy  # the slot frees once the child is gone
    assert not children & {p.pid for p in multiprocessing.active_children()}  # killed and reaped, not left running


def test_a_live_run_yields_the_cpu_to_the_requests_of_everyone_else():
    """On 2 cores a run at the server's priority made a 30 ms tokenize take 0.4-0.8 s (benchmarks/door.py)."""
    import os

    before = {p.pid for p in multiprocessing.active_children()}
    slot = LiveTraining()
    running = slot.run("copy", "tiny", 100_000, 30, poll=0.1)
    next(running)
    try:
        child = next(p for p in multiprocessing.active_children() if p.pid not in before)
        assert os.getpriority(os.PRIO_PROCESS, child.pid) >= live.NICE > os.getpriority(os.PRIO_PROCESS, 0)
    finally:
        running.close()
