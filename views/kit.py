"""The plot kit every view shares: matrices drawn as heatmaps read like a matrix, panels of a grid,
token labels made safe and unique, and a figure that says why it is empty.

Figures are written directly in plotly's JSON form and not re-validated, which would cost about
four times as much as building them. Weights are drawn on a square-root scale (0.1 already shows
as a clear light blue), so the low weights that spread attention stay visible on a projector.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.colors import sequential

from i18n import t

GAMMA = 2.0  # colour position = weight ** (1 / GAMMA): low weights get a visible share of the scale
# white (0) to dark blue (1), spelled out: plotly.js reads the name "Blues" the other way round
COLORSCALE = [[(i / (len(sequential.Blues) - 1)) ** GAMMA, c] for i, c in enumerate(sequential.Blues)]
MAX_TICKS = 40  # more token labels than this on an axis collide: every k-th is shown
TOP_AXIS_MARGIN = dict(l=10, r=10, t=140, b=10)  # the key axis sits on top, under the title


def top_title(text: str) -> dict:
    return dict(text=text, x=0.5, xanchor="center", y=0.995, yref="container", yanchor="top")


def unchecked_figure(data: list[dict], layout: dict) -> go.Figure:
    """A figure from traces and layout already in plotly's canonical form (titles as
    {"text": ...}), skipping plotly's property-by-property validation."""
    return go.Figure(data=data, layout=layout, _validate=False)


def matrix_figure(z, x, y, x_text, y_text, x_title: str, y_title: str, title: str, hover: str,
                   height: int | None = None, shapes: tuple = ()) -> go.Figure:
    """One heatmap read like a matrix: row 0 at the top, the key axis along the top edge."""
    layout = dict(
        title=top_title(title), margin=TOP_AXIS_MARGIN, shapes=list(shapes),
        xaxis=dict(title=dict(text=x_title), side="top", tickmode="array", **_ticks(x, x_text)),
        yaxis=dict(title=dict(text=y_title), autorange="reversed", tickmode="array", **_ticks(y, y_text)),
    )
    if height is not None:
        layout["height"] = height
    heatmap = dict(type="heatmap", z=z, x=x, y=y, colorscale=COLORSCALE, zmin=0, zmax=1, hovertemplate=hover)
    return unchecked_figure([heatmap], layout)


def _ticks(values, text) -> dict:
    """Tick positions and labels, thinned to at most MAX_TICKS so long texts keep readable axes."""
    step = -(-len(values) // MAX_TICKS)
    return dict(tickvals=values[::step], ticktext=text[::step])


def array32(x) -> np.ndarray:
    return x.numpy().astype(np.float32) if isinstance(x, torch.Tensor) else np.asarray(x, dtype=np.float32)


def axis_text(labels: list[str]) -> np.ndarray:
    return np.array([plain(t) for t in labels], dtype=object)


def position_labels(labels: list[str]) -> np.ndarray:
    """Unique axis categories "i:token", so repeated tokens keep their own column.

    A numpy array, not a list: plotly validates lists item by item (~10x slower).
    """
    return np.array([f"{i}:{plain(t)}" for i, t in enumerate(labels)], dtype=object)


def head_heatmap(attn, q_labels: list[str], k_labels: list[str], title: str = "", lang: str = "en") -> go.Figure:
    """One head's weights (Tq, Tk): rows are queries, columns the keys they read; axis names and hover in `lang`."""
    x, y = position_labels(k_labels), position_labels(q_labels)
    return matrix_figure(array32(attn), x, y, axis_text(k_labels), axis_text(q_labels), t("figure.key", lang),
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
