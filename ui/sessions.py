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

import os
from copy import copy

from gradio.state_holder import SessionState

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
