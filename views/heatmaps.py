"""Weights as heatmaps, light enough for a lecture hall: one matrix, or a grid of many.

Lesson: an attention matrix is read like any matrix, row 0 at the top; row i is how much
query token i takes from each key token. A grid puts many such matrices side by side
(layers down, heads across) on one colour scale, so heads can be compared at a glance.

Speed and bytes (100 students ask at once, many on phones):
- a grid is ONE heatmap trace, the matrices separated by blank (NaN) rows and columns,
  not one trace and two axes per matrix: plotly.js lays out one plot, and the figure is
  written straight as JSON (`views.figure`), no plotly.py on the way;
- weights travel rounded to the 3 decimals the hover shows. The rounded numbers repeat, so
  the app's gzip'd stream packs them small: a 128-token head's 16k weights from 87 kB of
  float32 base64 to 11 kB, or to 7.7 kB as JSON numbers ("0.123"). Writing those numbers
  costs 1.9 ms against 0.05 ms for a typed array, so only a matrix of more than TEXT_CELLS
  weights goes as numbers, where the bytes matter; smaller ones as float32 typed arrays;
- a grid too large to hover usefully (over IMAGE_CELLS weights) travels as one palette
  PNG with IMAGE_LEVELS colours, evenly spaced on the colour scale below; the weights
  themselves are in the selected-head figure.

Colour: weights are drawn on a square-root scale (0.1 already shows as a clear light
blue), so the low weights that spread attention stay visible on a washed-out projector.
"""

from __future__ import annotations

import base64
import io

import numpy as np
import torch
from PIL import Image
from plotly.colors import hex_to_rgb, sequential

from views.figure import Figure
from views.kit import plain

GAMMA = 2.0  # colour position = weight ** (1 / GAMMA): low weights get a visible share of the scale
# white (0) to dark blue (1), spelled out: plotly.js reads the name "Blues" the other way round
COLORSCALE = [[(i / (len(sequential.Blues) - 1)) ** GAMMA, c] for i, c in enumerate(sequential.Blues)]
DECIMALS = 3  # what the hover shows, and what the figure carries
TEXT_CELLS = 8192  # a matrix with more weights than this (a 91-token head) is written as JSON numbers
IMAGE_CELLS = 40_000  # a grid with more weights than this is sent as one PNG instead of a heatmap
# Colours of the PNG: 13 steps along the square-root scale (1.5 per colour of the scale) look like
# the continuous scale on a 128-token grid (checked side by side); 17 cost 30% more bytes, 9 show bands.
IMAGE_LEVELS = 13
MAX_TICKS = 40  # more token labels than this on an axis collide: every k-th is shown
TOP_AXIS_MARGIN = dict(l=10, r=10, t=140, b=10)  # the key axis sits on top, under the title


def weights(x) -> np.ndarray:
    """Weights rounded to DECIMALS (NaN: a cell not drawn): float64, written as JSON numbers, when there are
    more than TEXT_CELLS of them; else float32, written as a typed array (see the module's note)."""
    array = x.numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
    return np.round(array.astype(np.float64 if array.size > TEXT_CELLS else np.float32), DECIMALS)


def position_labels(labels: list[str]) -> np.ndarray:
    """Unique axis categories "i:token", so repeated tokens keep their own column."""
    return np.array([f"{i}:{plain(t)}" for i, t in enumerate(labels)], dtype=object)


def _text(labels: list[str]) -> np.ndarray:
    return np.array([plain(t) for t in labels], dtype=object)


def _ticks(values, text) -> dict:
    """Tick positions and labels, thinned to at most MAX_TICKS so long texts keep readable axes."""
    step = -(-len(values) // MAX_TICKS)
    return dict(tickvals=values[::step], ticktext=text[::step])


def _top_title(text: str) -> dict:
    return dict(text=text, x=0.5, xanchor="center", y=0.995, yref="container", yanchor="top")


def matrix_figure(z, x, y, x_text, y_text, x_title: str, y_title: str, title: str, hover: str,
                  height: int | None = None, shapes: tuple = ()) -> Figure:
    """One heatmap read like a matrix: row 0 at the top, the key axis along the top edge."""
    layout = dict(
        title=_top_title(title), margin=TOP_AXIS_MARGIN, shapes=list(shapes),
        xaxis=dict(title=dict(text=x_title), side="top", tickmode="array", **_ticks(x, x_text)),
        yaxis=dict(title=dict(text=y_title), autorange="reversed", tickmode="array", **_ticks(y, y_text)),
    )
    if height is not None:
        layout["height"] = height
    heatmap = dict(type="heatmap", z=weights(z), x=x, y=y, colorscale=COLORSCALE, zmin=0, zmax=1,
                   hovertemplate=hover, hoverongaps=False)
    return Figure([heatmap], layout)


def head_heatmap(attn, q_labels: list[str], k_labels: list[str], title: str = "") -> Figure:
    """One head's weights (Tq, Tk): rows are queries, columns the keys they read."""
    x, y = position_labels(k_labels), position_labels(q_labels)
    return matrix_figure(attn, x, y, _text(k_labels), _text(q_labels), "key", "query", title,
                         "%{y} → %{x}: %{z:.3f}<extra></extra>")


def tiled(mats: np.ndarray, gap: int, fill) -> np.ndarray:
    """mats (rows, cols, Tq, Tk) as one matrix, the blocks `gap` cells apart, the gaps set to `fill`."""
    n_row, n_col, Tq, Tk = mats.shape
    canvas = np.full((n_row * (Tq + gap) - gap, n_col * (Tk + gap) - gap), fill, dtype=mats.dtype)
    for i in range(n_row):
        for j in range(n_col):
            canvas[i * (Tq + gap): i * (Tq + gap) + Tq, j * (Tk + gap): j * (Tk + gap) + Tk] = mats[i, j]
    return canvas


def _grid_labels(titles: list[str], labels: list[str]) -> np.ndarray:
    """One category per column of the tiled grid: "H1 3:soft" per cell, a unique blank between blocks."""
    cells = position_labels(labels)
    out = []
    for n, title in enumerate(titles):
        if n:
            out.append(" " * n)  # the gap's own category, never hovered
        out.extend(f"{title} {cell}" for cell in cells)
    return np.array(out, dtype=object)


def _grid_heatmap(mats: np.ndarray, q_labels, k_labels, row_titles, col_titles, title: str) -> Figure:
    n_row, n_col = mats.shape[:2]
    z = tiled(mats, 1, np.nan)
    heatmap = dict(type="heatmap", z=z, x=_grid_labels(col_titles, k_labels), y=_grid_labels(row_titles, q_labels),
                   coloraxis="coloraxis", hoverongaps=False,
                   hovertemplate="%{y} → %{x}: %{z:.3f}<extra></extra>")
    hidden = dict(showticklabels=False, ticks="", showgrid=False, zeroline=False)
    annotations = [dict(text=t, x=(j + 0.5) / n_col, y=1.0, xref="paper", yref="paper", yanchor="bottom",
                        showarrow=False) for j, t in enumerate(col_titles)]
    annotations += [dict(text=t, x=1.0, y=1 - (i + 0.5) / n_row, xref="paper", yref="paper", xanchor="left",
                         showarrow=False, textangle=90) for i, t in enumerate(row_titles)]
    layout = dict(
        title=dict(text=title), annotations=annotations, height=max(260, 120 * n_row + 80),
        xaxis=hidden, yaxis=dict(hidden, autorange="reversed"), plot_bgcolor="white",
        coloraxis=dict(colorscale=COLORSCALE, cmin=0, cmax=1, colorbar=dict(x=1.04, len=0.8, title=dict(text="weight"))),
        margin=dict(l=10, r=40, t=70 if title else 30, b=10),
    )
    return Figure([heatmap], layout)


def _palette(levels: int) -> np.ndarray:
    """(levels, 3) uint8 RGB: the colour scale at weights (k / (levels - 1)) ** GAMMA, evenly spaced in colour."""
    stops = np.array([p for p, _ in COLORSCALE])
    rgb = np.array([hex_to_rgb(c) if c.startswith("#") else _rgb(c) for _, c in COLORSCALE], dtype=np.float64)
    w = np.linspace(0, 1, levels) ** GAMMA
    return np.stack([np.interp(w, stops, rgb[:, c]) for c in range(3)], axis=1).round().astype(np.uint8)


def _rgb(css: str) -> tuple[int, int, int]:
    return tuple(int(v) for v in css[css.index("(") + 1: css.index(")")].split(","))


PALETTE = np.concatenate([_palette(IMAGE_LEVELS), [[255, 255, 255]]]).astype(np.uint8).ravel().tolist()
WHITE = IMAGE_LEVELS  # palette index of the gaps between thumbnails


def grid_image(mats: np.ndarray, gap: int = 2, scale: int = 1) -> tuple[str, int, int]:
    """(PNG data URI, width, height) of mats (rows, cols, Tq, Tk) tiled with white gaps, one pixel per weight
    (`scale` pixels for short texts, so a 10-token head is not a 10-pixel dot)."""
    levels = np.sqrt(np.clip(np.nan_to_num(mats), 0, 1)) * (IMAGE_LEVELS - 1) + 0.5
    index = levels.astype(np.uint8).repeat(scale, axis=2).repeat(scale, axis=3)
    canvas = tiled(index, gap, WHITE)
    image = Image.fromarray(canvas, mode="P")
    image.putpalette(PALETTE)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=6)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii"), canvas.shape[1], canvas.shape[0]


def _image_grid(mats: np.ndarray, row_titles: list[str], col_titles: list[str], title: str) -> Figure:
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
        coloraxis=dict(colorscale=COLORSCALE, cmin=0, cmax=1, colorbar=dict(len=0.8, title=dict(text="weight"))),
        margin=dict(l=40, r=40, t=90 if title else 50, b=10),
    )
    return Figure([image, colourbar], layout)


def heatmap_grid(mats, q_labels: list[str], k_labels: list[str], row_titles: list[str], col_titles: list[str],
                 title: str = "") -> Figure:
    """A rows x cols grid of heatmaps, mats (rows, cols, Tq, Tk), on one 0..1 colour scale.

    Hover reads "L0 3:soft → H1 2:what: 0.412" (row title and query, column title and key, weight).
    A grid of more than IMAGE_CELLS weights is drawn as one image (see the module's note).
    """
    mats = weights(mats)
    if mats.size > IMAGE_CELLS:
        return _image_grid(mats, row_titles, col_titles, title)
    return _grid_heatmap(mats, q_labels, k_labels, row_titles, col_titles, title)
