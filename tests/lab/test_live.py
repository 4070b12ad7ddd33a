"""lab.live: the app's one training slot never holds up the server that answers everyone else."""

import multiprocessing as mp
import time

from lab.live import LiveTraining


def test_a_visitor_who_leaves_mid_run_never_blocks_the_caller_and_frees_the_slot():
    """Gradio closes a left visitor's stream on its event loop: closing must return at once."""
    slot = LiveTraining()
    running = slot.run("copy", "tiny", 100_000, 120, poll=0.1)
    next(running)  # the child trains and holds the slot
    children = {p.pid for p in mp.active_children()}
    assert children
    t0 = time.perf_counter()
    running.close()  # the visitor closed the tab
    closed_in = time.perf_counter() - t0
    assert closed_in < 0.5, f"closing took {closed_in:.2f} s: every other request waited that long"
    deadline = time.monotonic() + 5
    while slot.busy and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not slot.busy  # the slot frees once the child is gone
    assert not children & {p.pid for p in mp.active_children()}  # killed and reaped, not left running
