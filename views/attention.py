"""Attention heatmaps drawn from a trace's weights: one head, every head, and summaries.

Lesson: row i of a head's matrix is how much query token i takes from each key
token (the row sums to 1). The views here are different cuts of the same
(n_layer, n_head, Tq, Tk) array: one head large, the layers x heads grid, the
head average per layer, one query's row in every head, attention rollout, and
the rows a language model used while it generated, step by step.

How they are drawn (one trace per grid, weights to 3 decimals, a PNG for a large grid,
the square-root colour scale for projectors) is `views/heatmaps.py`'s business.
"""

from __future__ import annotations

import numpy as np

from views.figure import Figure
from views.heatmaps import (COLORSCALE, GAMMA, _text, head_heatmap, heatmap_grid, matrix_figure,  # noqa: F401
                            position_labels, weights)
from views.kit import plain  # noqa: F401  (the tabs read it here)


def unchecked_figure(data: list[dict], layout: dict) -> Figure:
    """A figure from traces and layout already in plotly's JSON form (titles as {"text": ...})."""
    return Figure(data, layout)


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


def layer_head_grid(attn, q_labels: list[str], k_labels: list[str], title: str = "") -> Figure:
    """Every head of every layer: attn (n_layer, n_head, Tq, Tk) -> an n_layer x n_head grid."""
    n_layer, n_head = attn.shape[:2]
    return heatmap_grid(attn, q_labels, k_labels, [f"L{i}" for i in range(n_layer)],
                        [f"H{j}" for j in range(n_head)], title)


def layer_average_grid(attn, q_labels: list[str], k_labels: list[str]) -> Figure:
    """The head average of each layer side by side: attn (n_layer, n_head, Tq, Tk) -> 1 x n_layer."""
    mean = weights(attn).mean(axis=1)[None]  # (1, n_layer, Tq, Tk)
    return heatmap_grid(mean, q_labels, k_labels, ["mean of heads"], [f"L{i}" for i in range(mean.shape[1])],
                        "Head average per layer")


def query_rows_heatmap(rows, k_labels: list[str], title: str) -> Figure:
    """One query's attention in every head: rows (n_layer, n_head, Tk) -> (n_layer * n_head) x Tk.

    Each line is one (layer, head); columns are the keys, so a glance shows which
    heads of which layers read which tokens.
    """
    rows = weights(rows)
    n_layer, n_head, Tk = rows.shape
    names = np.array([f"L{i} H{j}" for i in range(n_layer) for j in range(n_head)], dtype=object)
    x = position_labels(k_labels)
    return matrix_figure(rows.reshape(n_layer * n_head, Tk), x, names, _text(k_labels), names, "key",
                          "layer, head", title, "%{y}  → %{x}: %{z:.3f}<extra></extra>",
                          height=max(300, 16 * n_layer * n_head + 140))


def rollout_heatmap(rollout, labels: list[str]) -> Figure:
    """Attention rollout after the last layer (T, T): how much of each input token reaches each output."""
    return head_heatmap(rollout, labels, labels, "Attention rollout through all layers (rows sum to 1)")


def generation_heatmap(rows: list, labels: list[str], n_prompt: int, layer: int, head: int) -> Figure:
    """The staircase of a generation for one head: rows[s] (n_layer, n_head, n_prompt + s).

    Line s is the attention that chose generated token s (labels[n_prompt + s]) over
    every earlier position; cells the model could not see yet are left blank.
    """
    n_steps, T = len(rows), rows[-1].shape[-1]  # the last chosen token is never read: no column for it
    z = np.full((n_steps, T), np.nan, dtype=np.float32)
    for s, row in enumerate(rows):
        z[s, : row.shape[-1]] = weights(row[layer, head])
    chosen = [f"→ {labels[n_prompt + s]!r}" for s in range(n_steps)]
    x, y = position_labels(labels[:T]), position_labels(chosen)
    prompt_end = dict(type="line", x0=n_prompt - 0.5, x1=n_prompt - 0.5, y0=0, y1=1, xref="x", yref="paper",
                      line=dict(color="gray", dash="dot"))
    return matrix_figure(z, x, y, _text(labels[:T]), _text(chosen), "key (prompt | generated)",
                          "step: token being chosen", f"Attention while generating, layer {layer} head {head}",
                          "choosing %{y}: reads %{x} with %{z:.3f}<extra></extra>",
                          height=max(300, 22 * n_steps + 160), shapes=(prompt_end,))
