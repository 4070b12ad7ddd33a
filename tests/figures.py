"""Figures as the browser gets them, back as Plotly objects for tests to read.

The app's handlers return figures already encoded (Gradio's PlotData: JSON, arrays packed
as base64), so a cached view is encoded once for everyone. `figure` decodes one.
"""

import base64
import json

import numpy as np
import plotly.graph_objects as go


def _unpack(value):
    if isinstance(value, dict) and "bdata" in value and "dtype" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        return array.reshape([int(n) for n in str(value["shape"]).split(",")]) if "shape" in value else array
    if isinstance(value, dict):
        return {k: _unpack(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unpack(v) for v in value]
    return value


def figure(value) -> go.Figure:
    """A handler's figure output (PlotData, or a go.Figure left as it is) as a go.Figure with plain arrays."""
    if isinstance(value, go.Figure):
        return value
    if hasattr(value, "to_json") and not hasattr(value, "plot"):  # a views.kit.Figure, not yet encoded
        return go.Figure(_unpack(json.loads(value.to_json())))
    return go.Figure(_unpack(json.loads(value.plot)))


def figures(outputs):
    """A handler's outputs with every encoded figure decoded (other outputs as they are)."""
    if isinstance(outputs, tuple):
        return tuple(figures(value) for value in outputs)
    return figure(outputs) if getattr(outputs, "type", None) == "plotly" and hasattr(outputs, "plot") else outputs


def grid_blocks(z, n_row: int, n_col: int) -> np.ndarray:
    """A tiled grid's matrix (one heatmap, blocks one blank row/column apart) back as (n_row, n_col, Tq, Tk)."""
    z = np.asarray(z, dtype=np.float64)
    Tq, Tk = (z.shape[0] + 1) // n_row - 1, (z.shape[1] + 1) // n_col - 1
    return np.stack([np.stack([z[i * (Tq + 1): i * (Tq + 1) + Tq, j * (Tk + 1): j * (Tk + 1) + Tk]
                               for j in range(n_col)]) for i in range(n_row)])
