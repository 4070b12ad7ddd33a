"""Attention heatmaps drawn from a trace's weights: one head, every head, and summaries.

Lesson: row i of a head's matrix is how much query token i takes from each key
token (the row sums to 1). The views here are different cuts of the same
(n_layer, n_head, Tq, Tk) array: one head large, the layers x heads grid, the
head average per layer, one query's row in every head, attention rollout, and
the rows a language model used while it generated, step by step.

Speed and bytes (100 students ask at once, many on phones):
- a grid is ONE heatmap trace, the matrices separated by blank (NaN) rows and columns,
  not one trace and two axes per matrix: plotly.js lays out one plot, and the figure is
  written straight as JSON (views/kit.py), no plotly.py on the way;
- a grid too large to hover usefully (over IMAGE_CELLS weights) travels as one palette
  PNG with IMAGE_LEVELS colours, evenly spaced on the square-root colour scale; the
  weights themselves are in the selected-head figure. An image of more than IMAGE_PIXELS
  is max-pooled (each pixel the largest of k x k weights, the title says so): a 1280 x 720
  projector shows fewer pixels than that, and attention weights compress to little (they
  are not long runs of one colour).
The heatmap itself, its colours, axes and the rounding of weights are views/kit.py's.
"""

from __future__ import annotations

import base64
import io
import zlib

import numpy as np
from PIL import Image
from plotly.colors import hex_to_rgb

from i18n import render, t
from lab.attention import AttentionRun
from views.kit import (
    COLORSCALE,
    GAMMA,
    MAX_TICKS,
    Figure,
    axis_text,
    head_heatmap,
    label_px,
    matrix_figure,
    placeholder,
    plain,
    position_labels,
    rounded,
    unchecked_figure,
    wrapped,
)

LABEL_PX = 15  # the room a token's label takes along a grid's axis: more are thinned to every k-th
IMAGE_CELLS = 40_000  # a grid with more weights than this is sent as one PNG instead of a heatmap
# Colours of the PNG: 13 steps along the square-root scale (1.5 per colour of the scale) look like
# the continuous scale on a 128-token grid (checked side by side); 17 cost 30% more bytes, 9 show bands.
IMAGE_LEVELS = 13
# The most pixels a grid image carries: the 144 heads of a 128-token text in full (2.4 M) were 380 kB of PNG, most
# of the multilingual encoder's answer; 6 x 8 heads of 128 tokens (0.8 M) stay whole. Max-pooling keeps a
# one-token diagonal or column visible, where averaging would fade it.
IMAGE_PIXELS = 1_500_000
PLOT_WIDTH_PX = 900  # about how wide a full-width figure's plot area is on a 1280-pixel projector


def figures(run: AttentionRun, layer: int, head: int, query: int, lang: str = "en") -> tuple:
    """Every figure of the Attention view of `run`, in one call: (the layer x head grid, head `head` of layer `layer`
    large, the head average per layer, query `query`'s row in every head, the rollout). The indices are the
    run's own (`run.focus` clamps them)."""
    n_layer, n_head, Tq, Tk = run.shape
    title = t("attention.grid_title", lang, n_layer=n_layer, n_head=n_head, n_query=Tq, n_key=Tk)
    if run.group_size > 1:
        title += "<br>" + t("attention.grid_gqa", lang, n_kv=n_head // run.group_size, size=run.group_size)
    if run.local_layers:
        title += "<br>" + t("attention.grid_local", lang, window=run.window, n_local=len(run.local_layers))
    grid = heatmap_grid(run.attn, run.q_labels, run.k_labels,
                        [f"L{i}{_LOCAL_MARK if i in run.local_layers else ''}" for i in range(n_layer)],
                        # a query head over the key/value head it reads: side by side, "H0 kv0H1 kv0" ran together
                        # on a phone
                        [f"H{j}" + (f"<br>kv{run.kv_head(j)}" if run.group_size > 1 else "") for j in range(n_head)],
                        title, lang)
    head_fig, rows_fig = focus_figures(run, layer, head, query, lang)
    average = layer_average_grid(run.attn, run.q_labels, run.k_labels, lang)
    if run.rollout is not None:
        rollout = rollout_heatmap(run.rollout, run.q_labels, lang)
    else:
        rollout = placeholder(t("attention.rollout_needs_self", lang))
    return grid, head_fig, average, rows_fig, rollout


_LOCAL_MARK = " ◧"  # beside a sliding-window layer's name in the grid (its title says what it means)
NOTE_PX = 420  # a head title's notes are broken into lines of about this width (a half-width figure holds them)


def head_title(run: AttentionRun, layer: int, head: int, lang: str = "en") -> str:
    """"Layer 5, head 3", and what a modern decoder adds: the key/value head it shares and with whom, whether the
    layer is a sliding-window one, and how much of its attention goes to the first token."""
    lines = [t("attention.head_title", lang, layer=layer, head=head)]
    notes = []
    if run.group_size > 1:
        kv = run.kv_head(head)
        shared = [h for h in range(kv * run.group_size, (kv + 1) * run.group_size) if h != head]
        notes.append(t("attention.head_kv", lang, kv=kv, heads=", ".join(f"H{h}" for h in shared)))
    if layer in run.local_layers:
        notes.append(t("attention.head_local", lang, window=run.window))
    share = run.first_token_share[layer, head]
    if run.group_size > 1 or run.local_layers or share > 0.5:  # trained LLMs park most attention there
        notes.append(t("attention.head_sink", lang, share=float(share)))
    lines += [f"<span style='font-size:12px'>{line}</span>" for note in notes
              for line in wrapped(note, NOTE_PX).split("<br>")]
    return "<br>".join(lines)


def focus_figures(run: AttentionRun, layer: int, head: int, query: int, lang: str = "en") -> tuple[Figure, Figure]:
    """The two figures a slider redraws from the run it already has: (the head large, the query's row in every
    head)."""
    head_fig = head_heatmap(run.attn[layer, head], run.q_labels, run.k_labels, head_title(run, layer, head, lang),
                            lang)
    rows_fig = query_rows_heatmap(run.attn[:, :, query], run.k_labels,
                                  t("attention.rows_title", lang, query=query,
                                    token=plain(repr(run.q_labels[query]))), lang)
    return head_fig, rows_fig


def tiled(attn: np.ndarray, gap: int, fill) -> np.ndarray:
    """attn (rows, cols, Tq, Tk) as one matrix, the blocks `gap` cells apart, the gaps set to `fill`."""
    n_row, n_col, Tq, Tk = attn.shape
    canvas = np.full((n_row * (Tq + gap) - gap, n_col * (Tk + gap) - gap), fill, dtype=attn.dtype)
    for i in range(n_row):
        for j in range(n_col):
            canvas[i * (Tq + gap): i * (Tq + gap) + Tq, j * (Tk + gap): j * (Tk + gap) + Tk] = attn[i, j]
    return canvas


def _grid_labels(titles: list[str], labels: list[str], lang: str = "en") -> np.ndarray:
    """One category per column of the tiled grid: "H1 3:soft" per cell (a title's lines on one), a unique blank
    between blocks."""
    cells = position_labels(labels, lang)
    out = []
    for n, title in enumerate(titles):
        if n:
            out.append(" " * n)  # the gap's own category, never hovered
        out.extend(f"{title.replace('<br>', ' ')} {cell}" for cell in cells)
    return np.array(out, dtype=object)


def _grid_heatmap(attn: np.ndarray, q_labels, k_labels, row_titles, col_titles, title: str, lang: str,
                  tokens: bool = False) -> Figure:
    n_row, n_col = attn.shape[:2]
    z = tiled(attn, 1, np.nan)
    x, y = _grid_labels(col_titles, k_labels, lang), _grid_labels(row_titles, q_labels, lang)
    heatmap = dict(type="heatmap", z=z, x=x, y=y, coloraxis="coloraxis", hoverongaps=False,
                   hovertemplate="%{y} → %{x}: %{z:.3f}<extra></extra>")
    hidden = dict(showticklabels=False, ticks="", showgrid=False, zeroline=False)
    margin = dict(l=10, r=40, t=_title_room(title, 70, col_titles), b=10)
    rows_px = max(180, 120 * n_row)  # the panels' height, below the title's room
    x_axis, y_axis = hidden, dict(hidden, autorange="reversed")
    if tokens:  # each panel's keys below it and the queries on the left, as one head's figure names them
        # (at the panels' own height: plotly paints a heatmap by the pixel, and a taller one slows every draw)
        Tq, Tk = attn.shape[2:]
        x_ticks = _panel_ticks(x, axis_text(k_labels, lang), n_col, Tk, MAX_TICKS)
        y_ticks = _panel_ticks(y, axis_text(q_labels, lang), n_row, Tq, max(1, rows_px // LABEL_PX))
        x_axis = dict(x_axis, showticklabels=True, tickmode="array", tickangle=-90, **x_ticks)
        y_axis = dict(y_axis, showticklabels=True, tickmode="array", **y_ticks)
        widest = lambda texts: max((label_px(text) for text in texts), default=0.0)  # noqa: E731
        # a tenth more: label_px's letter is an average (as kit._margin)
        margin.update(l=round(16 + 1.1 * widest(y_ticks["ticktext"])),
                      b=round(16 + 1.1 * widest(x_ticks["ticktext"])))
    # centred on their panels (plotly's "auto" anchors a title in a figure's left third by its left end, in the
    # right third by its right end: two panels' titles leaned together, and crossed on a phone)
    annotations = [dict(text=name, x=(j + 0.5) / n_col, y=1.0, xref="paper", yref="paper", xanchor="center",
                        yanchor="bottom", showarrow=False) for j, name in enumerate(col_titles)]
    annotations += [dict(text=name, x=1.0, y=1 - (i + 0.5) / n_row, xref="paper", yref="paper", xanchor="left",
                         showarrow=False, textangle=90) for i, name in enumerate(row_titles)]
    layout = dict(
        title=_grid_title(title), annotations=annotations, height=rows_px + 80 + margin["b"] - 10,
        xaxis=x_axis, yaxis=y_axis, plot_bgcolor="white",
        coloraxis=dict(colorscale=COLORSCALE, cmin=0, cmax=1,
                       colorbar=dict(x=1.04, len=0.8, title=dict(text=t("figure.weight", lang)))),
        margin=margin,
    )
    return unchecked_figure([heatmap], layout)


def _panel_ticks(categories: np.ndarray, text: np.ndarray, n_panels: int, T: int, most: int) -> dict:
    """Tick positions and labels along a tiled grid's axis: each panel's T tokens, every k-th, `most` in all."""
    step = -(-T * n_panels // most)
    at = [p * (T + 1) + i for p in range(n_panels) for i in range(0, T, step)]  # T cells and one gap a panel
    return dict(tickvals=categories[at], ticktext=text[[i % (T + 1) for i in at]])


def _grid_title(title: str) -> dict:
    """A grid's title from the top down: several lines centred in the margin ran into the column names (plotly
    anchors a title of several lines by its first line: the pad keeps that line on the figure)."""
    return dict(text=title, y=1, yref="container", yanchor="top", pad=dict(t=30))


def _title_room(title: str, one_line: int, col_titles: list[str] = ()) -> int:
    """The top margin for `title` over a grid's column names: `one_line` for one line, 22 px more a line (a
    Chinese line is that tall), 14 px more a line of the column names past their first."""
    names = 14 * max((name.count("<br>") for name in col_titles), default=0)
    return (one_line + 22 * title.count("<br>") if title else 30) + names


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


def grid_image(attn: np.ndarray, gap: int = 2, scale: int = 1) -> tuple[str, int, int]:
    """(PNG data URI, width, height) of attn (rows, cols, Tq, Tk) tiled with white gaps, one pixel per weight
    (`scale` pixels for short texts, so a 10-token head is not a 10-pixel dot)."""
    # in float32 and unrounded: the image carries 13 colours, not weights (a 144-head grid of 128 tokens is 2.4 M
    # of them, and float64 rounding first cost more than the PNG)
    levels = np.sqrt(np.clip(np.nan_to_num(np.asarray(attn, dtype=np.float32)), 0, 1))
    index = (levels * (IMAGE_LEVELS - 1) + 0.5).astype(np.uint8)
    if scale > 1:
        index = index.repeat(scale, axis=2).repeat(scale, axis=3)
    canvas = tiled(index, gap, WHITE)
    image = Image.fromarray(canvas, mode="P")
    image.putpalette(PALETTE)
    buffer = io.BytesIO()
    # run-length deflate: the image is long runs of a few colours, which zlib's RLE packs as small as its default
    # search does, several times faster
    image.save(buffer, format="PNG", compress_level=6, compress_type=zlib.Z_RLE)
    source = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
    return source, canvas.shape[1], canvas.shape[0]


def max_pooled(attn: np.ndarray, k: int) -> np.ndarray:
    """attn (rows, cols, Tq, Tk) with each k x k block of a matrix replaced by its largest weight (NaN as 0; the
    last block of an axis may be narrower)."""
    n_row, n_col, Tq, Tk = attn.shape
    padded = np.zeros((n_row, n_col, -(-Tq // k) * k, -(-Tk // k) * k), dtype=np.float32)
    padded[:, :, :Tq, :Tk] = np.nan_to_num(np.asarray(attn, dtype=np.float32))
    # the largest of k strided slices, one axis at a time: numpy's max over the short inner axes of the block view
    # walks them element by element, several times slower on a 144-head grid
    rows = padded.reshape(n_row, n_col, padded.shape[2] // k, k, padded.shape[3])
    rows = np.maximum.reduce([rows[:, :, :, i] for i in range(k)])
    cols = rows.reshape(n_row, n_col, rows.shape[2], padded.shape[3] // k, k)
    return np.maximum.reduce([cols[..., i] for i in range(k)])


def _image_grid(attn: np.ndarray, row_titles: list[str], col_titles: list[str], title: str, lang: str) -> Figure:
    """The grid as one image trace: row and column titles as tick labels, no per-cell hover."""
    n_row, n_col, Tq, Tk = attn.shape
    scale, gap, pool = max(1, 64 // max(Tq, Tk)), 2, 1
    while n_row * (-(-Tq // pool) * scale + gap) * n_col * (-(-Tk // pool) * scale + gap) > IMAGE_PIXELS:
        pool += 1
    if pool > 1:
        attn = max_pooled(attn, pool)
        title += "<br>" + t("attention.grid_pooled", lang, k=pool)
    source, width, height = grid_image(attn, gap, scale)
    cell_w, cell_h = width / n_col, height / n_row
    image = dict(type="image", source=source, x0=0, y0=0, dx=1, dy=1, hoverinfo="skip")
    colourbar = dict(type="heatmap", z=[[0, 1]], x=[0, 0], y=[0, 0], coloraxis="coloraxis", opacity=0,
                     hoverinfo="skip", showscale=True)  # an invisible trace, only for the colour bar
    layout = dict(
        # rows 120 px tall, or less where the plot is too narrow for square pixels at that height (the grid sits
        # under its title, any room left below it)
        title=_grid_title(title), height=max(260, min(120 * n_row, round(PLOT_WIDTH_PX * height / width)) + 80),
        # level names: plotly turned crowded ones on a phone, and a name of two lines turned reads as neither; a
        # grouped-query head's "kv0" under it in 10 px fits a phone's column of a 9-head LLM
        xaxis=dict(tickmode="array", tickvals=[(j + 0.5) * cell_w for j in range(n_col)], ticktext=col_titles,
                   tickangle=0, tickfont=dict(size=10 if any("<br>" in name for name in col_titles) else 12),
                   side="top", showgrid=False, zeroline=False, range=[0, width]),
        yaxis=dict(tickmode="array", tickvals=[(i + 0.5) * cell_h for i in range(n_row)], ticktext=row_titles,
                   showgrid=False, zeroline=False, range=[height, 0], scaleanchor="x",
                   constrain="domain", constraintoward="top"),
        coloraxis=dict(colorscale=COLORSCALE, cmin=0, cmax=1,
                       colorbar=dict(len=0.8, title=dict(text=t("figure.weight", lang)))),
        # wide enough for the row titles and the colour bar (99 px drawn), so plotly draws it once (views/kit.py)
        margin=dict(l=max(40, round(10 + max(map(label_px, row_titles)))), r=100, t=_title_room(title, 90, col_titles),
                    b=10),
    )
    return unchecked_figure([image, colourbar], layout)


def heatmap_grid(attn, q_labels: list[str], k_labels: list[str], row_titles: list[str], col_titles: list[str],
                 title: str = "", lang: str = "en", tokens: bool = False) -> Figure:
    """A rows x cols grid of heatmaps, attn (rows, cols, Tq, Tk), on one 0..1 colour scale.

    Hover reads "L0 3:soft → H1 2:what: 0.412" (row title and query, column title and key, weight).
    `tokens`: the axes name the tokens, as one head's figure does (a grid of a few panels, which has room).
    A grid of more than IMAGE_CELLS weights is drawn as one image (see the module's note).
    """
    attn = np.asarray(attn)  # a CPU tensor too, without a copy
    if attn.size > IMAGE_CELLS:
        return _image_grid(attn, row_titles, col_titles, title, lang)
    return _grid_heatmap(rounded(attn), q_labels, k_labels, row_titles, col_titles, title, lang, tokens)


def layer_head_grid(attn, q_labels: list[str], k_labels: list[str], title: str = "", lang: str = "en") -> Figure:
    """Every head of every layer: attn (n_layer, n_head, Tq, Tk) -> an n_layer x n_head grid."""
    n_layer, n_head = attn.shape[:2]
    return heatmap_grid(attn, q_labels, k_labels, [f"L{i}" for i in range(n_layer)],
                        [f"H{j}" for j in range(n_head)], title, lang)


def layer_average_grid(attn, q_labels: list[str], k_labels: list[str], lang: str = "en") -> Figure:
    """The head average of each layer side by side: attn (n_layer, n_head, Tq, Tk) -> 1 x n_layer."""
    mean = np.asarray(attn, dtype=np.float32).mean(axis=1)[None]  # (1, n_layer, Tq, Tk); heatmap_grid rounds
    return heatmap_grid(mean, q_labels, k_labels, [t("figure.mean_of_heads", lang)],
                        [f"L{i}" for i in range(mean.shape[1])], t("figure.average_title", lang), lang)


def query_rows_heatmap(rows, k_labels: list[str], title: str, lang: str = "en") -> Figure:
    """One query's attention in every head: rows (n_layer, n_head, Tk) -> (n_layer * n_head) x Tk.

    Each line is one (layer, head); columns are the keys, so a glance shows which
    heads of which layers read which tokens.
    """
    rows = rounded(rows)
    n_layer, n_head, Tk = rows.shape
    names = np.array([f"L{i} H{j}" for i in range(n_layer) for j in range(n_head)], dtype=object)
    x = position_labels(k_labels, lang)
    return matrix_figure(rows.reshape(n_layer * n_head, Tk), x, names, axis_text(k_labels, lang), names, t("figure.key", lang),
                         t("figure.layer_head", lang), title, t("figure.rows_hover", lang),
                          height=max(300, 16 * n_layer * n_head + 140))


def rollout_heatmap(rollout, labels: list[str], lang: str = "en") -> Figure:
    """Attention rollout after the last layer (T, T): how much of each input token reaches each output."""
    return head_heatmap(rollout, labels, labels, t("figure.rollout_title", lang), lang)


def generation_heatmap(rows: list, labels: list[str], n_prompt: int, layer: int, head: int,
                       lang: str = "en") -> Figure:
    """The staircase of a generation for one head: rows[s] (n_layer, n_head, n_prompt + s).

    Line s is the attention that chose generated token s (labels[n_prompt + s]) over
    every earlier position; cells the model could not see yet are left blank.
    """
    n_steps, T = len(rows), rows[-1].shape[-1]  # the last chosen token is never read: no column for it
    z = np.full((n_steps, T), np.nan, dtype=np.float32)
    for s, row in enumerate(rows):
        z[s, : row.shape[-1]] = rounded(row[layer, head])
    chosen = [f"→ {render(labels[n_prompt + s], lang)!r}" for s in range(n_steps)]
    x, y = position_labels(labels[:T], lang), position_labels(chosen)
    prompt_end = dict(type="line", x0=n_prompt - 0.5, x1=n_prompt - 0.5, y0=0, y1=1, xref="x", yref="paper",
                      line=dict(color="gray", dash="dot"))
    return matrix_figure(z, x, y, axis_text(labels[:T], lang), axis_text(chosen), t("figure.generation_x", lang),
                         t("figure.generation_y", lang), t("figure.generation_title", lang, layer=layer, head=head),
                         t("figure.generation_hover", lang),
                          height=max(300, 22 * n_steps + 160), shapes=(prompt_end,))
