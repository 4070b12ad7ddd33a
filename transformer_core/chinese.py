"""Chinese text as our Chinese models read it: traditional characters converted to simplified ones.

The Tang poems were converted with OpenCC before training, so the app converts what a person types
the same way; both the data module and the app use this one function (serving imports no training code).
"""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def _converter():
    try:
        import opencc  # only the Chinese data and the Chinese models' input need it
    except ImportError as error:
        raise RuntimeError("Converting traditional to simplified characters needs OpenCC: pip install opencc") from error
    return opencc.OpenCC("t2s")


def to_simplified(text: str) -> str:
    """The text in simplified characters (OpenCC's t2s table); simplified text comes back unchanged.

    One character maps to one character, so the length and every offset stay the same
    (a few rare characters OpenCC maps to two are left as they were)."""
    converted = _converter().convert(text)
    if len(converted) == len(text):
        return converted
    return "".join(c if len(s) != 1 else s for c, s in ((c, _converter().convert(c)) for c in text))
