"""The plot kit every view shares: matrices drawn as heatmaps read like a matrix, panels of a grid,
token labels made safe and unique, and a figure that says why it is empty.

Figures are written directly in plotly.js's JSON form (`Figure`, first below), with no plotly.py on the
way. Weights are drawn on a square-root scale (0.1 already shows as a clear light blue), so the low
weights that spread attention stay visible on a projector.

Weights travel rounded to the 3 decimals the hover shows. The rounded numbers repeat, so the app's
gzip'd stream packs them small: a 128-token head's 16k weights from 87 kB of float32 base64 to 11 kB,
or to 7.7 kB as JSON numbers ("0.123"). Writing those numbers costs 1.9 ms against 0.05 ms for a
typed array, so only a matrix of more than TEXT_CELLS weights goes as numbers, where the bytes
matter; smaller ones as float32 typed arrays.

A `Figure` is written the way plotly.js reads it: plain dicts, numpy arrays as typed arrays. Speed: plotly.py builds a figure property by property and serialises it with its own
encoder, about 25 ms for the Attention tab's figures at 12 tokens, five times the model's
forward pass, all of it holding the GIL. A `Figure` is the same JSON written with one
`orjson.dumps`: numbers stay numpy arrays until then and travel as plotly.js typed arrays
({"dtype": "f4", "bdata": base64, "shape": "rows,cols"}), which plotly.js decodes itself,
or, when a view rounded them for people (float64), as short JSON numbers.

Look: plotly.py adds its default template to every figure; `TEMPLATE` is that template
cut to what a 2-D figure reads (no maps, polar or 3-D scenes), so figures look the same.

A `Figure` answers `fig.data[0].z` and `fig.layout.xaxis.ticktext` as a plotly figure
does, and `update_layout`, so callers and tests read it the same way.
"""

from __future__ import annotations

import base64
import html
import re
import unicodedata

import numpy as np
import orjson
import plotly.graph_objects as go
import plotly.io as pio
import torch
from plotly.colors import sequential

from i18n import render, t

_TYPED = {np.dtype(np.float32): "f4", np.dtype(np.float64): "f8", np.dtype(np.int8): "i1", np.dtype(np.uint8): "u1",
          np.dtype(np.int16): "i2", np.dtype(np.uint16): "u2", np.dtype(np.int32): "i4", np.dtype(np.uint32): "u4"}
# parts of the template no figure here reads: maps, polar and 3-D plots, and default colour scales and
# annotation arrows (every heatmap names its colour scale, no annotation has an arrow)
_UNREAD = ("geo", "polar", "scene", "ternary", "colorscale", "annotationdefaults")


# plotly's own font list, then the Chinese fonts by name: a PNG, and an SVG opened on another machine, draws
# Han characters in a font made for them (the README says so), not whatever the system falls back to
FONT_FAMILY = ("'Open Sans', verdana, arial, 'Noto Sans CJK SC', 'Noto Sans SC', 'PingFang SC', 'Microsoft YaHei', "
               "sans-serif")
# the figures plotly.py builds (go.Figure) get the font list too
# Tick labels drawn as they are: plotly's default hides a label that would cross the figure's edge, measuring
# every label's box after drawing it (a tenth of the drawing of a 128-token Attention view); the margins here are
# sized to hold the labels already.
AXIS = {"ticklabeloverflow": "allow"}
pio.templates["lab"] = {"layout": {"font": {"family": FONT_FAMILY}, "xaxis": AXIS, "yaxis": AXIS}}
pio.templates.default = "plotly+lab"


def _template() -> dict:
    full = pio.templates["plotly"].to_plotly_json()
    layout = {k: v for k, v in full["layout"].items() if k not in _UNREAD}
    layout["font"] = {**layout.get("font", {}), "family": FONT_FAMILY}
    layout["xaxis"], layout["yaxis"] = {**layout["xaxis"], **AXIS}, {**layout["yaxis"], **AXIS}
    data = {kind: [{k: v for k, v in trace.items() if k not in _UNREAD} for trace in full["data"][kind]]
            for kind in ("heatmap", "bar", "scatter")}
    return {"layout": layout, "data": data}


TEMPLATE = _template()


class Node(dict):
    """A dict whose keys read as attributes too (`trace.z`), as plotly's objects do; a missing one is None."""

    def __getattr__(self, key):
        value = self.get(key)
        return Node(value) if isinstance(value, dict) and not isinstance(value, Node) else value


def typed(array: np.ndarray):
    """A numeric array as a plotly.js typed array spec; text (object) arrays as a list, float64 as JSON numbers.

    float64 is how views hand over numbers already rounded for people (`heatmaps.weights`): as text
    "0.123" they compress ~30% smaller on the gzip'd wire than as base64, which hides their repeats.
    NaN (a cell not drawn) becomes null.
    """
    if array.dtype == object or array.dtype.kind in "US":
        return array.tolist()
    if array.dtype == np.float64:
        missing = np.isnan(array)
        return np.where(missing, None, array).tolist() if missing.any() else array.tolist()
    if array.dtype == np.bool_:
        array = array.astype(np.uint8)
    elif array.dtype not in _TYPED:
        array = array.astype(np.float64 if array.dtype.kind == "f" else np.int32)
    array = np.ascontiguousarray(array)
    spec = {"dtype": _TYPED[array.dtype], "bdata": base64.b64encode(array.data).decode("ascii")}
    if array.ndim > 1:
        spec["shape"] = ",".join(map(str, array.shape))
    return spec


def _plain(value):
    if isinstance(value, np.ndarray):
        return typed(value)
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot put a {type(value).__name__} in a figure")


class Figure:
    """A plotly figure as data: traces and layout in plotly's JSON form, arrays as numpy arrays."""

    def __init__(self, data: list[dict], layout: dict):
        self.data = [Node(trace) for trace in data]
        self.layout = Node(layout)

    def update_layout(self, **changes) -> Figure:
        self.layout.update(changes)
        return self

    def to_plotly_json(self) -> dict:
        """{"layout", "data"} with the template in, as plotly.py's `to_plotly_json` gives (arrays left as numpy).

        Written layout first and each trace's z last: gzip finds repeats only within 32 kB, so a heatmap's
        labels then sit next to the tick labels that repeat them, not beyond its z's base64.
        """
        data = [dict(sorted(trace.items(), key=lambda item: item[0] == "z")) for trace in self.data]
        return {"layout": {**self.layout, "template": TEMPLATE}, "data": data}

    def to_json(self) -> str:
        """The JSON plotly.js reads (what Gradio's Plot sends to the browser), written by orjson: a quarter of
        `json.dumps`'s time, on the one Python thread every request shares; text as UTF-8, not \\u escapes."""
        return orjson.dumps(self.to_plotly_json(), default=_plain).decode()


# ---------------------------------------------------------------- the plot kit

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
# plotly.js lowers a one-line title by 0.7em but places a title of several lines by its first line's baseline, so
# that line stood above the figure's top edge, its upper half cut (measured: 12 px higher than one line, at plotly's
# 17 px title type); such a title is lowered by that much
TITLE_LINES_PX = 12


def top_title(text: str) -> dict:
    pad = TITLE_PAD_PX + (TITLE_LINES_PX if "<br>" in text else 0)
    return dict(text=text, x=0.5, xanchor="center", y=1, yref="container", yanchor="top", pad=dict(t=pad))


def unchecked_figure(data: list[dict], layout: dict) -> Figure:
    """A figure from traces and layout already in plotly's JSON form (titles as {"text": ...})."""
    return Figure(data, layout)


def matrix_figure(z, x, y, x_text, y_text, x_title: str, y_title: str, title: str, hover: str,
                   height: int | None = None, shapes: tuple = ()) -> Figure:
    """One heatmap of weights read like a matrix: row 0 at the top, the key axis along the top edge."""
    x_ticks, y_ticks = ticks(x, x_text), ticks(y, y_text)
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


def ticks(values, text) -> dict:
    """Tick positions and labels, thinned to at most MAX_TICKS so long texts keep readable axes."""
    step = -(-len(values) // MAX_TICKS)
    return dict(tickvals=values[::step], ticktext=text[::step])


def label_px(text: str) -> float:
    """About how wide plotly draws a tick label, in pixels (an HTML escape counts as one character)."""
    shown = html.unescape(str(text))
    return sum(WIDE_PX if _wide(ch) else NARROW_PX for ch in shown)


def _wide(ch: str) -> bool:
    """Drawn full width: Han characters and other full-width ones, and the block elements, whose SentencePiece word
    mark "▁" no Latin font has (it comes from the Chinese font, 12 px wide at 12 px type)."""
    return unicodedata.east_asian_width(ch) in "WF" or "\u2580" <= ch <= "\u259f"


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
    # a tenth more on the left: label_px's letter is an average, and a label of wide letters ("▁summer", 7.2 px
    # a letter) past the margin made plotly push it and draw the figure twice
    return dict(TOP_AXIS_MARGIN, l=max(TOP_AXIS_MARGIN["l"], round(36 + 1.1 * widest(y_text))),
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



def placeholder(message: str, height: int = 200, width_px: float | None = None) -> go.Figure:
    """An empty figure that says why there is nothing to draw, or what to do to fill it; with `width_px`, the
    message broken into lines that fit a figure that narrow (one line would run past both edges)."""
    fig = go.Figure()
    text = html.escape(message, quote=False)
    fig.add_annotation(text=wrapped(text, width_px) if width_px else text, x=0.5, y=0.5, xref="paper", yref="paper",
                       showarrow=False)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=10, b=10), plot_bgcolor="rgba(0,0,0,0)")
    return fig


def plain(text: str) -> str:
    """Text shown as typed: plotly reads labels as HTML, so a token "<s>" would strike out the rest."""
    return html.escape(text, quote=False)
