"""What a head does, drawn: the head ranking, what changes when heads are switched off, the importance map,
the logit lens and the heads' roles.

Lesson: a layer x head map is the grid of the Attention tab with one number per head, so
a person finds "their" head where the thumbnails put it. Pure functions of lab/heads.py's
runs, drawn in the language they are given (the catalogue's "heads.*" ids).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from i18n import DEFAULT, render, t
from views.kit import COLORSCALE, array32, axis_text, label_px, matrix_figure, placeholder, plain, position_labels, \
    top_title, unchecked_figure

BARS = 15  # heads listed in a ranking's bar list
DAMAGE_SCALE = [[0, "#2166ac"], [0.5, "#f7f7f7"], [1, "#b2182b"]]  # red: the model does worse without the head
ROLE_MARKS = {"previous-token": "P", "first-token": "F", "duplicate-token": "D", "induction": "I"}
WRITTEN_COLUMNS = 40  # the lens table writes its guesses in the cells up to this many positions (more: hover only)
GUESS_FONT = 10  # px, a written guess; label_px measures the tick labels' 12 px
COLUMN_PX = (24, 64)  # a written column's least and most width: a guess wider than 64 px may cross its neighbour

def _head_axes(n_layer: int, n_head: int, groups: list[str] | None = None):
    x = np.array([f"H{h}" for h in range(n_head)], dtype=object)
    y = np.array([f"{g} L{l}" if g else f"L{l}" for g in (groups or [""]) for l in range(n_layer)], dtype=object)
    return x, y


def ranking_map(weights, query: str, key: str, mean: float, lang: str = DEFAULT) -> go.Figure:
    """weights (n_layer, n_head): each head's weight from the query to the key, laid out like the grid."""
    weights = array32(weights)
    x, y = _head_axes(*weights.shape)
    fig = matrix_figure(weights, x, y, x, y, t("heads.head", lang), t("heads.layer", lang),
                        t("heads.ranking_title", lang, query=plain(query), key_token=plain(key), mean=mean),
                        "%{y} %{x}: %{z:.3f}<extra></extra>", height=max(260, 34 * len(y) + 170))
    fig.data[0].update(texttemplate="%{z:.2f}", textfont=dict(size=10))
    return fig


def ranking_bars(ranked: list[tuple[str, float]], lang: str = DEFAULT) -> go.Figure:
    """The top BARS heads by weight, largest on top."""
    top = ranked[:BARS]
    names = [name for name, _ in top][::-1]
    values = [w for _, w in top][::-1]
    layout = dict(title=top_title(t("heads.bars_title", lang, n=len(top))), height=max(260, 22 * len(top) + 120),
                  xaxis=dict(title=dict(text=t("heads.weight", lang)), range=[0, 1]),
                  yaxis=dict(type="category"), margin=dict(l=90, r=20, t=60, b=40))
    return unchecked_figure([dict(type="bar", orientation="h", x=values, y=names, marker=dict(color="#2b6cb0"),
                                  text=[f"{v:.2f}" for v in values], textposition="outside",
                                  hovertemplate="%{y}: %{x:.3f}<extra></extra>")], layout)


def _before_after_bars(categories: list[str], before: list[float], after: list[float], heads: str, mode: str,
                       title: str, axis: str, lang: str = DEFAULT) -> go.Figure:
    names = np.array([plain(c) for c in categories], dtype=object)
    traces = [dict(type="bar", name=t("heads.before", lang), x=names, y=before, marker=dict(color="#718096"),
                   hovertemplate="%{x}: %{y:.3f}<extra></extra>"),
              dict(type="bar", name=t("heads.after", lang, heads=heads, mode=t(f"heads.mode.{mode}", lang)), x=names, y=after,
                   marker=dict(color="#c53030"), hovertemplate="%{x}: %{y:.3f}<extra></extra>")]
    layout = dict(title=top_title(title), barmode="group", height=320, yaxis=dict(title=dict(text=axis)),
                  xaxis=dict(type="category"), legend=dict(orientation="h", y=-0.2),
                  margin=dict(l=60, r=20, t=60, b=60))
    return unchecked_figure(traces, layout)


def switch_off_outcome(run, lang: str = DEFAULT) -> go.Figure:
    """What the model says with every head on and with the chosen heads off (lab.heads.SwitchOffRun)."""
    heads = ", ".join(run.heads)
    before, after = run.before, run.after
    if run.kind == "DecoderLM":
        tokens = list(dict.fromkeys([tok for tok, _ in before.top] + [tok for tok, _ in after.top]))
        shown = [repr(tok) for tok in tokens]  # quoted: a newline or a space guess stays visible
        p_before, p_after = dict(before.top), dict(after.top)
        return _before_after_bars(shown, [p_before.get(tok, 0.0) for tok in tokens],
                                  [p_after.get(tok, 0.0) for tok in tokens], heads, run.mode,
                                  t("heads.next_token_title", lang), t("heads.probability", lang), lang)
    if run.kind == "EncoderClassifier":
        labels = list(before.probs)  # the class names, shown in the reader's language
        return _before_after_bars([t(f"sentiment.label.{k}", lang) for k in labels], [before.probs[k] for k in labels],
                                  [after.probs[k] for k in labels],
                                  heads, run.mode, t("heads.verdict_title", lang), t("heads.probability", lang), lang)
    return _before_after_bars([t("heads.logp", lang)], [before.logp], [after.logp], heads, run.mode,
                              t("heads.translator_title", lang, before=plain(before.output), after=plain(after.output)),
                              t("heads.logp", lang), lang)


def downstream(run, lang: str = DEFAULT) -> go.Figure:
    """Every head's weight from the link's query to its key with the heads off minus with every head on
    (lab.heads.Downstream): the switched-off heads marked, their own weight unchanged, later layers moved."""
    d = run.downstream
    if d is None:
        return placeholder(t("heads.downstream_none", lang), height=160)
    change = array32(d.after - d.before)
    x, y = _head_axes(*change.shape)
    bound = max(float(np.abs(change).max()), 0.05)
    marks = np.array([[t("heads.off_mark", lang) if (l, h) in d.off else f"{change[l, h]:+.2f}"
                       for h in range(change.shape[1])] for l in range(change.shape[0])], dtype=object)
    hover = np.array([[f"{d.before[l, h]:.3f} → {d.after[l, h]:.3f}" for h in range(change.shape[1])]
                      for l in range(change.shape[0])], dtype=object)
    title = t("heads.downstream_title", lang, query=plain(d.query), key_token=plain(d.key), heads=", ".join(run.heads))
    layout = dict(title=top_title(title), height=max(260, 26 * len(y) + 150), margin=dict(l=10, r=10, t=90, b=10),
                  xaxis=dict(side="top", type="category", title=dict(text=t("heads.head", lang))),
                  yaxis=dict(type="category", autorange="reversed", title=dict(text=t("heads.layer", lang))))
    heatmap = dict(type="heatmap", z=change, x=x, y=y, colorscale=DAMAGE_SCALE, zmin=-bound, zmax=bound,
                   text=marks, customdata=hover, texttemplate="%{text}", textfont=dict(size=10),
                   colorbar=dict(title=dict(text=t("heads.weight_change", lang))),
                   hovertemplate=t("heads.downstream_hover", lang))
    return unchecked_figure([heatmap], layout)


def loss_change(run, lang: str = DEFAULT) -> go.Figure:
    """A language model's per-token loss with the heads off minus with every head on, token by token."""
    if run.kind != "DecoderLM":
        return placeholder(t("heads.loss_only_lm", lang))
    change = array32(run.after.losses - run.before.losses)
    predicted = run.labels[1:]
    x = position_labels(predicted, lang)
    colours = np.where(change > 0, "#c53030", "#2b6cb0")
    layout = dict(title=top_title(t("heads.loss_title", lang)), height=320,
                  xaxis=dict(type="category", tickmode="array", tickvals=x[:: max(1, len(x) // 40)],
                             ticktext=axis_text(predicted, lang)[:: max(1, len(x) // 40)]),
                  yaxis=dict(title=dict(text=t("heads.loss_change", lang))), margin=dict(l=60, r=20, t=60, b=60))
    return unchecked_figure([dict(type="bar", x=x, y=change, marker=dict(color=colours),
                                  hovertemplate=t("heads.loss_hover", lang))], layout)


def importance_figure(run, lang: str = DEFAULT) -> go.Figure:
    """The damage of switching each head off alone (lab.heads.ImportanceRun), groups stacked, red = worse."""
    groups = list(run.damage)
    damage = np.concatenate([array32(run.damage[g]) for g in groups])
    n_layer, n_head = array32(run.damage[groups[0]]).shape
    x, y = _head_axes(n_layer, n_head, groups if len(groups) > 1 else None)
    bound = float(np.abs(damage).max()) or 1.0
    layout = dict(title=top_title(t("heads.importance_title", lang, measure=t(f"heads.measure.{run.kind}", lang),
                                         mode=t(f"heads.mode.{run.mode}", lang))),
                  height=max(260, 34 * len(y) + 170), margin=dict(l=10, r=10, t=100, b=10),
                  xaxis=dict(side="top", type="category", title=dict(text=t("heads.head", lang))),
                  yaxis=dict(type="category", autorange="reversed", title=dict(text=t("heads.layer", lang))))
    heatmap = dict(type="heatmap", z=damage, x=x, y=y, colorscale=DAMAGE_SCALE, zmin=-bound, zmax=bound,
                   texttemplate="%{z:.2f}", textfont=dict(size=10),
                   colorbar=dict(title=dict(text=t("heads.damage", lang))),
                   hovertemplate="%{y} %{x}: %{z:+.3f}<extra></extra>")
    return unchecked_figure([heatmap], layout)


def _lens_rows(n_rows: int, lang: str = DEFAULT) -> np.ndarray:
    names = [t("heads.embedding", lang)] + [t("heads.block", lang, layer=l) for l in range(n_rows - 1)]
    return np.array(names, dtype=object)


def lens_table(run, lang: str = DEFAULT) -> go.Figure:
    """Rows: the embedding and each layer; columns: positions; cell: the top guess, coloured by its probability.
    Up to WRITTEN_COLUMNS positions a guess is written where it first appears down its column (a blank cell: as
    above), and every cell names its guess on hover: plotly draws each written cell on its own, which made the
    whole table of a 30-layer LLM slow to draw, and the changes are what the lesson reads."""
    probs = array32(run.top_probs)
    x, rows = position_labels(run.labels, lang), _lens_rows(probs.shape[0], lang)
    guesses = np.array([[plain(repr(g)[1:-1]) for g in row] for row in run.guesses], dtype=object)
    written = probs.shape[1] <= WRITTEN_COLUMNS
    fig = matrix_figure(probs, x, rows, axis_text(run.labels, lang), rows, "", t("heads.lens_rows", lang),
                        t("heads.lens_title_written" if written else "heads.lens_title", lang),
                        t("heads.lens_hover", lang), height=max(300, 40 * probs.shape[0] + 180))
    fig.data[0].update(customdata=guesses)  # the hover names every cell's guess
    if written:
        first = np.ones(guesses.shape, dtype=bool)  # where a guess first appears down its column
        first[1:] = guesses[1:] != guesses[:-1]
        fig.data[0].update(text=np.where(first, guesses, ""), texttemplate="%{text}", textfont=dict(size=GUESS_FONT))
        # the width at which written guesses stop crossing each other: a narrower screen (a phone) draws the table
        # this wide and scrolls it sideways (ui/page.js), as a phone shows any wide table
        widest = max((label_px(g) for g in guesses[first]), default=0.0) * GUESS_FONT / 12 + 6
        margin = fig.layout.margin
        fig.layout["meta"] = dict(min_width=round(margin.l + margin.r + probs.shape[1] * min(max(widest, COLUMN_PX[0]),
                                                                                           COLUMN_PX[1])))
    return fig


def rank_lines(run, lang: str = DEFAULT) -> go.Figure:
    """One line per position: the rank of the model's final prediction in each layer's guess."""
    rank = array32(run.final_rank) + 1  # (n_layer + 1, T), counted from 1: the top guess is 1 (a log axis needs >= 1)
    rows = list(_lens_rows(rank.shape[0], lang))
    x, y, names = [], [], []
    for pos in range(rank.shape[1]):  # one trace, lines split by None: 128 traces would draw slowly
        x += rows + [None]
        y += rank[:, pos].tolist() + [None]
        names += [f"{pos}:{plain(render(run.labels[pos], lang))}"] * len(rows) + [None]
    layout = dict(title=top_title(t("heads.rank_title", lang)), height=340, showlegend=False,
                  yaxis=dict(type="log", title=dict(text=t("heads.rank", lang)), autorange="reversed"),
                  xaxis=dict(type="category"), margin=dict(l=70, r=60, t=60, b=60))
    # lines without markers: plotly draws each marker on its own, a 30-layer LLM's ~1000 of them slowly; the last
    # layer's tilted label then sits at the right edge; the margins hold the labels (a push draws the figure twice)
    return unchecked_figure([dict(type="scatter", mode="lines", x=x, y=y, text=names, opacity=0.5,
                                  line=dict(width=1, color="#2b6cb0"),
                                  hovertemplate=t("heads.rank_hover", lang))], layout)


def roles_grid(run, lang: str = DEFAULT) -> go.Figure:
    """Every self-attention head coloured by its highest role score, marked with each role it passes."""
    groups = list(next(iter(run.scores.values())))
    scores = {role: np.concatenate([array32(run.scores[role][g]) for g in groups]) for role in run.scores}
    best = np.max(np.stack(list(scores.values())), axis=0)
    n_layer, n_head = array32(run.scores[next(iter(run.scores))][groups[0]]).shape
    x, y = _head_axes(n_layer, n_head, groups if len(groups) > 1 else None)
    marks = np.array([["".join(ROLE_MARKS[r] for r, s in scores.items() if s[i, j] >= run.threshold)
                       for j in range(best.shape[1])] for i in range(best.shape[0])], dtype=object)
    hover = np.array([["<br>".join(f"{t(f'heads.role.{r}', lang)}: {s[i, j]:.2f}" for r, s in scores.items())
                       for j in range(best.shape[1])] for i in range(best.shape[0])], dtype=object)
    legend = dict(text=t("heads.roles_legend", lang), x=0, y=-0.02, xref="paper", yref="paper", xanchor="left",
                  yanchor="top", showarrow=False)
    layout = dict(title=top_title(t("heads.roles_title", lang, threshold=run.threshold)), annotations=[legend],
                  height=max(260, 34 * len(y) + 200), margin=dict(l=10, r=10, t=100, b=40),
                  xaxis=dict(side="top", type="category"), yaxis=dict(type="category", autorange="reversed"))
    heatmap = dict(type="heatmap", z=best, x=x, y=y, colorscale=COLORSCALE, zmin=0, zmax=1, text=marks,
                   customdata=hover, texttemplate="%{text}", textfont=dict(size=13),
                   colorbar=dict(title=dict(text=t("heads.role_score", lang))),
                   hovertemplate="%{y} %{x}<br>%{customdata}<extra></extra>")
    return unchecked_figure([heatmap], layout)


TOP_ROLES = 5  # heads listed per role


def roles_table(run, lang: str = DEFAULT) -> go.Figure:
    """For each role, its TOP_ROLES heads by score, highest first ("L18 H6 · 0.93")."""
    columns, cells = [], []
    for role, by_group in run.scores.items():
        group, scores = next(iter(by_group.items()))
        scores = array32(scores)
        order = np.argsort(-scores, axis=None)[:TOP_ROLES]
        prefix = f"{group} " if len(by_group) > 1 else ""
        columns.append(f"<b>{plain(t(f'heads.role.{role}', lang))}</b>")
        cells.append([f"{prefix}L{i // scores.shape[1]} H{i % scores.shape[1]} · {scores.flat[i]:.2f}"
                      for i in order])
    ranks = [t("heads.rank_n", lang, n=n + 1) for n in range(TOP_ROLES)]
    trace = dict(type="table", header=dict(values=["", *columns], fill=dict(color="#eef2fb"), align="left"),
                 cells=dict(values=[ranks, *cells], align="left", height=26,
                            fill=dict(color=[["white", "#f7f9fc"] * TOP_ROLES])))
    return unchecked_figure([trace], dict(title=top_title(t("heads.roles_rank_title", lang)),
                                          height=60 + 30 * (TOP_ROLES + 1), margin=dict(l=10, r=10, t=50, b=10)))


def induction_curve(run, lang: str = DEFAULT) -> go.Figure:
    """A language model's loss per token over the repeated sequence; it drops after the repeat if it copies."""
    if run.losses is None:
        return placeholder(t("heads.no_lm_loss", lang))
    losses = array32(run.losses)
    start = dict(type="line", x0=run.n - 0.5, x1=run.n - 0.5, y0=0, y1=1, xref="x", yref="paper",
                 line=dict(color="gray", dash="dot"))
    layout = dict(title=top_title(t("heads.induction_title", lang, n=run.n)), height=320, shapes=[start],
                  annotations=[dict(x=run.n - 0.5, y=1, xref="x", yref="paper", text=t("heads.second_half", lang),
                                    showarrow=False, xanchor="left", yanchor="bottom")],
                  xaxis=dict(title=dict(text=t("heads.position", lang))),
                  yaxis=dict(title=dict(text=t("heads.loss", lang))),
                  margin=dict(l=60, r=20, t=70, b=50))
    return unchecked_figure([dict(type="scatter", mode="lines", x=np.arange(1, len(losses) + 1), y=losses,
                                  line=dict(color="#2b6cb0"), hovertemplate=t("heads.induction_hover", lang))], layout)
