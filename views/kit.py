"""The plot kit every view shares: matrices drawn as heatmaps read like a matrix, panels of a grid,
token labels made safe and unique, and a figure that says why it is empty.

Figures are written directly in plotly.js's JSON form (`views/figure.py`), with no plotly.py on the
way. Weights are drawn on a square-root scale (0.1 already shows as a clear light blue), so the low
weights that spread attention stay visible on a projector.

Weights travel rounded to the 3 decimals the hover shows. The rounded numbers repeat, so the app's
gzip'd stream packs them small: a 128-token head's 16k weights from 87 kB of float32 base64 to 11 kB,
or to 7.7 kB as JSON numbers ("0.123"). Writing those numbers costs 1.9 ms against 0.05 ms for a
typed array, so only a matrix of more than TEXT_CELLS weights goes as numbers, where the bytes
matter; smaller ones as float32 typed arrays.
"""

from __future__ import annotations

import html
import re
import unicodedata

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.colors import sequential

from i18n import render, t
from views.figure import Figure

GAMMA = 2.0  # colour position = weight ** (1 / GAMMA): low weights get a visible share of the scale
# white (0) to dark blue (1), spelled out: plotly.js reads the name "Blues" the other way round
COLORSCALE = [[(i / (len(sequential.Blues) - 1)) ** GAMMA, c] for i, c in enumerate(sequential.Blues)]
DECIMALS = 3  # what the hover shows, and what a heatmap of weights carries
TEXT_CELLS = 8192  # a matrix with more weights than this (a 91-token head) is written as JSON numbers
MAX_TICKS = 40  # more token labels than this on an axis collide: every k-th is shown
# the key axis sits on top, under the title; on the right, room for the colour bar (86 px drawn)
TOP_AXIS_MARGIN = dict(l=10, r=90, t=140, b=10)
# Tick labels' widths as plotly draws them (12 px type), a little generous: a margin that already holds the
# labels leaves plotly's automargin nothing to push, and a push draws the figure a second time
NARROW_PX, WIDE_PX = 6.5, 13.0  # a Latin letter or digit (on average); a Han character or other full-width one


# Below the figure's top edge by this much: plotly places a title's top by a Latin letter's height (dy 0.7em),
# and Han characters stand taller, so a PNG or SVG of a Chinese title lost its top
TITLE_PAD_PX = 6


def top_title(text: str) -> dict:
    return dict(text=text, x=0.5, xanchor="center", y=1, yref="container", yanchor="top", pad=dict(t=TITLE_PAD_PX))


def unchecked_figure(data: list[dict], layout: dict) -> Figure:
    """A figure from traces and layout already in plotly's JSON form (titles as {"text": ...})."""
    return Figure(data, layout)


def matrix_figure(z, x, y, x_text, y_text, x_title: str, y_title: str, title: str, hover: str,
                   height: int | None = None, shapes: tuple = ()) -> Figure:
    """One heatmap of weights read like a matrix: row 0 at the top, the key axis along the top edge."""
    x_ticks, y_ticks = _ticks(x, x_text), _ticks(y, y_text)
    layout = dict(
        title=top_title(title), margin=_margin(x_ticks["ticktext"], y_ticks["ticktext"]), shapes=list(shapes),
        xaxis=dict(title=dict(text=x_title), side="top", tickmode="array", **x_ticks),
        yaxis=dict(title=dict(text=y_title), autorange="reversed", tickmode="array", **y_ticks),
    )
    if height is not None:  # sized for TOP_AXIS_MARGIN: labels that widen the top margin take room above the rows
        # as well, not from them (upright labels of a long token squeezed every row's label into the next)
        layout["height"] = height + layout["margin"]["t"] - TOP_AXIS_MARGIN["t"]
    heatmap = dict(type="heatmap", z=rounded(z), x=x, y=y, colorscale=COLORSCALE, zmin=0, zmax=1,
                   hovertemplate=hover, hoverongaps=False)
    return unchecked_figure([heatmap], layout)


def _ticks(values, text) -> dict:
    """Tick positions and labels, thinned to at most MAX_TICKS so long texts keep readable axes."""
    step = -(-len(values) // MAX_TICKS)
    return dict(tickvals=values[::step], ticktext=text[::step])


def label_px(text: str) -> float:
    """About how wide plotly draws a tick label, in pixels (an HTML escape counts as one character)."""
    shown = html.unescape(str(text))
    return sum(WIDE_PX if unicodedata.east_asian_width(ch) in "WF" else NARROW_PX for ch in shown)


# where a title may break: after a space or a Chinese comma or colon, before a Chinese bracket
BREAKS = re.compile(r"(?<=[ ：，])|(?=（)")


def wrapped(text: str, px: float) -> str:
    """`text` broken with <br> into lines about `px` wide (as `label_px` measures them) where it may break; a word
    wider than `px` keeps a line of its own."""
    lines, line = [], ""
    for piece in filter(None, BREAKS.split(text)):
        if line and label_px((line + piece).rstrip()) > px:
            lines.append(line.rstrip())
            line = ""
        line += piece
    return "<br>".join([*lines, line.rstrip()])


def _margin(x_text, y_text) -> dict:
    """TOP_AXIS_MARGIN, widened to hold the query labels on the left and the key labels (turned upright when
    they crowd) on top, with the axis titles beside them."""
    widest = lambda texts: max((label_px(t) for t in texts), default=0.0)  # noqa: E731
    return dict(TOP_AXIS_MARGIN, l=max(TOP_AXIS_MARGIN["l"], round(36 + widest(y_text))),
                t=max(TOP_AXIS_MARGIN["t"], round(90 + widest(x_text))))


def array32(x) -> np.ndarray:
    """A tensor or array as float32 numpy, values as they are (scores and losses; weights go through `rounded`)."""
    return x.detach().cpu().numpy().astype(np.float32) if isinstance(x, torch.Tensor) else np.asarray(x, dtype=np.float32)


def rounded(attn) -> np.ndarray:
    """Weights rounded to DECIMALS (NaN: a cell not drawn): float64, written as JSON numbers, when there are
    more than TEXT_CELLS of them; else float32, written as a typed array (see the module's note)."""
    array = attn.numpy() if isinstance(attn, torch.Tensor) else np.asarray(attn)
    return np.round(array.astype(np.float64 if array.size > TEXT_CELLS else np.float32), DECIMALS)


def axis_text(labels: list[str], lang: str = "en") -> np.ndarray:
    """Token labels as tick text in `lang` (a split character's label is a message: "这 (3 字节)")."""
    return np.array([plain(render(t, lang)) for t in labels], dtype=object)


def position_labels(labels: list[str], lang: str = "en") -> np.ndarray:
    """Unique axis categories "i:token", so repeated tokens keep their own column.

    A numpy array: the figure writes it as a list in one go.
    """
    return np.array([f"{i}:{plain(render(t, lang))}" for i, t in enumerate(labels)], dtype=object)


def head_heatmap(attn, q_labels: list[str], k_labels: list[str], title: str = "", lang: str = "en") -> Figure:
    """One head's weights (Tq, Tk): rows are queries, columns the keys they read; axis names and hover in `lang`."""
    x, y = position_labels(k_labels, lang), position_labels(q_labels, lang)
    return matrix_figure(attn, x, y, axis_text(k_labels, lang), axis_text(q_labels, lang), t("figure.key", lang),
                         t("figure.query", lang), title, t("figure.head_hover", lang))


def grid_axes(n_row: int, n_col: int, i: int, j: int, gap: float = 0.012) -> tuple[str, dict, dict]:
    """Axis suffix and x/y axis settings of panel (i, j) in a grid placed by hand.

    Cheaper than `make_subplots` by ~0.2 s at 48 panels; rows read top to bottom and
    each panel's y axis is reversed so query 0 is the top row, as in a matrix.
    """
    n = i * n_col + j + 1
    suffix = "" if n == 1 else str(n)
    xaxis = dict(domain=[j / n_col + gap, (j + 1) / n_col - gap], anchor=f"y{suffix}", showticklabels=False, ticks="")
    yaxis = dict(domain=[1 - (i + 1) / n_row + gap, 1 - i / n_row - gap], anchor=f"x{suffix}",
                 showticklabels=False, ticks="", autorange="reversed")
    return suffix, xaxis, yaxis



def placeholder(message: str, height: int = 200) -> go.Figure:
    """An empty figure that says why there is nothing to draw, or what to do to fill it."""
    fig = go.Figure()
    fig.add_annotation(text=html.escape(message, quote=False), x=0.5, y=0.5, xref="paper", yref="paper",
                       showarrow=False)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=10, b=10), plot_bgcolor="rgba(0,0,0,0)")
    return fig


def plain(text: str) -> str:
    """Text shown as typed: plotly reads labels as HTML, so a token "<s>" would strike out the rest."""
    return html.escape(text, quote=False)
