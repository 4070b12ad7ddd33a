"""What a head does, drawn: the head ranking, an ablation's before and after, the importance map,
the logit lens and the heads' roles.

Lesson: a layer x head map is the grid of the Attention tab with one number per head, so
a person finds "their" head where the thumbnails put it. Pure functions of lab/heads.py's
runs; English text is in MESSAGES by id, for the language catalogue.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from views.kit import COLORSCALE, array32, axis_text, matrix_figure, placeholder, plain, position_labels, top_title, \
    unchecked_figure

BARS = 15  # heads listed in a ranking's bar list
DAMAGE_SCALE = [[0, "#2166ac"], [0.5, "#f7f7f7"], [1, "#b2182b"]]  # red: the model does worse without the head
ROLE_MARKS = {"previous-token": "P", "first-token": "F", "duplicate-token": "D", "induction": "I"}

MESSAGES = {
    "heads.ranking_title": "Weight from “{query}” to “{key}” in every head (mean {mean:.2f})",
    "heads.bars_title": "Heads ranked by that weight (top {n})",
    "heads.weight": "weight",
    "heads.layer": "layer",
    "heads.head": "head",
    "heads.before": "every head on",
    "heads.after": "{heads} off ({mode})",
    "heads.next_token_title": "Next-token guesses after the last token",
    "heads.probability": "probability",
    "heads.verdict_title": "The classifier's verdict",
    "heads.translator_title": "Output: “{before}” → “{after}”",
    "heads.logp": "log-probability of the output (nats)",
    "heads.loss_title": "Change in per-token loss with the heads off (red: worse)",
    "heads.loss_change": "loss change (nats)",
    "heads.loss_only_lm": "The per-token loss change is drawn for language models.",
    "heads.importance_title": "Importance map: {measure} when each head alone is off ({mode} ablation)",
    "heads.damage": "damage",
    "heads.lens_title": "Logit lens: the top next-token guess after each layer (colour: its probability)",
    "heads.lens_rows": "read after",
    "heads.embedding": "embedding",
    "heads.block": "layer {layer}",
    "heads.rank_title": "Rank of the final prediction after each layer (0 = top guess), one line per position",
    "heads.rank": "rank + 1 (log scale)",
    "heads.roles_title": "Head roles: a mark where a score reaches {threshold}",
    "heads.roles_legend": "P previous-token · F first-token (sink) · D duplicate-token · I induction",
    "heads.role_score": "highest role score",
    "heads.induction_title": "Loss per token over a random sequence of {n} tokens repeated twice",
    "heads.position": "position in the sequence",
    "heads.loss": "loss (nats)",
    "heads.second_half": "the repeat starts",
    "heads.no_lm_loss": "The induction demo needs a language model's next-token loss: pick shakespeare-lm.",
}


def say(message_id: str, **params) -> str:
    return MESSAGES[message_id].format(**params)


def _head_axes(n_layer: int, n_head: int, groups: list[str] | None = None):
    x = np.array([f"H{h}" for h in range(n_head)], dtype=object)
    y = np.array([f"{g} L{l}" if g else f"L{l}" for g in (groups or [""]) for l in range(n_layer)], dtype=object)
    return x, y


def ranking_map(weights, query: str, key: str, mean: float) -> go.Figure:
    """weights (n_layer, n_head): each head's weight from the query to the key, laid out like the grid."""
    weights = array32(weights)
    x, y = _head_axes(*weights.shape)
    fig = matrix_figure(weights, x, y, x, y, say("heads.head"), say("heads.layer"),
                        say("heads.ranking_title", query=plain(query), key=plain(key), mean=mean),
                        "%{y} %{x}: %{z:.3f}<extra></extra>", height=max(260, 34 * len(y) + 170))
    fig.data[0].update(texttemplate="%{z:.2f}", textfont=dict(size=10))
    return fig


def ranking_bars(ranked: list[tuple[str, float]]) -> go.Figure:
    """The top BARS heads by weight, largest on top."""
    top = ranked[:BARS]
    names = [name for name, _ in top][::-1]
    values = [w for _, w in top][::-1]
    layout = dict(title=top_title(say("heads.bars_title", n=len(top))), height=max(260, 22 * len(top) + 120),
                  xaxis=dict(title=dict(text=say("heads.weight")), range=[0, 1]),
                  yaxis=dict(type="category"), margin=dict(l=90, r=20, t=60, b=40))
    return unchecked_figure([dict(type="bar", orientation="h", x=values, y=names, marker=dict(color="#2b6cb0"),
                                  text=[f"{v:.2f}" for v in values], textposition="outside",
                                  hovertemplate="%{y}: %{x:.3f}<extra></extra>")], layout)


def _before_after_bars(categories: list[str], before: list[float], after: list[float], heads: str, mode: str,
                       title: str, axis: str) -> go.Figure:
    names = np.array([plain(c) for c in categories], dtype=object)
    traces = [dict(type="bar", name=say("heads.before"), x=names, y=before, marker=dict(color="#718096"),
                   hovertemplate="%{x}: %{y:.3f}<extra></extra>"),
              dict(type="bar", name=say("heads.after", heads=heads, mode=mode), x=names, y=after,
                   marker=dict(color="#c53030"), hovertemplate="%{x}: %{y:.3f}<extra></extra>")]
    layout = dict(title=top_title(title), barmode="group", height=320, yaxis=dict(title=dict(text=axis)),
                  xaxis=dict(type="category"), legend=dict(orientation="h", y=-0.2),
                  margin=dict(l=60, r=20, t=60, b=60))
    return unchecked_figure(traces, layout)


def ablation_outcome(run) -> go.Figure:
    """What the model says with every head on and with the chosen heads off (lab.heads.AblationRun)."""
    heads = ", ".join(run.heads)
    before, after = run.before, run.after
    if run.kind == "DecoderLM":
        tokens = list(dict.fromkeys([t for t, _ in before.top] + [t for t, _ in after.top]))
        shown = [repr(t) for t in tokens]  # quoted: a newline or a space guess stays visible
        p_before, p_after = dict(before.top), dict(after.top)
        return _before_after_bars(shown, [p_before.get(t, 0.0) for t in tokens], [p_after.get(t, 0.0) for t in tokens],
                                  heads, run.mode, say("heads.next_token_title"), say("heads.probability"))
    if run.kind == "EncoderClassifier":
        labels = list(before.probs)
        return _before_after_bars(labels, [before.probs[k] for k in labels], [after.probs[k] for k in labels],
                                  heads, run.mode, say("heads.verdict_title"), say("heads.probability"))
    return _before_after_bars([say("heads.logp")], [before.logp], [after.logp], heads, run.mode,
                              say("heads.translator_title", before=plain(before.output), after=plain(after.output)),
                              say("heads.logp"))


def loss_change(run) -> go.Figure:
    """A language model's per-token loss with the heads off minus with every head on, token by token."""
    if run.kind != "DecoderLM":
        return placeholder(say("heads.loss_only_lm"))
    change = array32(run.after.losses - run.before.losses)
    predicted = run.labels[1:]
    x = position_labels(predicted)
    colours = np.where(change > 0, "#c53030", "#2b6cb0")
    layout = dict(title=top_title(say("heads.loss_title")), height=320,
                  xaxis=dict(type="category", tickmode="array", tickvals=x[:: max(1, len(x) // 40)],
                             ticktext=axis_text(predicted)[:: max(1, len(x) // 40)]),
                  yaxis=dict(title=dict(text=say("heads.loss_change"))), margin=dict(l=60, r=20, t=60, b=60))
    return unchecked_figure([dict(type="bar", x=x, y=change, marker=dict(color=colours),
                                  hovertemplate="predicting %{x}: %{y:+.3f}<extra></extra>")], layout)


def importance_figure(run) -> go.Figure:
    """The damage of switching each head off alone (lab.heads.ImportanceRun), groups stacked, red = worse."""
    groups = list(run.damage)
    damage = np.concatenate([array32(run.damage[g]) for g in groups])
    n_layer, n_head = array32(run.damage[groups[0]]).shape
    x, y = _head_axes(n_layer, n_head, groups if len(groups) > 1 else None)
    bound = float(np.abs(damage).max()) or 1.0
    layout = dict(title=top_title(say("heads.importance_title", measure=run.measure, mode=run.mode)),
                  height=max(260, 34 * len(y) + 170), margin=dict(l=10, r=10, t=100, b=10),
                  xaxis=dict(side="top", type="category", title=dict(text=say("heads.head"))),
                  yaxis=dict(type="category", autorange="reversed", title=dict(text=say("heads.layer"))))
    heatmap = dict(type="heatmap", z=damage, x=x, y=y, colorscale=DAMAGE_SCALE, zmin=-bound, zmax=bound,
                   texttemplate="%{z:.2f}", textfont=dict(size=10), colorbar=dict(title=dict(text=say("heads.damage"))),
                   hovertemplate="%{y} %{x}: %{z:+.3f}<extra></extra>")
    return unchecked_figure([heatmap], layout)


def _lens_rows(n_rows: int) -> np.ndarray:
    return np.array([say("heads.embedding")] + [say("heads.block", layer=l) for l in range(n_rows - 1)], dtype=object)


def lens_table(run) -> go.Figure:
    """Rows: the embedding and each layer; columns: positions; cell: the top guess, coloured by its probability."""
    probs = array32(run.top_probs)
    x, rows = position_labels(run.labels), _lens_rows(probs.shape[0])
    text = np.array([[plain(repr(g)[1:-1]) for g in row] for row in run.guesses], dtype=object)
    fig = matrix_figure(probs, x, rows, axis_text(run.labels), rows, "", say("heads.lens_rows"),
                        say("heads.lens_title"), "after %{y}, at %{x}: %{text} (%{z:.2f})<extra></extra>",
                        height=max(300, 40 * probs.shape[0] + 180))
    fig.data[0].update(text=text, texttemplate="%{text}" if probs.shape[1] <= 40 else "", textfont=dict(size=10))
    return fig


def rank_lines(run) -> go.Figure:
    """One line per position: the rank of the model's final prediction in each layer's guess."""
    rank = array32(run.final_rank) + 1  # (n_layer + 1, T); log scale needs >= 1
    rows = list(_lens_rows(rank.shape[0]))
    x, y, names = [], [], []
    for t in range(rank.shape[1]):  # one trace, lines split by None: 128 traces would draw slowly
        x += rows + [None]
        y += rank[:, t].tolist() + [None]
        names += [f"{t}:{plain(run.labels[t])}"] * len(rows) + [None]
    layout = dict(title=top_title(say("heads.rank_title")), height=340, showlegend=False,
                  yaxis=dict(type="log", title=dict(text=say("heads.rank")), autorange="reversed"),
                  xaxis=dict(type="category"), margin=dict(l=60, r=20, t=60, b=40))
    return unchecked_figure([dict(type="scatter", mode="lines+markers", x=x, y=y, text=names, opacity=0.5,
                                  line=dict(width=1, color="#2b6cb0"), marker=dict(size=4),
                                  hovertemplate="%{text}: rank %{y} after %{x}<extra></extra>")], layout)


def roles_grid(run) -> go.Figure:
    """Every self-attention head coloured by its highest role score, marked with each role it passes."""
    groups = list(next(iter(run.scores.values())))
    scores = {role: np.concatenate([array32(run.scores[role][g]) for g in groups]) for role in run.scores}
    best = np.max(np.stack(list(scores.values())), axis=0)
    n_layer, n_head = array32(run.scores[next(iter(run.scores))][groups[0]]).shape
    x, y = _head_axes(n_layer, n_head, groups if len(groups) > 1 else None)
    marks = np.array([["".join(ROLE_MARKS[r] for r, s in scores.items() if s[i, j] >= run.threshold)
                       for j in range(best.shape[1])] for i in range(best.shape[0])], dtype=object)
    hover = np.array([["<br>".join(f"{r}: {s[i, j]:.2f}" for r, s in scores.items())
                       for j in range(best.shape[1])] for i in range(best.shape[0])], dtype=object)
    legend = dict(text=say("heads.roles_legend"), x=0, y=-0.02, xref="paper", yref="paper", xanchor="left",
                  yanchor="top", showarrow=False)
    layout = dict(title=top_title(say("heads.roles_title", threshold=run.threshold)), annotations=[legend],
                  height=max(260, 34 * len(y) + 200), margin=dict(l=10, r=10, t=100, b=40),
                  xaxis=dict(side="top", type="category"), yaxis=dict(type="category", autorange="reversed"))
    heatmap = dict(type="heatmap", z=best, x=x, y=y, colorscale=COLORSCALE, zmin=0, zmax=1, text=marks,
                   customdata=hover, texttemplate="%{text}", textfont=dict(size=13),
                   colorbar=dict(title=dict(text=say("heads.role_score"))),
                   hovertemplate="%{y} %{x}<br>%{customdata}<extra></extra>")
    return unchecked_figure([heatmap], layout)


def induction_curve(run) -> go.Figure:
    """A language model's loss per token over the repeated sequence; it drops after the repeat if it copies."""
    if run.losses is None:
        return placeholder(say("heads.no_lm_loss"))
    losses = array32(run.losses)
    start = dict(type="line", x0=run.n - 0.5, x1=run.n - 0.5, y0=0, y1=1, xref="x", yref="paper",
                 line=dict(color="gray", dash="dot"))
    layout = dict(title=top_title(say("heads.induction_title", n=run.n)), height=320, shapes=[start],
                  annotations=[dict(x=run.n - 0.5, y=1, xref="x", yref="paper", text=say("heads.second_half"),
                                    showarrow=False, xanchor="left", yanchor="bottom")],
                  xaxis=dict(title=dict(text=say("heads.position"))), yaxis=dict(title=dict(text=say("heads.loss"))),
                  margin=dict(l=60, r=20, t=70, b=50))
    return unchecked_figure([dict(type="scatter", mode="lines", x=np.arange(1, len(losses) + 1), y=losses,
                                  line=dict(color="#2b6cb0"), hovertemplate="predicting token %{x}: %{y:.2f}"
                                  "<extra></extra>")], layout)
