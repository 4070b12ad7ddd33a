"""The hall's answers drawn: one bar per answer, the model's answer green, the reader's own answer marked."""

from __future__ import annotations

import html

import numpy as np
import qrcode
import qrcode.image.svg

from i18n import render, t
from lab.questions import OTHER_VALUES, Result
from views.kit import Figure, plain, top_title

HALL, REAL = "#8da0cb", "#1a9850"
QR_PX = 360  # the code's side on the page: a phone at the back of a hall reads it off a projector at this size


def hall_link(url: str, code: str, lang: str = "en") -> str:
    """The question's link in large type and as a QR code a phone can scan from the back of the hall (HTML)."""
    qr = qrcode.make(url, image_factory=qrcode.image.svg.SvgPathImage, border=2,
                     error_correction=qrcode.constants.ERROR_CORRECT_M)
    svg = qr.to_string(encoding="unicode")
    # drawn at QR_PX whatever the code's module count: the SVG's own size is in millimetres
    svg = svg.replace("<svg ", f'<svg role="img" aria-label="{html.escape(url)}" width="{QR_PX}" height="{QR_PX}" ', 1)
    said = t("questions.link_big", lang, code=html.escape(code))
    return (f'<div class="hall-link"><div class="hall-qr">{svg}</div><div class="hall-text"><p>{said}</p>'
            f'<p class="hall-url"><a href="{html.escape(url)}" target="_blank">{html.escape(url)}</a></p></div></div>')


def histogram(result: Result, own: str | None = None, lang: str = "en") -> Figure:
    """A bar per answer (label -> how many gave it); the real answer's bar green, `own` (a student's) marked."""
    labels = list(result.histogram)
    names = np.array([plain(shown(label, result.choices, lang)) for label in labels], dtype=object)
    counts = np.array([result.histogram[label] for label in labels], dtype=np.int32)
    colours = [REAL if label == result.real else HALL for label in labels]
    bar = dict(type="bar", x=names, y=counts, marker=dict(color=colours), hovertemplate="%{x}: %{y}<extra></extra>")
    notes = []
    if own is not None and own in labels:
        notes.append(dict(x=labels.index(own), y=int(result.histogram[own]),  # x: the category's place on the axis
                          text=t("questions.your_answer_marked", lang), showarrow=True, arrowhead=2, ay=-30))
    title = t("questions.revealed", lang, n=result.n, real=plain(shown(result.real, result.choices, lang)))
    layout = dict(title=top_title(title.replace("**", "")), annotations=notes, height=320,
                  margin=dict(l=40, r=20, t=60, b=60), xaxis=dict(type="category"), yaxis=dict(rangemode="tozero"))
    return Figure([bar], layout)


def shown(label: str, choices: list, lang: str) -> str:
    """An answer label "i: choice" with the choice in the reader's language (a Message choice is translated), or
    the number questions' bin of other values named in it."""
    if label == OTHER_VALUES:
        return t("questions.other_values", lang)
    index, sep, _ = label.partition(": ")
    if sep and index.isdigit() and int(index) < len(choices):
        return f"{index}: {render(choices[int(index)], lang)}"
    return label
