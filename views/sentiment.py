"""Which tokens drove a sentiment verdict: tokens coloured by their score, and the scores as bars.

Lesson: an explanation is a number per token, and different methods give
different numbers. A token's share of the verdict is signed (green pushes towards
positive, red towards negative) and the shares add up to the verdict's log-odds,
which the legend says in numbers; attention rollout is a share of the pooled vector,
never negative (blue: how much of the token the classifier read).

A whole review read by sentences draws two more things: a strip of its sentences, each
coloured by its own verdict, and the running verdict after each sentence, where the review turns.

Pure functions of token texts, scores and verdicts; nothing here runs a model. Every
string that reaches the HTML (or a hover label) is escaped.
"""

from __future__ import annotations

import html

import numpy as np
from i18n import render, t
from views.kit import Figure, plain, position_labels, top_title, unchecked_figure
from views.tokens import visible

POSITIVE_RGB, NEGATIVE_RGB, READ_RGB = "22,163,74", "220,38,38", "37,99,235"  # green, red, blue
HOVER_CHARS = 80  # of a sentence, in the running chart's hover label
BAR_ROW_PX, BAR_CHART_PX = 22, 110  # the token bars: a row per token, plus the title and the axis



def normalised(scores) -> np.ndarray:
    """Scores divided by their largest magnitude, so the strongest token is +-1 (all zero stays zero)."""
    scores = np.asarray(scores, dtype=np.float64)
    top = float(np.abs(scores).max()) if scores.size else 0.0
    return scores / top if top > 0 else scores.copy()


def token_html(labels: list[str], scores, signed: bool, lang: str = "en", adds_up: tuple[float, float] | None = None) -> str:
    """Tokens as inline spans whose background strength is the normalised score; hover shows the raw score.
    adds_up: (base, log_odds) of signed shares, for the legend's sum: base + the shares = log_odds."""
    spans = []
    for label, raw, weight in zip(labels, np.asarray(scores).tolist(), normalised(scores).tolist()):
        rgb = (POSITIVE_RGB if weight >= 0 else NEGATIVE_RGB) if signed else READ_RGB
        spans.append(f'<span title="{html.escape(f"{raw:+.4f}", quote=True)}" style="background: rgba({rgb},'
                     f'{abs(weight):.2f}); border-radius: 3px; padding: 1px 2px; margin: 1px; white-space: pre; '
                     f'display: inline-block; '
                     f'font-family: monospace; line-height: 2;">{html.escape(visible(render(label, lang)), quote=True)}</span>')
    legend = t("sentiment.legend_signed" if signed else "sentiment.legend_read", lang)
    if signed and adds_up is not None:
        base, log_odds = adds_up
        legend += "<br>" + t("sentiment.adds_up", lang, base=base, total=float(np.sum(scores)), log_odds=log_odds,
                             p=1 / (1 + np.exp(-log_odds)))
    # "model-text": the tokens are the person's own text, shown as typed in either language
    return (f'<div class="model-text" style="direction: ltr;">{"".join(spans)}</div>'
            f'<div style="color: #666; font-size: 0.85em;">{legend}</div>')


def score_bars(labels: list[str], scores, signed: bool, title: str, lang: str = "en") -> Figure:
    """One horizontal bar per token, in reading order from the top: scores (T,). Tokens sit on the y axis, one
    row each, so their labels never overlap and the chart keeps its rows on a phone's width too (a row per
    token: the figure grows with the text). Written as plotly's JSON (see views/kit.py)."""
    labels = [visible(render(t, lang)) for t in labels]
    y = position_labels(labels)
    values = np.asarray(scores, dtype=np.float32)
    colors = [f"rgb({(POSITIVE_RGB if v >= 0 else NEGATIVE_RGB) if signed else READ_RGB})" for v in values.tolist()]
    bars = dict(type="bar", orientation="h", x=values, y=y, marker=dict(color=colors),
                hovertemplate=t("sentiment.bar_hover", lang))
    layout = dict(
        title=top_title(title), height=BAR_CHART_PX + BAR_ROW_PX * len(labels), margin=dict(l=10, r=10, t=50, b=40),
        yaxis=dict(tickmode="array", tickvals=y, ticktext=[plain(t) for t in labels], autorange="reversed",
                   automargin=True),
        xaxis=dict(title=dict(text=t("sentiment.y_signed" if signed else "sentiment.y_read", lang)), zeroline=True,
                   zerolinecolor="#888"),
        bargap=0.25,
    )
    return Figure([bars], layout)


def _verdict_rgb(p_positive: float) -> tuple[str, float]:
    """Green for positive, red for negative, strength 0 (unsure, p = 0.5) to 1 (certain)."""
    return (POSITIVE_RGB if p_positive >= 0.5 else NEGATIVE_RGB), abs(2 * p_positive - 1)


def sentence_strip(texts: list[str], p_positive: list[float], selected: int | None = None, lang: str = "en") -> str:
    """A review's sentences in reading order, each a span coloured by its own verdict; the one whose
    tokens are shown is outlined. Each span carries data-sentence (its number from 1) for a click."""
    spans = []
    for i, (text, p) in enumerate(zip(texts, p_positive)):
        rgb, strength = _verdict_rgb(p)
        label = t("sentiment.label.positive" if p >= 0.5 else "sentiment.label.negative", lang)
        title = t("sentiment.strip_title", lang, i=i + 1, label=label, p=p)
        outline = "outline: 2px solid #111; " if i == selected else ""
        spans.append(f'<span class="sentence" data-sentence="{i + 1}" title="{html.escape(title, quote=True)}" '
                     f'style="background: rgba({rgb},{0.12 + 0.6 * strength:.2f}); {outline}border-radius: 3px; '
                     f'padding: 2px 3px; margin: 1px; cursor: pointer; line-height: 2; unicode-bidi: isolate;">'
                     f'<sup style="color: #555;">{i + 1}</sup>&#8239;{html.escape(text, quote=True)}</span>')
    return (f'<div class="sentence-strip model-text">{" ".join(spans)}</div>'
            f'<div style="color: #666; font-size: 0.85em;">{t("sentiment.strip_legend", lang)}</div>')


def running_chart(texts: list[str], p_positive: list[float], running: list[float], lang: str = "en") -> Figure:
    """P(positive) of the review after each sentence (a line) over each sentence's own (dots), with the
    points where the running verdict crosses 0.5 marked: where the review turns."""
    x = list(range(1, len(texts) + 1))
    hover = [html.escape(t if len(t) <= HOVER_CHARS else t[: HOVER_CHARS - 1] + "…") for t in texts]
    colours = [f"rgb({_verdict_rgb(p)[0]})" for p in p_positive]
    turns = [i for i in range(1, len(running)) if (running[i] >= 0.5) != (running[i - 1] >= 0.5)]
    data = [
        dict(type="scatter", mode="markers", x=x, y=list(p_positive), name=t("sentiment.running_sentence", lang),
             marker=dict(color=colours, size=8, opacity=0.6), text=hover,
             hovertemplate="%{x}: %{y:.2f}<br>%{text}<extra></extra>"),
        dict(type="scatter", mode="lines+markers", x=x, y=list(running), name=t("sentiment.running_line", lang),
             line=dict(color="rgb(17,24,39)", width=3), marker=dict(size=5),
             hovertemplate="%{x}: %{y:.2f}<extra></extra>"),
    ]
    annotations = [dict(x=i + 1, y=running[i], text=t("sentiment.turns", lang, label=t(
        "sentiment.label.positive" if running[i] >= 0.5 else "sentiment.label.negative", lang)),
        showarrow=True, arrowhead=2, ay=-30) for i in turns]
    layout = dict(title=top_title(t("sentiment.running_title", lang)), height=300,
                  margin=dict(l=50, r=10, t=50, b=40), annotations=annotations,
                  shapes=[dict(type="line", xref="paper", x0=0, x1=1, y0=0.5, y1=0.5,
                               line=dict(color="#999", dash="dot", width=1))],
                  xaxis=dict(title=dict(text=t("sentiment.running_x", lang)), tickmode="auto", range=[0.5, len(x) + 0.5]),
                  yaxis=dict(title=dict(text=t("sentiment.running_y", lang)), range=[-0.03, 1.03]),
                  legend=dict(orientation="h", y=-0.25), hovermode="closest")
    return unchecked_figure(data, layout)
