"""Attention heatmaps drawn from a trace's weights: one head, every head, and summaries.

Lesson: row i of a head's matrix is how much query token i takes from each key
token (the row sums to 1). The views here are different cuts of the same
(n_layer, n_head, Tq, Tk) array: one head large, the layers x heads grid, the
head average per layer, one query's row in every head, attention rollout, and
the rows a language model used while it generated, step by step.

Speed: a 6 x 8 grid over 128 tokens is 786k numbers, megabytes as plotly JSON and
seconds for a browser to draw. So a large grid of thumbnails travels as one PNG (an
image trace: ~100 kB, drawn at once) and only the selected head stays an interactive
heatmap with hover. The heatmap itself, its colours and axes are views/kit.py's.
"""

from __future__ import annotations

import base64
import io

import numpy as np
import plotly.graph_objects as go
from PIL import Image
from plotly.colors import hex_to_rgb

from i18n import t
from views.kit import (
    COLORSCALE,
    array32,
    axis_text,
    grid_axes,
    head_heatmap,
    matrix_figure,
    position_labels,
    unchecked_figure,
)

IMAGE_CELLS = 40_000  # a grid with more cells than this is sent as one PNG instead of heatmaps


def _colour_table(n: int = 255) -> np.ndarray:
    """(n, 3) uint8 RGB: COLORSCALE sampled at n evenly spaced weights."""
    stops = np.array([p for p, _ in COLORSCALE])
    rgb = np.array([hex_to_rgb(c) if c.startswith("#") else _rgb(c) for _, c in COLORSCALE], dtype=np.float64)
    t = np.linspace(0, 1, n)
    return np.stack([np.interp(t, stops, rgb[:, c]) for c in range(3)], axis=1).round().astype(np.uint8)


def _rgb(css: str) -> tuple[int, int, int]:
    return tuple(int(v) for v in css[css.index("(") + 1: css.index(")")].split(","))


COLOURS = _colour_table()
GAP = len(COLOURS)  # palette index of the white gaps between thumbnails
PALETTE = np.concatenate([COLOURS, [[255, 255, 255]]]).astype(np.uint8).ravel().tolist()


def grid_image(mats: np.ndarray, gap: int = 2, scale: int = 1) -> tuple[str, int, int]:
    """(PNG data URI, width, height) of mats (rows, cols, Tq, Tk) tiled with white gaps, one pixel per weight
    (`scale` pixels for short texts, so a 10-token head is not a 10-pixel dot).

    A palette PNG: one byte per pixel before compression, a third of RGB's size.
    """
    n_row, n_col, Tq, Tk = mats.shape
    index = np.clip(np.nan_to_num(mats) * (GAP - 1) + 0.5, 0, GAP - 1).astype(np.uint8)
    cells = index.repeat(scale, axis=2).repeat(scale, axis=3)  # (rows, cols, Tq*s, Tk*s)
    h, w = Tq * scale, Tk * scale
    canvas = np.full((n_row * (h + gap) - gap, n_col * (w + gap) - gap), GAP, dtype=np.uint8)
    for i in range(n_row):
        for j in range(n_col):
            canvas[i * (h + gap): i * (h + gap) + h, j * (w + gap): j * (w + gap) + w] = cells[i, j]
    image = Image.fromarray(canvas, mode="P")
    image.putpalette(PALETTE)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=6)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii"), canvas.shape[1], canvas.shape[0]


def _image_grid(mats: np.ndarray, row_titles: list[str], col_titles: list[str], title: str, lang: str) -> go.Figure:
    """The grid as one image trace: row and column titles as tick labels, no per-cell hover."""
    n_row, n_col, Tq, Tk = mats.shape
    scale = max(1, 64 // max(Tq, Tk))
    source, width, height = grid_image(mats, scale=scale)
    cell_w, cell_h = width / n_col, height / n_row
    image = dict(type="image", source=source, x0=0, y0=0, dx=1, dy=1, hoverinfo="skip")
    colourbar = dict(type="heatmap", z=[[0, 1]], x=[0, 0], y=[0, 0], coloraxis="coloraxis", opacity=0,
                     hoverinfo="skip", showscale=True)  # an invisible trace, only for the colour bar
    layout = dict(
        title=dict(text=title), height=max(260, 120 * n_row + 80),
        xaxis=dict(tickmode="array", tickvals=[(j + 0.5) * cell_w for j in range(n_col)], ticktext=col_titles,
                   side="top", showgrid=False, zeroline=False, range=[0, width]),
        yaxis=dict(tickmode="array", tickvals=[(i + 0.5) * cell_h for i in range(n_row)], ticktext=row_titles,
                   showgrid=False, zeroline=False, range=[height, 0], scaleanchor="x"),
        coloraxis=dict(colorscale=COLORSCALE, cmin=0, cmax=1, colorbar=dict(len=0.8, title=dict(text=t("figure.weight", lang)))),
        margin=dict(l=40, r=40, t=90 if title else 50, b=10),
    )
    return unchecked_figure([image, colourbar], layout)


def heatmap_grid(mats, q_labels: list[str], k_labels: list[str], row_titles: list[str], col_titles: list[str],
                 title: str = "", lang: str = "en") -> go.Figure:
    """A rows x cols grid of small heatmaps, mats (rows, cols, Tq, Tk), on one 0..1 colour scale.

    Hover reads "row col  query → key: weight"; tick labels are hidden (too small to read).
    A grid of more than IMAGE_CELLS weights is drawn as one image (see the module's note on speed).
    """
    mats = array32(mats)
    n_row, n_col = mats.shape[:2]
    if mats.size > IMAGE_CELLS:
        return _image_grid(mats, row_titles, col_titles, title, lang)
    x, y = position_labels(k_labels), position_labels(q_labels)
    traces, layout = [], {}
    for i in range(n_row):
        for j in range(n_col):
            suffix, layout[f"xaxis{suffix}"], layout[f"yaxis{suffix}"] = grid_axes(n_row, n_col, i, j)
            traces.append(dict(
                type="heatmap", z=mats[i, j], x=x, y=y, coloraxis="coloraxis", xaxis=f"x{suffix}", yaxis=f"y{suffix}",
                hovertemplate=f"{row_titles[i]} {col_titles[j]}  " + t("figure.head_hover", lang),
            ))
    annotations = [dict(text=t, x=(j + 0.5) / n_col, y=1.0, xref="paper", yref="paper", yanchor="bottom",
                        showarrow=False) for j, t in enumerate(col_titles)]
    annotations += [dict(text=t, x=1.0, y=1 - (i + 0.5) / n_row, xref="paper", yref="paper", xanchor="left",
                         showarrow=False, textangle=90) for i, t in enumerate(row_titles)]
    layout.update(
        title=dict(text=title), annotations=annotations, height=max(260, 120 * n_row + 80),
        coloraxis=dict(colorscale=COLORSCALE, cmin=0, cmax=1,
                       colorbar=dict(x=1.04, len=0.8, title=dict(text=t("figure.weight", lang)))),
        margin=dict(l=10, r=40, t=70 if title else 30, b=10),
    )
    return unchecked_figure(traces, layout)


def layer_head_grid(attn, q_labels: list[str], k_labels: list[str], title: str = "", lang: str = "en") -> go.Figure:
    """Every head of every layer: attn (n_layer, n_head, Tq, Tk) -> an n_layer x n_head grid."""
    n_layer, n_head = attn.shape[:2]
    return heatmap_grid(attn, q_labels, k_labels, [f"L{i}" for i in range(n_layer)],
                        [f"H{j}" for j in range(n_head)], title, lang)


def layer_average_grid(attn, q_labels: list[str], k_labels: list[str], lang: str = "en") -> go.Figure:
    """The head average of each layer side by side: attn (n_layer, n_head, Tq, Tk) -> 1 x n_layer."""
    mean = array32(attn).mean(axis=1)[None]  # (1, n_layer, Tq, Tk)
    return heatmap_grid(mean, q_labels, k_labels, [t("figure.mean_of_heads", lang)],
                        [f"L{i}" for i in range(mean.shape[1])], t("figure.average_title", lang), lang)


def query_rows_heatmap(rows, k_labels: list[str], title: str, lang: str = "en") -> go.Figure:
    """One query's attention in every head: rows (n_layer, n_head, Tk) -> (n_layer * n_head) x Tk.

    Each line is one (layer, head); columns are the keys, so a glance shows which
    heads of which layers read which tokens.
    """
    rows = array32(rows)
    n_layer, n_head, Tk = rows.shape
    names = np.array([f"L{i} H{j}" for i in range(n_layer) for j in range(n_head)], dtype=object)
    x = position_labels(k_labels)
    return matrix_figure(rows.reshape(n_layer * n_head, Tk), x, names, axis_text(k_labels), names, t("figure.key", lang),
                         t("figure.layer_head", lang), title, t("figure.rows_hover", lang),
                          height=max(300, 16 * n_layer * n_head + 140))


def rollout_heatmap(rollout, labels: list[str], lang: str = "en") -> go.Figure:
    """Attention rollout after the last layer (T, T): how much of each input token reaches each output."""
    return head_heatmap(rollout, labels, labels, t("figure.rollout_title", lang), lang)


def generation_heatmap(rows: list, labels: list[str], n_prompt: int, layer: int, head: int,
                       lang: str = "en") -> go.Figure:
    """The staircase of a generation for one head: rows[s] (n_layer, n_head, n_prompt + s).

    Line s is the attention that chose generated token s (labels[n_prompt + s]) over
    every earlier position; cells the model could not see yet are left blank.
    """
    n_steps, T = len(rows), rows[-1].shape[-1]  # the last chosen token is never read: no column for it
    z = np.full((n_steps, T), np.nan, dtype=np.float32)
    for s, row in enumerate(rows):
        z[s, : row.shape[-1]] = array32(row[layer, head])
    chosen = [f"→ {labels[n_prompt + s]!r}" for s in range(n_steps)]
    x, y = position_labels(labels[:T]), position_labels(chosen)
    prompt_end = dict(type="line", x0=n_prompt - 0.5, x1=n_prompt - 0.5, y0=0, y1=1, xref="x", yref="paper",
                      line=dict(color="gray", dash="dot"))
    return matrix_figure(z, x, y, axis_text(labels[:T]), axis_text(chosen), t("figure.generation_x", lang),
                         t("figure.generation_y", lang), t("figure.generation_title", lang, layer=layer, head=head),
                         t("figure.generation_hover", lang),
                          height=max(300, 22 * n_steps + 160), shapes=(prompt_end,))
