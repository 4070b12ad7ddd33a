"""Small things every tab needs the same way: the input limit and the notice when text is cut.
(Figures export their own numbers: see the JSON button `app.py` adds to every plot's toolbar.)"""

from __future__ import annotations

MAX_CHARS = 5000  # longest text any tab takes; longer input is cut, with a visible notice


def truncate(text: str | None, limit: int = MAX_CHARS) -> tuple[str, str]:
    """(text cut to `limit` characters, a notice for the user or "" when nothing was cut)."""
    text = text or ""
    if len(text) <= limit:
        return text, ""
    return text[:limit], f"Your text has {len(text):,} characters; only the first {limit:,} are used."
