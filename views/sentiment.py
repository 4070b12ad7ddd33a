"""Which tokens drove a sentiment verdict: tokens coloured by their score, and the scores as bars.

Lesson: an explanation is a number per token, and different methods give
different numbers. Gradient x input is signed (green pushes towards positive,
red towards negative); attention rollout is a share of the pooled vector, never
negative (blue: how much of the token the classifier read).

Pure functions of token texts and scores; nothing here runs a model. Every
string that reaches the HTML is escaped.
"""

from __future__ import annotations

import html

import numpy as np
from views.figure import Figure
from views.kit import position_labels
from views.tokens import visible

POSITIVE_RGB, NEGATIVE_RGB, READ_RGB = "22,163,74", "220,38,38", "37,99,235"  # green, red, blue


def normalised(scores) -> np.ndarray:
    """Scores divided by their largest magnitude, so the strongest token is +-1 (all zero stays zero)."""
    scores = np.asarray(scores, dtype=np.float64)
    top = float(np.abs(scores).max()) if scores.size else 0.0
    return scores / top if top > 0 else scores.copy()


def token_html(labels: list[str], scores, signed: bool) -> str:
    """Tokens as inline spans whose background strength is the normalised score; hover shows the raw score."""
    spans = []
    for label, raw, weight in zip(labels, np.asarray(scores).tolist(), normalised(scores).tolist()):
        rgb = (POSITIVE_RGB if weight >= 0 else NEGATIVE_RGB) if signed else READ_RGB
        spans.append(f'<span title="{html.escape(f"{raw:+.4f}", quote=True)}" style="background: rgba({rgb},'
                     f'{abs(weight):.2f}); border-radius: 3px; padding: 1px 2px; margin: 1px; white-space: pre; '
                     f'display: inline-block; '
                     f'font-family: monospace; line-height: 2;">{html.escape(visible(label), quote=True)}</span>')
    legend = ("green: pushes towards <b>positive</b>, red: towards <b>negative</b>" if signed
              else "blue: how much of the token reaches the pooled vector")
    return f'<div style="direction: ltr;">{"".join(spans)}</div><div style="color: #666; font-size: 0.85em;">{legend}</div>'


def score_bars(labels: list[str], scores, signed: bool, title: str) -> Figure:
    """One bar per token, in reading order: scores (T,). Written as plotly's JSON (see views/figure.py)."""
    x = position_labels([visible(t) for t in labels])
    values = np.asarray(scores, dtype=np.float32)
    colors = [f"rgb({(POSITIVE_RGB if v >= 0 else NEGATIVE_RGB) if signed else READ_RGB})" for v in values.tolist()]
    bars = dict(type="bar", x=x, y=values, marker=dict(color=colors), hovertemplate="%{x}: %{y:.4f}<extra></extra>")
    layout = dict(
        title=dict(text=title), height=320, margin=dict(l=10, r=10, t=50, b=10),
        xaxis=dict(tickmode="array", tickvals=x, ticktext=[visible(t) for t in labels], tickangle=-45),
        yaxis=dict(title=dict(text="towards positive" if signed else "share of pooled vector")),
    )
    return Figure([bars], layout)
