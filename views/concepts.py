"""Figures and tables for the Concepts tab, drawn from the results of `transformer_core.analysis.concepts`.

Every function here only lays out numbers the core already computed; none of
them runs a model or redoes attention.
"""

from __future__ import annotations

import itertools

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

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


def weights_figure(wa: WeightedAverage) -> go.Figure:
    """The (n, n) weight matrix: row i says how much output i takes from each value."""
    labels = vector_labels(len(wa.x))
    formula = "softmax(q kᵀ/√d)" if wa.scaled else "softmax(q kᵀ)"
    return head_heatmap(wa.attn, labels, labels, title=f"weights = {formula}, row by row")


def weighted_sums(wa: WeightedAverage) -> str:
    """Markdown: each output written out as the weighted sum of the value vectors."""
    lines = []
    for i, (row, y) in enumerate(zip(wa.attn, wa.y)):
        terms = " + ".join(f"{w:.3f}·v{j + 1}" for j, w in enumerate(row.tolist()))
        lines.append(f"- **y{i + 1}** = {terms} = {_vec(y)}  (weights sum to {row.sum():.3f})")
    return "\n".join(lines)


def matrix_rows(m: torch.Tensor, labels: list[str]) -> list[list]:
    """A matrix as table rows, one labelled row per vector."""
    return [[label, *map(_r, row.tolist())] for label, row in zip(labels, m)]


def vectors_figure(wa: WeightedAverage) -> go.Figure:
    """Values and outputs in the plane of their first two coordinates: each output lies
    inside the polygon spanned by the values, because it is their weighted average."""
    v, y = wa.v, wa.y
    fig = go.Figure()
    if v.shape[1] < 2:
        fig.update_layout(title="the vectors have one coordinate: see the table")
        return fig
    hull = v[:, :2].tolist()
    fig.add_trace(go.Scatter(x=[p[0] for p in hull + hull[:1]], y=[p[1] for p in hull + hull[:1]], mode="lines",
                             line=dict(color="lightgray", dash="dot"), name="between the values", hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=v[:, 0].tolist(), y=v[:, 1].tolist(), mode="markers+text", name="values v",
                             text=vector_labels(len(v), "v"), textposition="top center", marker=dict(size=11)))
    fig.add_trace(go.Scatter(x=y[:, 0].tolist(), y=y[:, 1].tolist(), mode="markers+text", name="outputs y",
                             text=vector_labels(len(y), "y"), textposition="bottom center",
                             marker=dict(size=11, symbol="diamond")))
    title = "first two coordinates" if v.shape[1] > 2 else ""
    fig.update_layout(title=title, margin=dict(l=10, r=10, t=40, b=10), height=380)
    fig.update_yaxes(scaleanchor="x", scaleratio=1)
    return fig


# 2. why divide by √d --------------------------------------------------------------------------

def scaling_rows(points: list[ScalingPoint]) -> list[list]:
    """d, mean largest weight and mean softmax-gradient size, scaled and unscaled."""
    return [[p.d, _r(p.max_weight["scaled"].mean()), _r(p.max_weight["unscaled"].mean()),
             _r(p.grad_norm["scaled"].mean()), _r(p.grad_norm["unscaled"].mean())] for p in points]


SCALING_HEADERS = ["d", "max weight ÷√d", "max weight raw", "softmax gradient ÷√d", "softmax gradient raw"]
_COLORS = {"scaled": "#1f77b4", "unscaled": "#d62728"}
_NAMES = {"scaled": "q·k / √d", "unscaled": "q·k (no scaling)"}


def scaling_figure(points: list[ScalingPoint], chosen_d: int) -> go.Figure:
    """Mean (line) and 10–90% range (band) over queries, against d on a log axis."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("largest softmax weight", "size of softmax gradient ‖J‖"))
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
                                     line=dict(color=_COLORS[key]), name=_NAMES[key], showlegend=col == 1),
                          row=1, col=col)
    fig.add_vline(x=chosen_d, line=dict(color="gray", dash="dash"))
    fig.update_xaxes(type="log", title="d (dimension of q and k)")
    fig.update_yaxes(range=[0, 1.02], row=1, col=1)
    fig.update_layout(height=380, margin=dict(l=10, r=10, t=40, b=10))
    return fig


def chosen_d_figure(point: ScalingPoint, n_rows: int = 6) -> go.Figure:
    """A few queries' weight rows at the chosen d, side by side: spread out vs one-hot."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=[f"{_NAMES[k]}, d={point.d}" for k in ("scaled", "unscaled")])
    for col, key in enumerate(("scaled", "unscaled"), start=1):
        fig.add_trace(go.Heatmap(z=point.attn[key][:n_rows].tolist(), coloraxis="coloraxis",
                                 hovertemplate="query %{y}, key %{x}: %{z:.3f}<extra></extra>"), row=1, col=col)
    fig.update_xaxes(title="key")
    fig.update_yaxes(title="query", autorange="reversed")
    fig.update_layout(coloraxis=dict(colorscale="Blues", cmin=0, cmax=1), height=300,
                      margin=dict(l=10, r=10, t=40, b=10))
    return fig


# 3. order ------------------------------------------------------------------------------------

def order_figure(variants: list[OrderVariant], shuffled_labels: list[str]) -> go.Figure:
    """Per position of the shuffled sentence: distance between its output and the
    output the same token had in the original sentence. Zero everywhere = order ignored."""
    fig = go.Figure([go.Bar(x=list(range(len(shuffled_labels))), y=[_r(d) for d in v.mismatch.tolist()], name=v.name)
                     for v in variants])
    fig.update_xaxes(tickmode="array", tickvals=list(range(len(shuffled_labels))), ticktext=shuffled_labels,
                     title="token of the shuffled sentence")
    fig.update_yaxes(title="‖h_shuffled[i] − h[same token]‖")
    fig.update_layout(barmode="group", height=360, margin=dict(l=10, r=10, t=30, b=10))
    return fig


def verdict_rows(variants: list[OrderVariant], class_names: list[str]) -> list[list]:
    """Per model variant: largest output mismatch and P(class) before and after the shuffle."""
    rows = []
    for v in variants:
        for sentence, probs in (("original", v.probs), ("shuffled", v.probs_shuffled)):
            verdict = class_names[int(probs.argmax())]
            rows.append([v.name, sentence, verdict, *map(_r, probs.tolist()), _r(v.mismatch.max())])
    return rows


def verdict_headers(class_names: list[str]) -> list[str]:
    return ["model", "sentence", "verdict", *[f"P({c})" for c in class_names], "largest mismatch"]


# 4. positions --------------------------------------------------------------------------------

def positions_figure(pe: torch.Tensor, similarity: torch.Tensor, title: str) -> go.Figure:
    """Left: the table (positions x dimensions); right: dot products between positions."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("position vectors", "dot product between positions"),
                        horizontal_spacing=0.12)
    fig.add_trace(go.Heatmap(z=pe.tolist(), colorscale="RdBu", zmid=0, colorbar=dict(x=0.44),
                             hovertemplate="position %{y}, dimension %{x}: %{z:.3f}<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Heatmap(z=similarity.tolist(), colorscale="Viridis",
                             hovertemplate="positions %{y} · %{x}: %{z:.3f}<extra></extra>"), row=1, col=2)
    fig.update_xaxes(title="dimension", row=1, col=1)
    fig.update_xaxes(title="position", row=1, col=2)
    fig.update_yaxes(title="position", autorange="reversed")
    fig.update_layout(title=title, height=420, margin=dict(l=10, r=10, t=70, b=10))
    return fig


# 5. parameters -------------------------------------------------------------------------------

HEAD_HEADERS = ["heads", "d_head", "W_q, W_k, W_v", "W_o", "total = sum(p.numel())"]
PARAM_HEADERS = ["component", "tensors", "parameters", "note"]


def head_rows(counts: list[HeadCount]) -> list[list]:
    return [[c.n_head, c.d_head, c.qkv, c.out, c.total] for c in counts]


def head_figure(counts: list[HeadCount]) -> go.Figure:
    """Stacked bars: the Q/K/V part and the output projection, equal for every head count."""
    x = [f"{c.n_head} head{'s' if c.n_head > 1 else ''}" for c in counts]
    fig = go.Figure([go.Bar(x=x, y=[c.qkv for c in counts], name="W_q, W_k, W_v"),
                     go.Bar(x=x, y=[c.out for c in counts], name="W_o")])
    fig.update_layout(barmode="stack", height=300, yaxis_title="parameters", margin=dict(l=10, r=10, t=30, b=10))
    return fig


def parameter_rows(model_name: str, table: list[ComponentCount]) -> list[list]:
    """One model's components and a total row (the sum of the rows above it)."""
    rows = [[f"{model_name}: {c.component}", c.tensors, c.params,
             f"tied to {c.shared_with}, counted there" if c.shared_with else ""] for c in table]
    rows.append([f"{model_name}: TOTAL", sum(c.tensors for c in table), sum(c.params for c in table), ""])
    return rows


# 6. tracing ----------------------------------------------------------------------------------

STEP_HEADERS = ["step", "tensor", "shape", "what it is"]
LOSS_HEADERS = ["batch", "position", "decoder input", "target", "p(target)", "cross-entropy",
                "cross-entropy, smoothed"]


def step_rows(run: TracedRun) -> list[list]:
    return [[i + 1, s.name, str(s.shape), s.meaning] for i, s in enumerate(run.steps)]


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


def step_values(run: TracedRun) -> str:
    """Every step's values in computation order, with its name, shape and meaning."""
    return "\n\n".join(f"# {i + 1}. {s.name}  shape {s.shape}  ({s.meaning})\n{format_values(s.values)}"
                       for i, s in enumerate(run.steps))


def follow_token(run: TracedRun, b: int, t: int) -> str:
    """Markdown: one target position's path through the trace, from its input token to its loss."""
    values = {s.name: s.values for s in run.steps}
    source = run.src[b].tolist()
    lines = [f"**Batch row {b}, position {t}**: the decoder reads token {int(run.decoder_input[b, t])} "
             f"and should predict token {int(run.targets[b, t])}.",
             f"- embedding + position: {_vec(values['tgt_embed'][b, t])}"]
    for name, attn in values.items():
        if not (name.startswith("decoder.") and name.endswith(".attn")):
            continue
        keys = "decoder positions" if ".self_attn." in name else f"source tokens {source}"
        for h, row in enumerate(attn[b, :, t]):
            lines.append(f"- `{name}` head {h}: weights over {keys}: {_vec(row)}")
    lines += [f"- logits: {_vec(run.logits[b, t])}",
              f"- softmax: {_vec(run.probs[b, t])}, so p(target) = {run.p_target[b, t]:.4f}",
              f"- loss = −log {run.p_target[b, t]:.4f} = **{run.loss[b, t]:.4f}**; with label smoothing "
              f"{run.label_smoothing:g}: **{run.loss_smoothed[b, t]:.4f}**"]
    return "\n".join(lines)


def loss_rows(run: TracedRun) -> list[list]:
    B, T = run.targets.shape
    return [[b, t, int(run.decoder_input[b, t]), int(run.targets[b, t]), _r(run.p_target[b, t]),
             _r(run.loss[b, t]), _r(run.loss_smoothed[b, t])] for b in range(B) for t in range(T)]
