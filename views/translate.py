"""Pictures of a translation: the attention maps of one encoder-decoder pass, the table of
decoding steps, the loss curve of a live training run and the length-generalisation plot.

Pure functions of what the core computed (a `Trace`, next-token probabilities, a
training history, accuracies); the heatmaps are the Attention tab's own builder.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from i18n import t
from views.generate import show
from views.kit import head_heatmap

# labels of each group's (queries, keys): "source" positions; target positions by the token they
# "writes" (so copy's cross-attention is a diagonal of equal labels) or the token they "reads"
SIDES = {"cross": ("writes", "source"), "encoder": ("source", "source"), "decoder": ("writes", "reads")}
ROW_PX = 26  # height of one query row in an attention map


def attention_figure(attn, group: str, layer: int, head: int | None,
                     labels: dict[str, list[str]], lang: str = "en") -> go.Figure:
    """One layer's map from a group's weights (n_layer, H, Tq, Tk): one head, or the head average
    when `head` is None. labels: {"source", "writes", "reads"} -> one label per position."""
    heads = np.asarray(attn[layer])  # (H, Tq, Tk)
    q_side, k_side = SIDES[group]
    which = t("translate.head.mean", lang) if head is None else t("translate.head.n", lang, head=head)
    title = t("translate.figure.title", lang, group=t(f"translate.figure.{group}", lang), layer=layer, which=which)
    fig = head_heatmap(heads.mean(0) if head is None else heads[head], [show(s) for s in labels[q_side]],
                       [show(s) for s in labels[k_side]], title, lang)
    # the title and the key labels on top take ~250 px; then readable rows, long source or short
    fig.update_layout(height=min(1100, 260 + ROW_PX * heads.shape[1]))
    return fig


def step_rows(probs, written: list[int], label, top: int = 3) -> list[list]:
    """Decoding table: per step, the token written, its probability and the best alternatives.

    probs: (m + 1, vocab) next-token distributions at target positions 0..m;
    written: the m + 1 tokens chosen there (the translation, then </s>).
    """
    rows = []
    for step, token in enumerate(written):
        p = np.asarray(probs[step])
        best = np.argsort(-p, kind="stable")[: top + 1]
        others = [f"{show(label(int(i)))} {float(p[i]):.3f}" for i in best if int(i) != token]
        rows.append([step + 1, show(label(token)), round(float(p[token]), 4), ", ".join(others[:top])])
    return rows


def length_rows(curves: dict[str, dict[int, float]], lengths) -> list[list]:
    """One table row per source length: the length, then each model's exact match (3 decimals)."""
    return [[length, *(round(curve[length], 3) for curve in curves.values())] for length in lengths]


def loss_curve(history: list[tuple[int, float]], lang: str = "en") -> go.Figure:
    """Training loss per step, live: history [(step, loss)]; log scale, since it falls by decades."""
    fig = go.Figure(go.Scatter(x=[s for s, _ in history], y=[v for _, v in history], mode="lines",
                               line=dict(color="#4f46e5")))
    fig.update_xaxes(title=t("translate.curve_x", lang))
    fig.update_yaxes(title=t("translate.curve_y", lang), type="log")
    fig.update_layout(title=t("translate.training_loss", lang), height=300, margin=dict(l=10, r=10, t=50, b=10))
    return fig


def length_figure(curves: dict[str, dict[int, float]], trained_max: int, lang: str = "en") -> go.Figure:
    """Exact-match accuracy by source length for each model: curves {name: {length: accuracy}}."""
    fig = go.Figure()
    # curves that coincide (they often do) must both stay visible: different dashes and markers
    styles = [dict(dash="solid", symbol="circle", size=9), dict(dash="dash", symbol="x", size=7)]
    for (name, by_length), style in zip(curves.items(), styles * len(curves)):
        fig.add_trace(go.Scatter(x=list(by_length), y=list(by_length.values()), mode="lines+markers",
                                 name=t(f"translate.position.{name.split()[0]}", lang),
                                 line=dict(dash=style["dash"]),
                                 marker=dict(symbol=style["symbol"], size=style["size"])))
    fig.add_vrect(x0=0.5, x1=trained_max + 0.5, fillcolor="#16a34a", opacity=0.08, line_width=0,
                  annotation_text=t("translate.length_band", lang), annotation_position="top left")
    fig.update_xaxes(title=t("translate.length_x", lang), dtick=1)
    fig.update_yaxes(title=t("translate.length_y", lang), range=[-0.02, 1.02])
    fig.update_layout(title=t("translate.length_title", lang, trained_max=trained_max), height=360,
                      margin=dict(l=10, r=10, t=50, b=10), legend=dict(orientation="h", y=-0.25))
    return fig
