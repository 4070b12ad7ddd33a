"""Figures written the way plotly.js reads them: plain dicts, numpy arrays as typed arrays.

Speed: plotly.py builds a figure property by property and serialises it with its own
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

import numpy as np
import orjson
import plotly.io as pio

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
pio.templates["lab"] = {"layout": {"font": {"family": FONT_FAMILY}}}
pio.templates.default = "plotly+lab"


def _template() -> dict:
    full = pio.templates["plotly"].to_plotly_json()
    layout = {k: v for k, v in full["layout"].items() if k not in _UNREAD}
    layout["font"] = {**layout.get("font", {}), "family": FONT_FAMILY}
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
