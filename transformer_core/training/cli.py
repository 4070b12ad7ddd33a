"""What the `python -m transformer_core.training.train_*` commands share: bad input ends in one line, not a traceback."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def exit_on(*errors: type[Exception]):
    """Inside a command: any of these typed errors exits with `error: <its message>`.

    The core's messages name the bad setting or the missing file, so the person running the
    command needs that line, not the stack that led to it.
    """
    try:
        yield
    except errors as error:
        raise SystemExit(f"error: {error}") from error
