"""Masks as matrices, and what a mask does to a trained language model.

Lesson: a mask is a "may attend" matrix: row i lists the keys query i may read.
The gallery draws the very `Mask` objects the model applies. The other figures
compare one model under two masks (per-token loss, top next-token guesses) and
two models trained under different masks (their loss curves).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from i18n import render, t
from views.kit import MAX_TICKS, axis_text, grid_axes, plain, position_labels, ticks, unchecked_figure, wrapped

MASK_COLORS = [[0.0, "#f2f2f2"], [1.0, "#2b6cb0"]]  # hidden: light grey, may attend: blue
PANELS_PER_ROW = 4
# a panel's title is broken into lines this wide, centred on its panel: four panels to a row leave each about 76 px
# on a 390-px phone, where titles on one line ran into each other
TITLE_PX = 72
# cells a gap apart up to this many tokens: past it a cell of a projector's 260-px panel is under 5 px, where a 1-px
# gap washed its colour out (and plotly draws a gapped heatmap brick by brick, slowly)
GAP_TOKENS = 48


@dataclass
class MaskPanel:
    """One matrix of the gallery: allowed (Tq, Tk) bool and the tokens on its axes."""

    title: str
    allowed: np.ndarray
    q_labels: list[str]
    k_labels: list[str]


def gallery_panels(masks, labels: list[str], labels_b: list[str], lang: str = "en") -> list[MaskPanel]:
    """One panel per mask, two for the padding mask (one matrix per text of its batch); titles in `lang`."""
    panels = []
    for title, mask in masks:
        title = render(title, lang)
        if mask.allowed.dim() == 3:
            padded_b = labels_b + ["[pad]"] * (len(labels) - len(labels_b))
            panels.append(MaskPanel(t("masking.panel.text", lang, title=title, n=1), mask.allowed[0].numpy(),
                                    labels, labels))
            panels.append(MaskPanel(t("masking.panel.text", lang, title=title, n=2), mask.allowed[1].numpy(),
                                    padded_b, padded_b))
        else:
            panels.append(MaskPanel(title, mask.allowed.numpy(), labels, labels))
    return panels


def mask_gallery(panels: list[MaskPanel], lang: str = "en") -> go.Figure:
    """The masks side by side, PANELS_PER_ROW to a row; blue cells may attend, grey ones are hidden."""
    n_row = -(-len(panels) // PANELS_PER_ROW)
    n_col = min(PANELS_PER_ROW, len(panels))
    titles = [wrapped(panel.title, TITLE_PX) for panel in panels]
    height = 260 * n_row + 70
    # each row's panels start under their own titles' lines (15 px a line): a title of three lines ran into the row
    # above it, and the first row's short titles, given the room of the second's, stood far under the figure's title
    lines = [max(t.count("<br>") + 1 for t in titles[i:i + n_col]) for i in range(0, len(titles), n_col)]
    traces, layout, annotations = [], {}, []
    for n, (panel, title) in enumerate(zip(panels, titles)):
        i, j = divmod(n, n_col)
        suffix, layout[f"xaxis{suffix}"], yaxis = grid_axes(n_row, n_col, i, j, gap=0.04)
        bottom, top = yaxis["domain"]
        room = 15 * lines[i] / (height - 80)
        layout[f"yaxis{suffix}"] = dict(yaxis, domain=[bottom, max(bottom, top - room)])
        traces.append(dict(
            type="heatmap", z=np.asarray(panel.allowed, dtype=np.int8), x=position_labels(panel.k_labels, lang),
            y=position_labels(panel.q_labels, lang), xaxis=f"x{suffix}", yaxis=f"y{suffix}", colorscale=MASK_COLORS,
            zmin=0, zmax=1, showscale=False, **(dict(xgap=1, ygap=1) if len(panel.q_labels) <= GAP_TOKENS else {}),
            hovertemplate=f"{panel.title}<br>" + t("masking.gallery_hover", lang),
        ))
        annotations.append(dict(text=title, x=(j + 0.5) / n_col,
                                y=layout[f"yaxis{suffix}"]["domain"][1], xref="paper", yref="paper", xanchor="center",
                                yanchor="bottom", showarrow=False))
    layout.update(annotations=annotations, height=height, margin=dict(l=10, r=10, t=70, b=10),
                  title=dict(text=t("masking.gallery_title", lang)))
    return unchecked_figure(traces, layout)


def loss_figure(losses: dict[str, np.ndarray], labels: list[str], lang: str = "en") -> go.Figure:
    """Per-token loss (nats) of the same text under each mask: losses[name] (T-1,), labels (T,).

    Point t is the loss of predicting token t+1, so the x axis names the token being predicted.
    """
    x = position_labels(labels, lang)[1:]
    traces = []
    for name, loss in losses.items():
        loss = np.asarray(loss, dtype=np.float32)
        # a marker a token up to the labels an axis shows (plotly draws each marker on its own)
        traces.append(dict(type="scatter", x=x, y=loss, mode="lines+markers" if len(x) <= MAX_TICKS else "lines",
                           name=t("masking.loss_trace", lang, name=render(name, lang), mean=loss.mean()),
                           hovertemplate=t("masking.loss_hover", lang)))
    layout = dict(
        title=dict(text=t("masking.loss_title", lang)), height=340, margin=dict(l=10, r=10, t=50, b=10),
        legend=dict(orientation="h", y=1.02, yanchor="bottom"),
        xaxis=dict(title=dict(text=t("masking.loss_x", lang)), tickmode="array",
                   **ticks(x, axis_text(labels[1:], lang))),
        yaxis=dict(title=dict(text=t("masking.loss_y", lang)), rangemode="tozero"),
    )
    return unchecked_figure(traces, layout)


def top_predictions_figure(predictions: dict[str, tuple[np.ndarray, list[str]]], position: int, token: str,
                           lang: str = "en") -> go.Figure:
    """Top next-token guesses after the token at `position` under each mask: predictions[name] = (probs (k,),
    tokens (k,))."""
    names = list(predictions)
    top = max(float(np.max(probs)) for probs, _ in predictions.values())  # one scale, so panels compare
    traces, layout = [], {}
    for j, name in enumerate(names):
        probs, tokens = predictions[name]
        suffix, xaxis, yaxis = grid_axes(1, len(names), 0, j, gap=0.08)
        layout[f"xaxis{suffix}"] = dict(xaxis, showticklabels=True, ticks="outside", range=[0, 1.1 * top],
                                        title=dict(text=t("masking.top_x", lang, name=plain(render(name, lang)))))
        layout[f"yaxis{suffix}"] = dict(yaxis, showticklabels=True, automargin=True)
        ranked = [f"{r + 1}. {plain(repr(t))}" for r, t in enumerate(tokens)]  # ranks keep equal texts apart
        traces.append(dict(type="bar", x=np.asarray(probs, dtype=np.float32), y=np.array(ranked, dtype=object),
                           orientation="h", showlegend=False, xaxis=f"x{suffix}", yaxis=f"y{suffix}",
                           hovertemplate=t("masking.top_hover", lang)))
    title = t("masking.top_title", lang, position=position, token=plain(repr(token)))
    layout.update(title=dict(text=title), height=300, margin=dict(l=10, r=10, t=50, b=10))
    return unchecked_figure(traces, layout)


def training_curves(histories: dict[str, list[dict]], lang: str = "en") -> go.Figure:
    """Training and validation loss against step for each run: histories[name] rows {step, train_loss, val_loss}."""
    fig = go.Figure()
    for name, history in histories.items():
        name = render(name, lang)
        steps = [row["step"] for row in history]
        fig.add_trace(go.Scatter(x=steps, y=[row["train_loss"] for row in history], mode="lines",
                                 name=t("masking.curve_train", lang, name=name)))
        fig.add_trace(go.Scatter(x=steps, y=[row["val_loss"] for row in history], mode="lines",
                                 line=dict(dash="dot"), name=t("masking.curve_val", lang, name=name)))
    fig.update_xaxes(title=t("masking.curve_x", lang))
    fig.update_yaxes(title=t("masking.curve_y", lang), rangemode="tozero")
    fig.update_layout(title=t("masking.curve_title", lang), height=360, margin=dict(l=10, r=10, t=50, b=10))
    return fig
