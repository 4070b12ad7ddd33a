"""The forward pass drawn: the architecture with the current stage lit, the stage's matrix, one token's row.

Pure functions of a `lab.forward.Walk` and a `Slice` of it. The diagram is drawn here, box by box, as
"Attention is all you need" draws it: one column for a language model (decoder only) or a classifier
(encoder only), an encoder beside a decoder for a translator, each box labelled with the tensor's
shape in the model's real sizes.

Size: a stage's heatmap at 128 tokens is 128 x 192 numbers; sent as floats that is ~100 kB on the wire.
Its colours need 255 levels, not 7 digits: the heatmap carries each cell as a signed byte (a level of the
largest magnitude), its colour bar labelled in real units, and the followed token's row beside it carries
the exact values (hover, and the JSON button of its toolbar).
"""

from __future__ import annotations

import numpy as np

from i18n import t
from lab.forward import STAGES, Slice, Walk
from views.figure import Figure
from views.kit import plain, position_labels, top_title

LEVELS = 127  # a signed byte's levels each side of 0
SIGNED = [[0, "#2166ac"], [0.5, "#f7f7f7"], [1, "#b2182b"]]  # blue below 0, red above
POSITIVE = [[0, "#f7fbff"], [1, "#08306b"]]  # probabilities, weights, the mask
LIT, BOX, EDGE = "#fdae61", "#eef2fb", "#4c5a8a"
BOX_H, GAP = 0.8, 0.2
TICKED = 40  # columns named on the axis; beyond, a vector's dimensions are read by hover


def stage_title(stage: str, lang: str) -> str:
    return f"{STAGES.index(stage) + 1}. {t(f'forward.stage.{stage}', lang)}"


def shape_text(piece: Slice) -> str:
    return f"({', '.join(piece.shape)})"


def _column(run: Walk, stack: str, lang: str) -> list[tuple[str, str]]:
    """(stage, label) boxes of one column, top (input) to bottom (output)."""
    d_model = run.config["d_model"]
    T = len(run.tokens(stack))
    d_head = d_model // run.n_head
    names = lambda s: t(f"forward.stage.{s}", lang)  # noqa: E731
    shapes = {"ids": f"(T={T})", "qkv": f"(H={run.n_head}, T={T}, d_head={d_head})",
              "scores": f"(H={run.n_head}, T={T}, T={T})", "mask": f"(T={T}, T={T})",
              "attn": f"(H={run.n_head}, T={T}, T={T})", "weighted": f"(H={run.n_head}, T={T}, d_head={d_head})",
              "ff": f"(T={T}, d_ff={run.config['d_ff']})→(T={T}, d_model={d_model})"}
    boxes = []
    for stage in STAGES[:14]:
        boxes.append((stage, f"{names(stage)} {shapes.get(stage, f'(T={T}, d_model={d_model})')}"))
    if run.kind == "classifier" and stack == "encoder":
        boxes.append(("pooled", f"{names('pooled')} (d_model={d_model})"))
        n_class = len(run.vocab)
        boxes += [(s, f"{names(s)} (n_class={n_class})") for s in ("logits", "probs", "loss")]
    elif stack == "decoder":
        vocab = run.logits.shape[-1]
        boxes += [(s, f"{names(s)} (T={T}, vocab={vocab})") for s in ("logits", "probs")]
        boxes += [("next", f"{names('next')} (T={T})"), ("loss", f"{names('loss')} (T={T})")]
    return boxes


def diagram(run: Walk, stage: str, stack: str, layer: int, head: int, cross: bool, lang: str = "en") -> Figure:
    """The architecture, every box labelled with its shape, the current stage lit."""
    columns = ["encoder", "decoder"] if run.kind == "translator" else [run.stack(None)]
    shapes, notes, texts = [], [], []
    width = 1.0 / len(columns)
    rows = 0
    for c, col in enumerate(columns):
        boxes = _column(run, col, lang)
        rows = max(rows, len(boxes))
        x0, x1 = c * width + 0.03, (c + 1) * width - 0.03
        heading = t(f"forward.column.{col if run.kind == 'translator' else run.kind}", lang)
        notes.append(dict(x=(x0 + x1) / 2, y=-0.7, text=f"<b>{heading}</b>", showarrow=False, xref="x", yref="y",
                          font=dict(size=13)))
        for i, (name, label) in enumerate(boxes):
            # a readout's box is in one column only (the decoder's, for a translator): lit whichever stack is picked
            lit = name == stage and (col == run.stack(stack) or STAGES.index(stage) > STAGES.index("final_norm"))
            shapes.append(dict(type="rect", x0=x0, x1=x1, y0=i, y1=i + BOX_H, xref="x", yref="y", layer="below",
                               fillcolor=LIT if lit else BOX, line=dict(color=EDGE, width=3 if lit else 1)))
            if name in ("attn_out",) and col == "decoder" and run.kind == "translator":
                label = f"{label} · {t('forward.cross_too', lang)}"
            texts.append(((x0 + x1) / 2, i + BOX_H / 2, plain(label)))
        first, last = STAGES.index("norm"), STAGES.index("block_out")
        shapes.append(dict(type="rect", x0=x0 - 0.02, x1=x1 + 0.02, y0=first - 0.1, y1=last + BOX_H + 0.1,
                           xref="x", yref="y", line=dict(color=EDGE, dash="dot"), fillcolor="rgba(0,0,0,0)"))
        notes.append(dict(x=x1 + 0.015, y=first - 0.1, text=f"× {run.n_layer}", showarrow=False, xref="x", yref="y",
                          xanchor="right", yanchor="bottom", font=dict(size=11)))
    if run.kind == "translator":  # the encoder's output feeds every decoder layer's cross-attention (K and V)
        y_memory, y_cross = STAGES.index("final_norm") + BOX_H / 2, STAGES.index("qkv") + BOX_H / 2
        notes.append(dict(x=width + 0.03, y=y_cross, ax=width - 0.03, ay=y_memory, xref="x", yref="y", axref="x",
                          ayref="y", showarrow=True, arrowhead=2, arrowcolor=EDGE, text=t("forward.kv_arrow", lang),
                          font=dict(size=11, color=EDGE), bgcolor="rgba(255,255,255,0.8)"))
    where = t("forward.where", lang, layer=layer, head=head) + (f" · {t('forward.cross', lang)}" if cross else "")
    layout = dict(title=top_title(f"{stage_title(stage, lang)} — {where}"), shapes=shapes, annotations=notes,
                  height=80 + 30 * (rows + 1), margin=dict(l=5, r=5, t=40, b=5), showlegend=False,
                  xaxis=dict(visible=False, range=[0, 1], fixedrange=True),
                  yaxis=dict(visible=False, range=[rows + 0.2, -1.2], fixedrange=True),
                  plot_bgcolor="rgba(0,0,0,0)", paper_bgcolor="rgba(0,0,0,0)")
    # the boxes' labels as one text trace: plotly lays out each annotation on its own, ~40 of them a click
    x, y, labels = zip(*texts)
    labels_trace = dict(type="scatter", mode="text", x=np.array(x), y=np.array(y), text=np.array(labels, dtype=object),
                        textfont=dict(size=11 if len(columns) == 1 else 9), hoverinfo="skip")  # two columns: half width
    return Figure([labels_trace], layout)


def levels(values: np.ndarray, signed: bool) -> tuple[np.ndarray, float]:
    """(each cell as a signed byte: value / scale * LEVELS, the scale: the largest magnitude)."""
    scale = float(np.abs(values).max()) if values.size else 1.0
    scale = scale if scale > 0 else 1.0
    return np.round(values / scale * LEVELS).astype(np.int8), scale


def followed(piece: Slice, follow: int) -> int:
    """The followed row, within this stage's rows (a classifier's readouts have one)."""
    return min(max(int(follow), 0), max(len(piece.rows) - 1, 0))


def heatmap(piece: Slice, follow: int, lang: str = "en") -> Figure:
    """The stage's matrix, rows are tokens (positions), the followed row outlined."""
    follow = followed(piece, follow)
    signed = bool((piece.values < 0).any())
    z, scale = levels(piece.values, signed)
    rows, cols = position_labels(piece.rows), np.array([plain(c) for c in piece.cols], dtype=object)
    ticks = [-LEVELS, 0, LEVELS] if signed else [0, LEVELS]
    colorbar = dict(tickvals=ticks, ticktext=[f"{v / LEVELS * scale:.3g}" for v in ticks], thickness=12)
    trace = dict(type="heatmap", z=z, x=cols, y=rows, colorscale=SIGNED if signed else POSITIVE,
                 zmin=-LEVELS if signed else 0, zmax=LEVELS, colorbar=colorbar,
                 hovertemplate=t("forward.hover", lang, scale=f"{scale / LEVELS:.3g}"))
    outline = [dict(type="rect", xref="paper", x0=0, x1=1, yref="y", y0=follow - 0.5, y1=follow + 0.5,
                    line=dict(color="#111", width=2))] if 0 <= follow < len(rows) else []
    every = max(1, -(-len(rows) // 40))
    layout = dict(title=top_title(f"{t(f'forward.stage.{piece.stage}', lang)} {shape_text(piece)}"),
                  height=min(700, 160 + 9 * len(rows)), margin=dict(l=110, r=20, t=50, b=40), shapes=outline,
                  xaxis=dict(type="category", showticklabels=len(cols) <= TICKED),
                  yaxis=dict(type="category", autorange="reversed", tickmode="array", tickvals=rows[::every],
                             ticktext=[plain(r) for r in piece.rows][::every]))
    return Figure([trace], layout)


def row(piece: Slice, follow: int, lang: str = "en") -> Figure:
    """The followed token's row, with its exact values."""
    follow = followed(piece, follow)
    values = piece.values[follow] if len(piece.values) else np.zeros(0, np.float32)
    label = piece.rows[follow] if piece.rows else ""
    x = np.array([plain(c) for c in piece.cols], dtype=object)
    if len(values) <= TICKED:  # a bar per named column (the vocabulary's, the classes)
        trace = dict(type="bar", x=x, y=values.astype(np.float32), marker=dict(color=EDGE),
                   hovertemplate="%{x}: %{y:.4f}<extra></extra>")
    else:  # a vector's 192 dimensions: one filled line (one SVG path), not 192 bars (5x the browser's drawing)
        trace = dict(type="scatter", mode="lines", x=x, y=values.astype(np.float32), fill="tozeroy",
                   line=dict(color=EDGE, width=1), hovertemplate="%{x}: %{y:.4f}<extra></extra>")
    layout = dict(title=top_title(t("forward.row_title", lang, token=plain(label), position=follow)), height=260,
                  margin=dict(l=50, r=20, t=50, b=40),
                  xaxis=dict(type="category", showticklabels=len(values) <= TICKED))
    return Figure([trace], layout)


def sentence(run: Walk, piece: Slice, lang: str = "en") -> str:
    """The stage in one sentence (the glossary's words), and what this model does there."""
    if not piece.applies:
        return t("forward.not_this_kind", lang, stage=stage_title(piece.stage, lang))
    key = f"forward.says.{piece.stage}"
    if piece.stage == "final_norm" and not run.config["norm_first"]:
        key = "forward.says.final_norm_post"
    if piece.stage == "next" and run.kind == "translator":
        key = "forward.says.next_translator"
    if piece.stage == "qkv" and ".cross_attn." in piece.points[0]:
        key = "forward.says.qkv_cross"
    if piece.stage == "resid_mid" and run.kind == "translator" and piece.points[0].startswith("decoder."):
        key = "forward.says.resid_self" if piece.points[0].endswith(".resid_self") else "forward.says.resid_cross"
    return t(key, lang)


def points_text(piece: Slice) -> str:
    return ", ".join(f"`{p}`" for p in piece.points)

