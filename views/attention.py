"""Attention heatmaps: one head, or the layers x heads grid, drawn from a trace's weights."""

from __future__ import annotations

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots


def _hover(q_labels: list[str], k_labels: list[str]) -> list[list[str]]:
    return [[f"{q!r} → {k!r}" for k in k_labels] for q in q_labels]


def head_heatmap(attn: torch.Tensor, q_labels: list[str], k_labels: list[str], title: str = "") -> go.Figure:
    """One head's weights (Tq, Tk): rows are queries, columns the keys they read."""
    fig = go.Figure(
        go.Heatmap(
            z=attn.tolist(),
            x=list(range(len(k_labels))),
            y=list(range(len(q_labels))),
            customdata=_hover(q_labels, k_labels),
            hovertemplate="%{customdata}: %{z:.3f}<extra></extra>",
            colorscale="Blues",
            zmin=0,
            zmax=1,
        )
    )
    fig.update_xaxes(tickmode="array", tickvals=list(range(len(k_labels))), ticktext=k_labels, title="key", side="top")
    fig.update_yaxes(tickmode="array", tickvals=list(range(len(q_labels))), ticktext=q_labels, title="query",
                     autorange="reversed")
    fig.update_layout(title=title, margin=dict(l=10, r=10, t=80, b=10))
    return fig


def layer_head_grid(attn: torch.Tensor, q_labels: list[str], k_labels: list[str]) -> go.Figure:
    """Every head of every layer: attn (n_layer, n_head, Tq, Tk) -> an n_layer x n_head grid."""
    n_layer, n_head = attn.shape[:2]
    fig = make_subplots(rows=n_layer, cols=n_head, horizontal_spacing=0.01, vertical_spacing=0.02,
                        row_titles=[f"L{i}" for i in range(n_layer)], column_titles=[f"H{j}" for j in range(n_head)])
    hover = _hover(q_labels, k_labels)
    for i in range(n_layer):
        for j in range(n_head):
            fig.add_trace(
                go.Heatmap(z=attn[i, j].tolist(), customdata=hover, coloraxis="coloraxis",
                           hovertemplate=f"L{i} H{j} " + "%{customdata}: %{z:.3f}<extra></extra>"),
                row=i + 1, col=j + 1,
            )
    fig.update_xaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=False, autorange="reversed")
    fig.update_layout(coloraxis=dict(colorscale="Blues", cmin=0, cmax=1), height=max(300, 110 * n_layer),
                      margin=dict(l=10, r=10, t=40, b=10))
    return fig
