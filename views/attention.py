"""Attention heatmaps drawn from a trace's weights: one head, every head, and summaries.

Lesson: row i of a head's matrix is how much query token i takes from each key
token (the row sums to 1). The views here are different cuts of the same
(n_layer, n_head, Tq, Tk) array: one head large, the layers x heads grid, the
head average per layer, one query's row in every head, attention rollout, and
the rows a language model used while it generated, step by step.

Speed: a 6 x 8 grid over 128 tokens is 786k numbers, so the grid is one figure
with hand-placed axes (plotly's `make_subplots` alone costs ~0.2 s at that size),
numpy arrays throughout (plotly ships float32 arrays as compact binary), and the
figures are written directly in plotly's JSON form and not re-validated, which
would cost about four times as much as building them.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.colors import sequential

# white (0) to dark blue (1), spelled out: plotly.js reads the name "Blues" the other way round
COLORSCALE = [[i / (len(sequential.Blues) - 1), c] for i, c in enumerate(sequential.Blues)]
TOP_AXIS_MARGIN = dict(l=10, r=10, t=140, b=10)  # the key axis sits on top, under the title


def _top_title(text: str) -> dict:
    return dict(text=text, x=0.5, xanchor="center", y=0.995, yref="container", yanchor="top")


def unchecked_figure(data: list[dict], layout: dict) -> go.Figure:
    """A figure from traces and layout already in plotly's canonical form (titles as
    {"text": ...}), skipping plotly's property-by-property validation."""
    return go.Figure(data=data, layout=layout, _validate=False)


def _matrix_figure(z, x, y, x_text, y_text, x_title: str, y_title: str, title: str, hover: str,
                   height: int | None = None, shapes: tuple = ()) -> go.Figure:
    """One heatmap read like a matrix: row 0 at the top, the key axis along the top edge."""
    layout = dict(
        title=_top_title(title), margin=TOP_AXIS_MARGIN, shapes=list(shapes),
        xaxis=dict(title=dict(text=x_title), side="top", tickmode="array", tickvals=x, ticktext=x_text),
        yaxis=dict(title=dict(text=y_title), autorange="reversed", tickmode="array", tickvals=y, ticktext=y_text),
    )
    if height is not None:
        layout["height"] = height
    heatmap = dict(type="heatmap", z=z, x=x, y=y, colorscale=COLORSCALE, zmin=0, zmax=1, hovertemplate=hover)
    return unchecked_figure([heatmap], layout)


def _array(x) -> np.ndarray:
    return x.numpy().astype(np.float32) if isinstance(x, torch.Tensor) else np.asarray(x, dtype=np.float32)


def plain(text: str) -> str:
    """Text shown as typed: plotly reads labels as HTML, so a token "<s>" would strike out the rest."""
    return html.escape(text, quote=False)


def _text(labels: list[str]) -> np.ndarray:
    return np.array([plain(t) for t in labels], dtype=object)


def position_labels(labels: list[str]) -> np.ndarray:
    """Unique axis categories "i:token", so repeated tokens keep their own column.

    A numpy array, not a list: plotly validates lists item by item (~10x slower).
    """
    return np.array([f"{i}:{plain(t)}" for i, t in enumerate(labels)], dtype=object)


def head_heatmap(attn, q_labels: list[str], k_labels: list[str], title: str = "") -> go.Figure:
    """One head's weights (Tq, Tk): rows are queries, columns the keys they read."""
    x, y = position_labels(k_labels), position_labels(q_labels)
    return _matrix_figure(_array(attn), x, y, _text(k_labels), _text(q_labels), "key", "query", title,
                          "%{y} → %{x}: %{z:.3f}<extra></extra>")


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


def heatmap_grid(mats, q_labels: list[str], k_labels: list[str], row_titles: list[str], col_titles: list[str],
                 title: str = "") -> go.Figure:
    """A rows x cols grid of small heatmaps, mats (rows, cols, Tq, Tk), on one 0..1 colour scale.

    Hover reads "row col  query → key: weight"; tick labels are hidden (too small to read).
    """
    mats = _array(mats)
    n_row, n_col = mats.shape[:2]
    x, y = position_labels(k_labels), position_labels(q_labels)
    traces, layout = [], {}
    for i in range(n_row):
        for j in range(n_col):
            suffix, layout[f"xaxis{suffix}"], layout[f"yaxis{suffix}"] = grid_axes(n_row, n_col, i, j)
            traces.append(dict(
                type="heatmap", z=mats[i, j], x=x, y=y, coloraxis="coloraxis", xaxis=f"x{suffix}", yaxis=f"y{suffix}",
                hovertemplate=f"{row_titles[i]} {col_titles[j]}  " + "%{y} → %{x}: %{z:.3f}<extra></extra>",
            ))
    annotations = [dict(text=t, x=(j + 0.5) / n_col, y=1.0, xref="paper", yref="paper", yanchor="bottom",
                        showarrow=False) for j, t in enumerate(col_titles)]
    annotations += [dict(text=t, x=1.0, y=1 - (i + 0.5) / n_row, xref="paper", yref="paper", xanchor="left",
                         showarrow=False, textangle=90) for i, t in enumerate(row_titles)]
    layout.update(
        title=dict(text=title), annotations=annotations, height=max(260, 120 * n_row + 80),
        coloraxis=dict(colorscale=COLORSCALE, cmin=0, cmax=1,
                       colorbar=dict(x=1.04, len=0.8, title=dict(text="weight"))),
        margin=dict(l=10, r=40, t=70 if title else 30, b=10),
    )
    return unchecked_figure(traces, layout)


def layer_head_grid(attn, q_labels: list[str], k_labels: list[str], title: str = "") -> go.Figure:
    """Every head of every layer: attn (n_layer, n_head, Tq, Tk) -> an n_layer x n_head grid."""
    n_layer, n_head = attn.shape[:2]
    return heatmap_grid(attn, q_labels, k_labels, [f"L{i}" for i in range(n_layer)],
                        [f"H{j}" for j in range(n_head)], title)


def layer_average_grid(attn, q_labels: list[str], k_labels: list[str]) -> go.Figure:
    """The head average of each layer side by side: attn (n_layer, n_head, Tq, Tk) -> 1 x n_layer."""
    mean = _array(attn).mean(axis=1)[None]  # (1, n_layer, Tq, Tk)
    return heatmap_grid(mean, q_labels, k_labels, ["mean of heads"], [f"L{i}" for i in range(mean.shape[1])],
                        "Head average per layer")


def query_rows_heatmap(rows, k_labels: list[str], title: str) -> go.Figure:
    """One query's attention in every head: rows (n_layer, n_head, Tk) -> (n_layer * n_head) x Tk.

    Each line is one (layer, head); columns are the keys, so a glance shows which
    heads of which layers read which tokens.
    """
    rows = _array(rows)
    n_layer, n_head, Tk = rows.shape
    names = np.array([f"L{i} H{j}" for i in range(n_layer) for j in range(n_head)], dtype=object)
    x = position_labels(k_labels)
    return _matrix_figure(rows.reshape(n_layer * n_head, Tk), x, names, _text(k_labels), names, "key",
                          "layer, head", title, "%{y}  → %{x}: %{z:.3f}<extra></extra>",
                          height=max(300, 16 * n_layer * n_head + 140))


def rollout_heatmap(rollout, labels: list[str]) -> go.Figure:
    """Attention rollout after the last layer (T, T): how much of each input token reaches each output."""
    return head_heatmap(rollout, labels, labels, "Attention rollout through all layers (rows sum to 1)")


def generation_heatmap(rows: list, labels: list[str], n_prompt: int, layer: int, head: int) -> go.Figure:
    """The staircase of a generation for one head: rows[s] (n_layer, n_head, n_prompt + s).

    Line s is the attention that chose generated token s (labels[n_prompt + s]) over
    every earlier position; cells the model could not see yet are left blank.
    """
    n_steps, T = len(rows), rows[-1].shape[-1]  # the last chosen token is never read: no column for it
    z = np.full((n_steps, T), np.nan, dtype=np.float32)
    for s, row in enumerate(rows):
        z[s, : row.shape[-1]] = _array(row[layer, head])
    chosen = [f"→ {labels[n_prompt + s]!r}" for s in range(n_steps)]
    x, y = position_labels(labels[:T]), position_labels(chosen)
    prompt_end = dict(type="line", x0=n_prompt - 0.5, x1=n_prompt - 0.5, y0=0, y1=1, xref="x", yref="paper",
                      line=dict(color="gray", dash="dot"))
    return _matrix_figure(z, x, y, _text(labels[:T]), _text(chosen), "key (prompt | generated)",
                          "step: token being chosen", f"Attention while generating, layer {layer} head {head}",
                          "choosing %{y}: reads %{x} with %{z:.3f}<extra></extra>",
                          height=max(300, 22 * n_steps + 160), shapes=(prompt_end,))


def message_figure(text: str) -> go.Figure:
    """An empty figure that says why there is nothing to draw."""
    fig = go.Figure()
    fig.add_annotation(text=text, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.update_layout(height=200, margin=dict(l=10, r=10, t=10, b=10))
    return fig
