"""Figures and tables for the Concepts tab, drawn from the results of `transformer_core.analysis.concepts`.

Every function here only lays out numbers the core already computed; none of
them runs a model or redoes attention.
"""

from __future__ import annotations

import itertools

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from i18n import plural, t
from transformer_core.analysis.concepts import ComponentCount, HeadCount, OrderVariant, ScalingPoint, TracedRun, WeightedAverage

from .attention import head_heatmap

DIGITS = 4  # decimals shown in tables


def _r(x: float) -> float:
    return round(float(x), DIGITS)


def _vec(t: torch.Tensor) -> str:
    return "(" + ", ".join(f"{v:.3f}" for v in t.tolist()) + ")"


# 1. weighted average ------------------------------------------------------------------------

def vector_labels(n: int, letter: str = "x") -> list[str]:
    return [f"{letter}{i + 1}" for i in range(n)]


def weights_figure(wa: WeightedAverage, lang: str = "en") -> go.Figure:
    """The (n, n) weight matrix: row i says how much output i takes from each value."""
    labels = vector_labels(len(wa.x))
    formula = "softmax(q kᵀ/√d)" if wa.scaled else "softmax(q kᵀ)"
    return head_heatmap(wa.attn, labels, labels, t("concepts.weights_title", lang, formula=formula), lang)


def weighted_sums(wa: WeightedAverage, lang: str = "en") -> str:
    """Markdown: each output written out as the weighted sum of the value vectors."""
    lines = []
    for i, (row, y) in enumerate(zip(wa.attn, wa.y)):
        terms = " + ".join(f"{w:.3f}·v{j + 1}" for j, w in enumerate(row.tolist()))
        lines.append(t("concepts.sum_line", lang, i=i + 1, terms=terms, vector=_vec(y), total=row.sum()))
    return "\n".join(lines)


def matrix_rows(m: torch.Tensor, labels: list[str]) -> list[list]:
    """A matrix as table rows, one labelled row per vector."""
    return [[label, *map(_r, row.tolist())] for label, row in zip(labels, m)]


def vectors_figure(wa: WeightedAverage, lang: str = "en") -> go.Figure:
    """Values and outputs in the plane of their first two coordinates: each output lies
    inside the polygon spanned by the values, because it is their weighted average."""
    v, y = wa.v, wa.y
    fig = go.Figure()
    if v.shape[1] < 2:
        fig.update_layout(title=t("concepts.one_coordinate", lang))
        return fig
    hull = v[:, :2].tolist()
    fig.add_trace(go.Scatter(x=[p[0] for p in hull + hull[:1]], y=[p[1] for p in hull + hull[:1]], mode="lines",
                             line=dict(color="lightgray", dash="dot"), name=t("concepts.between", lang), hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=v[:, 0].tolist(), y=v[:, 1].tolist(), mode="markers+text", name=t("concepts.values_v", lang),
                             text=vector_labels(len(v), "v"), textposition="top center", marker=dict(size=11)))
    fig.add_trace(go.Scatter(x=y[:, 0].tolist(), y=y[:, 1].tolist(), mode="markers+text", name=t("concepts.outputs_y", lang),
                             text=vector_labels(len(y), "y"), textposition="bottom center",
                             marker=dict(size=11, symbol="diamond")))
    title = t("concepts.first_two", lang) if v.shape[1] > 2 else ""
    fig.update_layout(title=title, margin=dict(l=10, r=10, t=40, b=10), height=380)
    fig.update_yaxes(scaleanchor="x", scaleratio=1)
    return fig


# 2. why divide by √d --------------------------------------------------------------------------

def scaling_rows(points: list[ScalingPoint]) -> list[list]:
    """d, mean largest weight and mean softmax-gradient size, scaled and unscaled."""
    return [[p.d, _r(p.max_weight["scaled"].mean()), _r(p.max_weight["unscaled"].mean()),
             _r(p.grad_norm["scaled"].mean()), _r(p.grad_norm["unscaled"].mean())] for p in points]


def scaling_headers(lang: str = "en") -> list[str]:
    return ["d", *(t(f"concepts.h.{h}", lang) for h in ("max_scaled", "max_raw", "grad_scaled", "grad_raw"))]


_COLORS = {"scaled": "#1f77b4", "unscaled": "#d62728"}


def scaling_figure(points: list[ScalingPoint], chosen_d: int, lang: str = "en") -> go.Figure:
    """Mean (line) and 10–90% range (band) over queries, against d on a log axis."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=(t("concepts.largest_weight", lang), t("concepts.grad_size", lang)))
    ds = [p.d for p in points]
    for col, field in ((1, "max_weight"), (2, "grad_norm")):
        for key in ("scaled", "unscaled"):
            values = [getattr(p, field)[key] for p in points]
            lo = [_r(v.quantile(0.1)) for v in values]
            hi = [_r(v.quantile(0.9)) for v in values]
            fig.add_trace(go.Scatter(x=ds + ds[::-1], y=hi + lo[::-1], fill="toself", fillcolor=_COLORS[key],
                                     opacity=0.15, line=dict(width=0), hoverinfo="skip", showlegend=False),
                          row=1, col=col)
            fig.add_trace(go.Scatter(x=ds, y=[_r(v.mean()) for v in values], mode="lines+markers",
                                     line=dict(color=_COLORS[key]), name=t(f"concepts.name.{key}", lang),
                                     showlegend=col == 1),
                          row=1, col=col)
    fig.add_vline(x=chosen_d, line=dict(color="gray", dash="dash"))
    # labels at the powers of ten only: plotly's 2 and 5 between them ran into each other on a phone
    fig.update_xaxes(type="log", dtick=1, title=t("concepts.d_axis", lang))
    fig.update_yaxes(range=[0, 1.02], row=1, col=1)
    # the legend under the panels: at its side it took a third of a phone's width from them
    fig.update_layout(height=400, margin=dict(l=10, r=10, t=40, b=10),
                      legend=dict(orientation="h", x=0.5, xanchor="center", y=-0.22, yanchor="top"))
    return fig


def chosen_d_figure(point: ScalingPoint, n_rows: int = 6, lang: str = "en") -> go.Figure:
    """A few queries' weight rows at the chosen d, side by side: spread out vs one-hot."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=[t("concepts.chosen_title", lang, name=t(f"concepts.name.{k}", lang),
                                                          d=point.d) for k in ("scaled", "unscaled")])
    for col, key in enumerate(("scaled", "unscaled"), start=1):
        fig.add_trace(go.Heatmap(z=point.attn[key][:n_rows].tolist(), coloraxis="coloraxis",
                                 hovertemplate=t("concepts.chosen_hover", lang)), row=1, col=col)
    fig.update_xaxes(title=t("figure.key", lang))
    fig.update_yaxes(autorange="reversed")
    fig.update_yaxes(title=t("figure.query", lang), row=1, col=1)  # the right panel's ran into the left one's rows
    fig.update_layout(coloraxis=dict(colorscale="Blues", cmin=0, cmax=1), height=300,
                      margin=dict(l=10, r=10, t=40, b=10))
    return fig


# 3. order ------------------------------------------------------------------------------------

def order_figure(variants: list[OrderVariant], shuffled_labels: list[str], lang: str = "en") -> go.Figure:
    """Per position of the shuffled sentence: distance between its output and the
    output the same token had in the original sentence. Zero everywhere = order ignored."""
    fig = go.Figure([go.Bar(x=list(range(len(shuffled_labels))), y=[_r(d) for d in v.mismatch.tolist()],
                             name=t(f"concepts.variant.{v.name}", lang))
                     for v in variants])
    fig.update_xaxes(tickmode="array", tickvals=list(range(len(shuffled_labels))), ticktext=shuffled_labels,
                     title=t("concepts.order_x", lang))
    fig.update_yaxes(title=t("concepts.order_y", lang))
    fig.update_layout(barmode="group", height=360, margin=dict(l=10, r=10, t=30, b=10))
    return fig


def verdict_rows(variants: list[OrderVariant], class_names: list[str], lang: str = "en") -> list[list]:
    """Per model variant: largest output mismatch and P(class) before and after the shuffle."""
    rows = []
    for v in variants:
        for sentence, probs in (("original", v.probs), ("shuffled", v.probs_shuffled)):
            verdict = _class_name(class_names[int(probs.argmax())], lang)
            rows.append([t(f"concepts.variant.{v.name}", lang), t(f"concepts.{sentence}", lang), verdict,
                         *map(_r, probs.tolist()), _r(v.mismatch.max())])
    return rows


def _class_name(name: str, lang: str) -> str:
    """A class label in `lang`: the sentiment classes have catalogue entries, other names stay as they are."""
    return t(f"sentiment.label.{name}", lang) if name in ("positive", "negative") else name


def verdict_headers(class_names: list[str], lang: str = "en") -> list[str]:
    return [t("concepts.h.model", lang), t("concepts.h.sentence", lang), t("concepts.h.verdict", lang),
            *[t("concepts.h.p", lang, name=_class_name(c, lang)) for c in class_names], t("concepts.h.mismatch", lang)]


# 4. positions --------------------------------------------------------------------------------

def positions_figure(pe: torch.Tensor, similarity: torch.Tensor, title: str, lang: str = "en") -> go.Figure:
    """Left: the table (positions x dimensions); right: dot products between positions."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=(t("concepts.position_vectors", lang),
                                                        t("concepts.dot_positions", lang)),
                        horizontal_spacing=0.12)
    fig.add_trace(go.Heatmap(z=pe.tolist(), colorscale="RdBu", zmid=0, colorbar=dict(x=0.44),
                             hovertemplate=t("concepts.pe_hover", lang)), row=1, col=1)
    fig.add_trace(go.Heatmap(z=similarity.tolist(), colorscale="Viridis",
                             hovertemplate=t("concepts.sim_hover", lang)), row=1, col=2)
    fig.update_xaxes(title=t("concepts.dimension", lang), row=1, col=1)
    fig.update_xaxes(title=t("concepts.position", lang), row=1, col=2)
    fig.update_yaxes(title=t("concepts.position", lang), autorange="reversed")
    fig.update_layout(title=title, height=420, margin=dict(l=10, r=10, t=70, b=10))
    return fig


# 5. parameters -------------------------------------------------------------------------------

def head_headers(lang: str = "en") -> list[str]:
    return [t("concepts.h.heads", lang), "d_head", "W_q, W_k, W_v", "W_o", t("concepts.h.total", lang)]


def param_headers(lang: str = "en") -> list[str]:
    return [t(f"concepts.h.{h}", lang) for h in ("component", "tensors", "parameters", "note")]


def head_rows(counts: list[HeadCount]) -> list[list]:
    return [[c.n_head, c.d_head, c.qkv, c.out, c.total] for c in counts]


def head_figure(counts: list[HeadCount], lang: str = "en") -> go.Figure:
    """Stacked bars: the Q/K/V part and the output projection, equal for every head count."""
    x = [plural(c.n_head, "head", lang) for c in counts]
    fig = go.Figure([go.Bar(x=x, y=[c.qkv for c in counts], name="W_q, W_k, W_v"),
                     go.Bar(x=x, y=[c.out for c in counts], name="W_o")])
    fig.update_layout(barmode="stack", height=300, yaxis_title=t("concepts.parameters", lang), margin=dict(l=10, r=10, t=30, b=10))
    return fig


def parameter_rows(model_name: str, table: list[ComponentCount], lang: str = "en") -> list[list]:
    """One model's components and a total row (the sum of the rows above it)."""
    rows = [[f"{model_name}: {c.component}", c.tensors, c.params,
             t("concepts.tied", lang, name=c.shared_with) if c.shared_with else ""] for c in table]
    rows.append([f"{model_name}: TOTAL", sum(c.tensors for c in table), sum(c.params for c in table), ""])
    return rows


# 6. tracing ----------------------------------------------------------------------------------

def step_headers(lang: str = "en") -> list[str]:
    return [t(f"concepts.h.{h}", lang) for h in ("step", "tensor", "shape", "what")]


def loss_headers(lang: str = "en") -> list[str]:
    return [t(f"concepts.h.{h}", lang) for h in ("batch", "position", "decoder_input", "target", "p_target", "ce",
                                                  "ce_smoothed")]


def meaning(step, run: TracedRun, lang: str = "en") -> str:
    """What a traced tensor is, in `lang` (the catalogue's words for the core's STEP_MEANING)."""
    kind = step.name.rsplit(".", 1)[-1]
    if step.name == "loss_smoothed":
        return t("concepts.meaning.loss_smoothed", lang, smoothing=run.label_smoothing)
    return t(f"concepts.meaning.{kind}", lang) if step.meaning else ""


def step_rows(run: TracedRun, lang: str = "en") -> list[list]:
    return [[i + 1, s.name, str(s.shape), meaning(s, run, lang)] for i, s in enumerate(run.steps)]


def format_values(t: torch.Tensor) -> str:
    """A tensor as 2-D blocks of numbers, each block headed by its batch (and head) index."""
    if t.dim() <= 2:
        rows = t.reshape(-1, t.shape[-1]) if t.dim() == 2 else t[None]
        return "\n".join(" ".join(f"{v:8.{DIGITS}f}" for v in row.tolist()) for row in rows)
    lead = ("batch", "head")[: t.dim() - 2] if t.dim() <= 4 else tuple(f"dim{i}" for i in range(t.dim() - 2))
    blocks = []
    for index in itertools.product(*map(range, t.shape[:-2])):
        header = ", ".join(f"{name} {i}" for name, i in zip(lead, index))
        blocks.append(f"[{header}]\n{format_values(t[index])}")
    return "\n".join(blocks)


def step_values(run: TracedRun, lang: str = "en") -> str:
    """Every step's values in computation order, with its name, shape and meaning."""
    return "\n\n".join(f"# {i + 1}. {s.name}  shape {s.shape}  ({meaning(s, run, lang)})\n{format_values(s.values)}"
                       for i, s in enumerate(run.steps))


def follow_token(run: TracedRun, b: int, pos: int, lang: str = "en") -> str:
    """Markdown: one target position's path through the trace, from its input token to its loss."""
    values = {s.name: s.values for s in run.steps}
    source = run.src[b].tolist()
    lines = [t("concepts.follow_head", lang, b=b, t=pos, reads=int(run.decoder_input[b, pos]),
               target=int(run.targets[b, pos])),
             t("concepts.follow_embed", lang, vector=_vec(values["tgt_embed"][b, pos]))]
    for name, attn in values.items():
        if not (name.startswith("decoder.") and name.endswith(".attn")):
            continue
        keys = (t("concepts.follow_decoder_positions", lang) if ".self_attn." in name
                else t("concepts.follow_source_tokens", lang, source=source))
        for h, row in enumerate(attn[b, :, pos]):
            lines.append(t("concepts.follow_attn", lang, name=name, h=h, keys=keys, vector=_vec(row)))
    lines += [t("concepts.follow_logits", lang, vector=_vec(run.logits[b, pos])),
              t("concepts.follow_softmax", lang, vector=_vec(run.probs[b, pos]), p=run.p_target[b, pos]),
              t("concepts.follow_loss", lang, p=run.p_target[b, pos], loss=run.loss[b, pos],
                smoothing=run.label_smoothing, smoothed=run.loss_smoothed[b, pos])]
    return "\n".join(lines)


def loss_rows(run: TracedRun) -> list[list]:
    B, T = run.targets.shape
    return [[b, t, int(run.decoder_input[b, t]), int(run.targets[b, t]), _r(run.p_target[b, t]),
             _r(run.loss[b, t]), _r(run.loss_smoothed[b, t])] for b in range(B) for t in range(T)]
