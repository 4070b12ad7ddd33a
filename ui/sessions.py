"""A new visitor's session made in microseconds, not milliseconds.

When a session starts, Gradio (6.31) renders every block's config for it (SessionState.__init__)
so that gr.DeepLinkButton can later save the page as that visitor left it. This app shows no
deep-link button: its links carry their state in the URL. With ~345 blocks that eager copy is
15 ms of the server's one Python thread per new visitor, so when a lecture hall of 100 students
opens one link, 1.5 s of the wait is sessions being set up (py-spy: 71% of the app's CPU in
benchmarks/load.py --same-link). Here a session renders a block's config the first time Gradio
asks for it (a request's own inputs and outputs: a few blocks), and all of them when something
lists them, so what Gradio sees is the same, only later.

A block's config is also rendered once for the whole app, not once per session: rendering calls
`inspect.signature` on each component's constructor, and every student's first request renders its
inputs and outputs (13 blocks, 1.2 ms, for Attention) on the one thread that every request shares.
A session gets its own copy of the config and of its props, the one dict Gradio writes into (the
session's `value`); a deep copy would cost more than rendering anew (labels are I18nData objects).
A block a session replaced (a `gr.update` for it alone) is rendered from the session's own copy.

The patch replaces a private constructor; tests/ui/test_sessions.py checks that a session made
either way holds the same attributes and configs, so a Gradio upgrade that changes it fails there.
"""

from __future__ import annotations

import datetime
import os
import threading
import time
from copy import copy

from gradio.state_holder import SessionState

from ui import admission

# block id -> (the app's block, its config): filled as sessions ask; the block is held to tell it from a
# session's replacement, or from another app's block with the same id (tests build several apps)
_RENDERED: dict[int, tuple[object, dict]] = {}


class _LazyConfigs(dict):
    """SessionState.config_values, filled on demand: block id -> that block's config."""

    def __init__(self, state: SessionState, app_blocks: dict):
        super().__init__()
        self._state = state
        self._app_blocks = app_blocks  # the app's blocks, id -> block (a session's config may hold more)

    def _config(self, key: int) -> dict:
        block = self._state.blocks_config.blocks[key]
        if block is not self._app_blocks[key]:  # the session's own copy of it
            return self._state.blocks_config.config_for_block(key, [], block)
        app_block, config = _RENDERED.get(key, (None, None))
        if app_block is not block:
            config = self._state.blocks_config.config_for_block(key, [], block)
            _RENDERED[key] = (block, config)
        return {**config, "props": dict(config["props"])} if "props" in config else dict(config)

    def __missing__(self, key: int) -> dict:
        if key not in self._app_blocks or key not in self._state.blocks_config.blocks:
            raise KeyError(key)
        self[key] = config = self._config(key)
        return config

    def __contains__(self, key) -> bool:
        return dict.__contains__(self, key) or (key in self._app_blocks and key in self._state.blocks_config.blocks)

    def _fill(self) -> None:
        for key in self._state.blocks_config.blocks:
            if key in self._app_blocks and not dict.__contains__(self, key):
                self[key] = self._config(key)

    def __iter__(self):
        self._fill()
        return super().__iter__()

    def __len__(self) -> int:
        self._fill()
        return super().__len__()

    def keys(self):
        self._fill()
        return super().keys()

    def values(self):
        self._fill()
        return super().values()

    def items(self):
        self._fill()
        return super().items()


def _lazy_init(self: SessionState, blocks) -> None:
    # Gradio's own constructor, with config_values made lazy (see the module's docstring).
    self.blocks_config = copy(blocks.default_config)
    self.config_values = _LazyConfigs(self, blocks.blocks)
    self.state_data = {}
    self._state_ttl = {}
    self.is_closed = False
    self.STATE_TTL_WHEN_CLOSED = 1 if os.getenv("GRADIO_IS_E2E_TEST", None) else 3600


EAGER_INIT = SessionState.__init__


def make_sessions_lazy() -> None:
    """Make every later Gradio session render its blocks' configs on demand (idempotent)."""
    SessionState.__init__ = _lazy_init


# ---------------------------------------------------------------- how long a session's state is kept

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


class PageTracker:
    """ASGI middleware: which sessions have a page open (their heartbeat stream), and which ever had one."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if HEARTBEAT not in path:
            return await self.app(scope, receive, send)
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


def expired(holder, queue, now: datetime.datetime | None = None) -> list[str]:
    """The sessions of a Gradio StateHolder whose state has outlived its time (none has a job in `queue`)."""
    now = now or datetime.datetime.now()
    busy = {e.session_hash for e in admission.jobs(queue)} if queue is not None else set()
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
