"""The plot kit every view shares: a figure that says why it is empty, and token labels made safe to draw."""

from __future__ import annotations

import html

import plotly.graph_objects as go


def placeholder(message: str, height: int = 200) -> go.Figure:
    """An empty figure that says why there is nothing to draw, or what to do to fill it."""
    fig = go.Figure()
    fig.add_annotation(text=html.escape(message, quote=False), x=0.5, y=0.5, xref="paper", yref="paper",
                       showarrow=False)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=10, b=10), plot_bgcolor="rgba(0,0,0,0)")
    return fig


def plain(text: str) -> str:
    """Text shown as typed: plotly reads labels as HTML, so a token "<s>" would strike out the rest."""
    return html.escape(text, quote=False)
