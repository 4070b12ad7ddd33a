"""User text inside Markdown, shown exactly as typed.

Gradio renders a Markdown output as HTML on our own page, so a person's words put into it raw
could draw a link ("[Sign in](https://...)"), an image or a form there: a crafted link would
then show it to a whole class. Every ASCII punctuation character is escaped with a backslash,
which CommonMark (and Gradio's renderer) read as that character, never as markup; a bare URL
loses its autolink because its ":" and "/" are escaped too.
"""

from __future__ import annotations

import re

_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation character


def literal(text: str) -> str:
    """`text` as Markdown that renders as the text itself: no link, image, HTML tag or emphasis."""
    return _PUNCTUATION.sub(r"\\\1", text)
