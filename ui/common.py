"""Small things every tab needs the same way: the input limit and the notice when text is cut.
(Figures export their own numbers: see the JSON button `app.py` adds to every plot's toolbar.)"""

from __future__ import annotations

MAX_CHARS = 5000  # longest text any tab takes; longer input is cut, with a visible notice
REPLACEMENT = "\ufffd"


def _without_lone_surrogates(text: str) -> tuple[str, int]:
    """(text with every lone surrogate replaced by U+FFFD, how many there were).

    A browser can send half of a UTF-16 pair JSON-escaped ("\\ud800"); Python keeps it in a
    str, but no UTF-8 text can hold it, so the first encode (a tokenizer, a link) would fail.
    A surrogate pair that makes one character is joined back into that character."""
    if not any("\ud800" <= c <= "\udfff" for c in text):
        return text, 0
    clean = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return clean, clean.count(REPLACEMENT) - text.count(REPLACEMENT)


def truncate(text: str | None, limit: int = MAX_CHARS) -> tuple[str, str]:
    """(text made safe and cut to `limit` characters, a notice for the user or "" when nothing changed)."""
    text, lone = _without_lone_surrogates(text or "")
    notices = [f"Your text held {lone} lone surrogate code point{'s' if lone > 1 else ''} (half of a UTF-16 "
               f"pair, not a character on its own), shown as {REPLACEMENT}."] if lone else []
    if len(text) > limit:
        notices.append(f"Your text has {len(text):,} characters; only the first {limit:,} are used.")
        text = text[:limit]
    return text, " ".join(notices)
