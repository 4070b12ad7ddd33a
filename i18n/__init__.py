"""Two languages, English and 简体中文: one message catalogue per language, and the one place that knows them.

Every text a person reads has a message id named for its meaning ("attention.head_title"), not for its
English words, and named placeholders (`{layer}`), so a whole sentence is translated at once and
Chinese word order is free. The catalogues are `en.json` and `zh-CN.json` beside this file: flat
{id: text} dicts in `str.format` syntax (a literal brace is doubled, so Plotly's `%{y}` is written
`%{{y}}`). tests/test_i18n.py checks that both hold the same ids and the same placeholders.

This package imports neither gradio nor torch: lab/ builds `Message`s (notices, errors) that stay
English for API callers and are shown in the reader's language by the UI, and views/ draw figures
in the language they are given. (Gradio's own `gr.I18n` for component text is built in ui/i18n.py.)
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

LANGUAGES = ("en", "zh-CN")
DEFAULT = "en"
NAMES = {"en": "English", "zh-CN": "简体中文"}  # each language in its own words, for the switch
_FOLDER = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def catalogue(lang: str) -> dict[str, str]:
    """The {message id: text} dict of one language."""
    return json.loads((_FOLDER / f"{lang}.json").read_text(encoding="utf-8"))


def normalise(lang: str | None) -> str:
    """The app's language for a browser or link language tag.

    Any Chinese (zh, zh-CN, zh-Hans, zh_SG, and zh-TW / zh-Hant too: a Traditional-Chinese reader reads
    Simplified far more easily than English) -> "zh-CN"; anything else, or nothing -> "en".
    """
    tag = (lang or "").strip().replace("_", "-").lower()
    return "zh-CN" if tag == "zh" or tag.startswith("zh-") else DEFAULT


def t(key: str, lang: str | None = DEFAULT, **params) -> str:
    """Message `key` in `lang` (any tag `normalise` reads), its `{placeholders}` filled from `params`.

    Parameters that are Messages are put in the same language. An id missing from the Chinese catalogue
    falls back to English (the catalogue test forbids it); an id missing from English is a KeyError: a typo
    must fail, not show the id.
    """
    lang = normalise(lang)
    text = catalogue(lang).get(key)
    if text is None:
        text = catalogue(DEFAULT)[key]
    return text.format(**{name: render(value, lang) for name, value in params.items()})


class Message(str):
    """A message that is English wherever it is used as a string (API answers, logs, tests) and
    remembers its id and parameters, so the UI can show it in the reader's language (`render`).

    Parameters that are Messages themselves are rendered in the same language.
    """

    key: str
    params: dict

    def __new__(cls, key: str, **params):
        self = super().__new__(cls, t(key, DEFAULT, **params))
        self.key, self.params = key, params
        return self

    def render(self, lang: str | None) -> str:
        return t(self.key, lang, **self.params)

    def __getnewargs_ex__(self):  # copies and pickles (a cached run is deep-copied) are built the same way
        return (self.key,), self.params


class Joined(str):
    """Messages joined into one line (English as a string), each rendered in the reader's language."""

    parts: tuple

    def __new__(cls, parts, sep: str = " "):
        parts = tuple(p for p in parts if p)
        self = super().__new__(cls, sep.join(parts))
        self.parts, self.sep = parts, sep
        return self

    def render(self, lang: str | None) -> str:
        return render(self.sep, lang).join(render(p, lang) for p in self.parts)  # a separator may be a Message

    def __getnewargs_ex__(self):
        return (self.parts, self.sep), {}


def render(value, lang: str | None):
    """`value` in language `lang` when it is a Message (or Joined messages); anything else as it is
    (numbers, token texts, model names, and text no catalogue holds)."""
    return value.render(lang) if isinstance(value, (Message, Joined)) else value


def plural(n: int, noun: str, lang: str | None = DEFAULT) -> str:
    """ "1 token", "2 tokens" / "2 个词元": counts go through the catalogue (`count.<noun>.one/.other`)."""
    return t(f"count.{noun}.{'one' if n == 1 else 'other'}", lang, n=n)
