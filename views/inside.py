"""Inside a real LLM, drawn: one figure and one sentence for each of the experiments of lab/inside.py, the
information flow graph and what one head writes. Pure functions of their runs, in the language they are given."""

from __future__ import annotations

import numpy as np

from i18n import DEFAULT, plural, render, t
from lab.models import title
from views.attention import heatmap_grid
from views.kit import placeholder, plain, top_title, unchecked_figure

COLOURS = {"rotary": "#2b6cb0", "learned": "#c05621", "shared": "#2b6cb0", "unshared": "#a0aec0",
           "local": "#319795", "global": "#805ad5"}
# the flow's edges: a colour per kind, a width per importance step (plotly draws one width per trace)
EDGE_COLOURS = {"head": "#2b6cb0", "through_attention": "#a0aec0", "ffn": "#dd6b20", "through_ffn": "#a0aec0"}
WIDTHS = (0.1, 0.2, 0.35, 1.01)  # upper ends of the importance steps, drawn 1, 2.5, 4 and 6 px wide


def rotary_figure(change: dict[str, np.ndarray], offset: int, names: dict[str, str], lang: str = DEFAULT):
    """Each layer's largest attention-weight change when the text is read `offset` positions later, per model
    (names: model -> its kind of positions, "rotary" or "learned"); a log scale, floored at 1e-7."""
    traces = [dict(type="scatter", mode="lines+markers",
                   name=t(f"inside.positions.{kind}", lang, model=render(title(model), lang)),
                   x=list(range(len(change[model]))), y=np.maximum(change[model], 1e-7).astype(np.float64),
                   line=dict(color=COLOURS[kind]), hovertemplate="L%{x}: %{y:.2g}<extra></extra>")
              for model, kind in names.items()]
    layout = dict(title=top_title(t("inside.rotary_title", lang, offset=offset)), height=340,
                  xaxis=dict(title=dict(text=t("heads.layer", lang))),
                  yaxis=dict(type="log", title=dict(text=t("inside.largest_change", lang)), exponentformat="e"),
                  legend=dict(orientation="h", y=-0.25), margin=dict(l=60, r=20, t=60, b=80))
    return unchecked_figure(traces, layout)


def kv_figure(kv: dict[str, tuple[int, int]], heads: dict[str, tuple[int, int]], lang: str = DEFAULT):
    """KV-cache kilobytes a token, as each LLM keeps them and with one key/value head per query head.
    heads: model -> (n_kv_head, n_head).

    Bars lie along the models' names: standing, on a phone the two names ran together under them and plotly shrank
    the labels over the bars to unreadable."""
    names = list(kv)
    traces = [dict(type="bar", orientation="h", name=t(f"inside.kv.{which}", lang),
                   y=[_two_lines(render(title(n), lang)) for n in names], x=[kv[n][i] / 1024 for n in names],
                   marker=dict(color=COLOURS[which]),
                   text=[t("inside.kv_bar", lang, kb=kv[n][i] / 1024, heads=heads[n][i]) for n in names],
                   textposition="outside", cliponaxis=False, hovertemplate="%{text}<extra></extra>")
              for i, which in enumerate(("shared", "unshared"))]
    top = max((kb for pair in kv.values() for kb in pair), default=1024) / 1024
    # room right of the longest bar for the label written after it (a phone's plot is about 200 px wide)
    layout = dict(title=top_title(t("inside.kv_title", lang)), barmode="group", height=340,
                  xaxis=dict(title=dict(text=t("inside.kb_per_token", lang)), range=[0, 2.2 * top]),
                  yaxis=dict(autorange="reversed", automargin=True),
                  legend=dict(orientation="h", y=-0.25),
                  margin=dict(l=10, r=20, t=60, b=70))
    return unchecked_figure(traces, layout)


def _two_lines(name: str) -> str:
    """A long model name broken after its last hyphen ("SmolLM2-135M-<br>Instruct"), to leave a phone's bars room."""
    head, _, tail = name.rpartition("-")
    return f"{head}-<br>{tail}" if head and len(name) > 14 else name


def shared_heads_figure(shared, lang: str = DEFAULT):
    return heatmap_grid(shared.attn[None], shared.labels, shared.labels, [f"L{shared.layer}"],
                        [f"H{h}<br>kv{shared.kv}" for h in shared.heads],
                        t("inside.shared_title", lang, layer=shared.layer, kv=shared.kv, n=len(shared.heads)), lang,
                        tokens=True)


def sink_figure(sink, lang: str = DEFAULT):
    share = np.asarray(sink.share, dtype=np.float64)
    layout = dict(title=top_title(t("inside.sink_title", lang, model=render(title(sink.name), lang))), height=320,
                  xaxis=dict(title=dict(text=t("heads.layer", lang))),
                  yaxis=dict(title=dict(text=t("inside.first_token_share", lang)), range=[0, 1]),
                  margin=dict(l=60, r=20, t=60, b=50))
    return unchecked_figure([dict(type="bar", x=list(range(len(share))), y=share, marker=dict(color="#2b6cb0"),
                                  hovertemplate="L%{x}: %{y:.2f}<extra></extra>")], layout)


def sink_sentence(sink, lang: str = DEFAULT) -> str:
    shown = lambda top: t("common.list_sep", lang).join(f"`{plain(repr(w))}` {p:.2f}" for w, p in top[:3])  # noqa: E731
    return t("inside.sink_sentence", lang, mean=float(np.mean(sink.share)), before=shown(sink.before),
             after=shown(sink.after))


def norms_figure(norms, lang: str = DEFAULT):
    """Per layer: the largest |mean| / RMS of the stream over the text's tokens, and the smallest cosine between
    RMSNorm's and LayerNorm's outputs."""
    x = list(range(norms.cosine.shape[0]))
    traces = [dict(type="scatter", mode="lines+markers", name=t("inside.norms.mean", lang), x=x,
                   y=norms.mean_over_rms.max(1).astype(np.float64), line=dict(color="#dd6b20")),
              dict(type="scatter", mode="lines+markers", name=t("inside.norms.cosine", lang), x=x,
                   y=norms.cosine.min(1).astype(np.float64), line=dict(color="#2b6cb0"))]
    layout = dict(title=top_title(t("inside.norms_title", lang, model=render(title(norms.name), lang))), height=340,
                  xaxis=dict(title=dict(text=t("heads.layer", lang))), yaxis=dict(range=[0, 1.05]),
                  legend=dict(orientation="h", y=-0.25), margin=dict(l=50, r=20, t=60, b=80))
    return unchecked_figure(traces, layout)


def reach_figure(reach, lang: str = DEFAULT):
    """How far back each of Gemma's layers looks, local layers and global ones in their own colours."""
    x = list(range(len(reach.mean)))
    kinds = ["local" if i in reach.local_layers else "global" for i in x]
    traces = [dict(type="bar", name=t(f"inside.reach.{kind}", lang, window=reach.window),
                   x=[i for i in x if kinds[i] == kind], y=[float(reach.mean[i]) for i in x if kinds[i] == kind],
                   marker=dict(color=COLOURS[kind]), hovertemplate="L%{x}: %{y:.0f}<extra></extra>")
              for kind in ("local", "global")]
    traces.append(dict(type="scatter", mode="markers", name=t("inside.reach.farthest", lang), x=x,
                       y=reach.farthest.astype(np.float64), marker=dict(symbol="triangle-up", size=9, color="#1a202c"),
                       hovertemplate="L%{x}: %{y:.0f}<extra></extra>"))
    layout = dict(title=top_title(t("inside.reach_title", lang, n=reach.n_tokens)), height=360,
                  xaxis=dict(title=dict(text=t("heads.layer", lang))),
                  yaxis=dict(title=dict(text=t("inside.tokens_back", lang))),
                  shapes=[dict(type="line", xref="paper", x0=0, x1=1, y0=reach.window, y1=reach.window,
                               line=dict(dash="dash", color="#718096"))],
                  legend=dict(orientation="h", y=-0.25), margin=dict(l=60, r=20, t=60, b=80))
    return unchecked_figure(traces, layout)


def _step(importance: float) -> int:
    return next(i for i, top in enumerate(WIDTHS) if importance < top)


def flow_figure(run, routes, token: int, threshold: float, lang: str = DEFAULT):
    """The routes into `token`'s last stream: tokens across, layers up; a stream at the bottom of its layer, after
    attention half a layer up; heads' edges blue, feed-forward orange, a stream carried on grey."""
    n_layer = run.graph.shape[0]
    segments: dict[tuple[str, int], list] = {}
    hover_x, hover_y, hover_text = [], [], []
    for r in routes:
        if r.kind in ("head", "through_attention"):
            start, end = (r.source, r.layer), (r.target, r.layer + 0.5)
        else:  # a feed-forward block writes between the attention and the next layer
            start, end = ((r.target + 0.3, r.layer + 0.75) if r.kind == "ffn" else (r.source, r.layer + 0.5)), \
                (r.target, r.layer + 1)
        xs, ys = segments.setdefault((r.kind, _step(r.importance)), ([], []))
        xs.extend([start[0], end[0], None])
        ys.extend([start[1], end[1], None])
        if r.kind == "head":
            hover_x.append((start[0] + end[0]) / 2)
            hover_y.append((start[1] + end[1]) / 2)
            hover_text.append(t("inside.flow_edge", lang, layer=r.layer, head=r.head, source=plain(run.labels[r.source]),
                                target=plain(run.labels[r.target]), share=r.importance))
    traces = [dict(type="scatter", mode="lines", x=xs, y=ys, hoverinfo="skip", showlegend=False,
                   line=dict(color=EDGE_COLOURS[kind], width=(1, 2.5, 4, 6)[step]))
              for (kind, step), (xs, ys) in sorted(segments.items())]
    traces.append(dict(type="scatter", mode="markers", x=hover_x, y=hover_y, text=hover_text, showlegend=False,
                       marker=dict(size=6, color="#2b6cb0", opacity=0.4), hovertemplate="%{text}<extra></extra>"))
    traces.append(dict(type="scatter", mode="markers", x=[token], y=[n_layer], showlegend=False, hoverinfo="skip",
                       marker=dict(size=14, color="#c53030", symbol="star")))
    labels = [f"{i}:{plain(label)}" for i, label in enumerate(run.labels)]
    layout = dict(title=top_title(t("inside.flow_title", lang, token=plain(repr(run.labels[token])), position=token,
                                    threshold=threshold, edges=plural(len(routes), "edge", lang))),
                  height=max(360, 24 * n_layer + 160), plot_bgcolor="white",
                  xaxis=dict(tickmode="array", tickvals=list(range(len(labels))), ticktext=labels, tickangle=-60,
                             range=[-0.6, len(labels) - 0.4], showgrid=True, gridcolor="#edf2f7"),
                  yaxis=dict(title=dict(text=t("heads.layer", lang)), range=[-0.3, n_layer + 0.4], dtick=1,
                             showgrid=True, gridcolor="#edf2f7", zeroline=False),
                  margin=dict(l=60, r=20, t=60, b=110))
    return unchecked_figure(traces, layout)


def no_head(lang: str = DEFAULT):
    """What the head panel says when no head's edge reaches the token at the threshold (a small model's short text
    at 0.05 often has none): not an empty plot named after a head nobody picked."""
    return placeholder(t("inside.no_head", lang), height=160, width_px=300)  # beside the graph, or a phone's width


def head_bars(layer: int, head: int, token_label: str, promoted, suppressed, lang: str = DEFAULT):
    """What head `head` of `layer` writes at a token, read as logits: the tokens it pushes up (right) and down."""
    words = [plain(repr(w)) for w, _ in suppressed[::-1]] + [plain(repr(w)) for w, _ in promoted[::-1]]
    values = [v for _, v in suppressed[::-1]] + [v for _, v in promoted[::-1]]
    layout = dict(title=top_title(t("inside.head_title", lang, layer=layer, head=head, token=plain(repr(token_label)))),
                  height=max(300, 22 * len(words) + 110), xaxis=dict(title=dict(text=t("inside.logit_push", lang))),
                  # one row per bar, labelled with its word alone: a word may be pushed both ways, or twice
                  yaxis=dict(tickvals=list(range(len(words))), ticktext=words), margin=dict(l=130, r=20, t=60, b=50))
    return unchecked_figure([dict(type="bar", orientation="h", x=values, y=list(range(len(words))), customdata=words,
                                  marker=dict(color=["#c53030" if v < 0 else "#2f855a" for v in values]),
                                  hovertemplate="%{customdata}: %{x:.2f}<extra></extra>")], layout)
