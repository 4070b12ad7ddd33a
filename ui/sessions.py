"""How long a visitor's session is kept: while its page is open, briefly after, and for at most CAPACITY sessions.

(Sessions are also made lazily, rendering no block configs until Gradio asks: ui/gradio_patches.py.)
"""

from __future__ import annotations

import datetime
import math
import threading
import time

from ui.gradio_patches import jobs

# Gradio keeps every session's state (its gr.State values, its own copies of updated components: about 1 MB
# for a generation) until 10,000 sessions push it out, and an API client that never opens a page never
# closes its session. Here state is kept for a session while its page is open, CLOSED_S after the page
# closed (a reload on a classroom's Wi-Fi finds it), and NO_PAGE_S after the last request of a session that
# never connected a page; CAPACITY sessions at most whatever happens. Their unread answers go with them.
CAPACITY = 1000  # sessions held at once: ~1 GB of state at the 1 MB a generation session holds
CLOSED_S = 600.0
NO_PAGE_S = 120.0
SWEEP_S = 15.0  # how often sessions past their time are forgotten

HEARTBEAT = "/gradio_api/heartbeat/"  # the stream a page holds open while it is shown
_open_pages: dict[str, int] = {}  # session hash -> its pages open now
_paged: set[str] = set()  # sessions that ever connected a page
# requests in progress but a page's heartbeat, and time.monotonic() when the last one ended (None: none came yet)
_requests = {"running": 0, "ended": None}


class PageTracker:
    """ASGI middleware: which sessions have a page open (their heartbeat stream), which ever had one, and whether
    other requests are in progress."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if HEARTBEAT not in path:
            if not path:
                return await self.app(scope, receive, send)
            _requests["running"] += 1  # the event loop's thread alone counts: no lock
            try:
                return await self.app(scope, receive, send)
            finally:
                _requests["running"] -= 1
                _requests["ended"] = time.monotonic()
        session = path.rsplit("/", 1)[-1]
        _open_pages[session] = _open_pages.get(session, 0) + 1
        _paged.add(session)
        try:
            await self.app(scope, receive, send)
        finally:
            if (left := _open_pages[session] - 1) > 0:
                _open_pages[session] = left
            else:
                del _open_pages[session]


def quiet_for() -> float:
    """Seconds the server has had no request in progress (a page's heartbeat stream aside; an answer streamed
    counts until its end); infinite before the first one: work that waits for a quiet server (lab/store.warm)
    goes on while the app starts, and gives way to visitors."""
    if _requests["running"]:
        return 0.0
    return math.inf if _requests["ended"] is None else time.monotonic() - _requests["ended"]


def expired(holder, queue, now: datetime.datetime | None = None) -> list[str]:
    """The sessions of a Gradio StateHolder whose state has outlived its time (none has a job in `queue`)."""
    now = now or datetime.datetime.now()
    busy = {e.session_hash for e in jobs(queue)} if queue is not None else set()
    gone = []
    for session, used in list(holder.time_last_used.items()):
        if session in _open_pages or session in busy:
            continue
        if (now - used).total_seconds() > (CLOSED_S if session in _paged else NO_PAGE_S):
            gone.append(session)
    return gone


def forget(holder, queue, sessions: list[str]) -> None:
    """Drop the state and the unread answers of `sessions`."""
    with holder.lock:
        for session in sessions:
            holder.session_data.pop(session, None)
            holder.time_last_used.pop(session, None)
            _paged.discard(session)
    if queue is not None:
        for session in sessions:
            queue.pending_messages_per_session.pop(session, None)


def sweep_forever(demo) -> threading.Thread:
    """Forget expired sessions of `demo` every SWEEP_S seconds, on a daemon thread."""
    def loop():
        while True:
            time.sleep(SWEEP_S)
            holder = getattr(demo, "state_holder", None)
            if holder is not None:
                forget(holder, demo._queue, expired(holder, demo._queue))

    thread = threading.Thread(target=loop, name="session-sweeper", daemon=True)
    thread.start()
    return thread
