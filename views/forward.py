"""The forward pass drawn: the architecture with the current stage lit, the stage's matrix, one token's row.

Pure functions of a `lab.forward.Walk` and a `Slice` of it. The diagram is drawn here, box by box, as
"Attention is all you need" draws it: one column for a language model (decoder only) or a classifier
(encoder only), an encoder beside a decoder for a translator, each box labelled with the tensor's
shape in the model's real sizes. It is SVG in the page, not a plotly figure: it is boxes and text that
nothing hovers or zooms, and laid out by plotly it cost a tenth of each stage's click.

Size: a stage's heatmap at 128 tokens is 128 x 192 numbers; sent as floats that is ~100 kB on the wire.
Its colours need 255 levels, not 7 digits: the heatmap carries each cell as a signed byte (a level of the
largest magnitude), its colour bar labelled in real units, and the followed token's row beside it carries
the exact values (hover, and the JSON button of its toolbar).
"""

from __future__ import annotations

import html

import numpy as np

from i18n import render, t
from lab.forward import STAGES, Slice, Walk
from views.figure import Figure
from views.kit import axis_text, plain, position_labels, top_title

LEVELS = 127  # a signed byte's levels each side of 0
SIGNED = [[0, "#2166ac"], [0.5, "#f7f7f7"], [1, "#b2182b"]]  # blue below 0, red above
POSITIVE = [[0, "#f7fbff"], [1, "#08306b"]]  # probabilities, weights, the mask
LIT, BOX, EDGE, INK = "#fdae61", "#eef2fb", "#4c5a8a", "#1f2937"
# the diagram's sizes, in its SVG's pixels: a box holds two lines (the stage, its shape) of FONT pixels
BOX_H, ROW_H, COLUMN_W, COLUMN_GAP, HEADING_H, PAD, FONT = 28, 33, 220, 60, 26, 12, 11
NOTE_W = 26  # "× n_layer", right of a layer's frame
TICKED = 40  # columns named on the axis; beyond, a vector's dimensions are read by hover


def stage_title(stage: str, lang: str) -> str:
    return f"{STAGES.index(stage) + 1}. {t(f'forward.stage.{stage}', lang)}"


def shape_text(piece: Slice) -> str:
    return f"({', '.join(piece.shape)})"


def _column(run: Walk, stack: str, lang: str) -> list[tuple[str, str, str]]:
    """(stage, name, shape) boxes of one column, top (input) to bottom (output)."""
    d_model = run.config["d_model"]
    T = len(run.labels(stack))
    d_head = d_model // run.n_head
    names = lambda s: t(f"forward.stage.{s}", lang)  # noqa: E731
    shapes = {"ids": f"(T={T})", "qkv": f"(H={run.n_head}, T={T}, d_head={d_head})",
              "scores": f"(H={run.n_head}, T={T}, T={T})", "mask": f"(T={T}, T={T})",
              "attn": f"(H={run.n_head}, T={T}, T={T})", "weighted": f"(H={run.n_head}, T={T}, d_head={d_head})",
              "ff": f"(T={T}, d_ff={run.config['d_ff']})→(T={T}, d_model={d_model})"}
    boxes = [(stage, names(stage), shapes.get(stage, f"(T={T}, d_model={d_model})")) for stage in STAGES[:14]]
    if run.kind == "classifier" and stack == "encoder":
        boxes.append(("pooled", names("pooled"), f"(d_model={d_model})"))
        n_class = len(run.vocab)
        boxes += [(s, names(s), f"(n_class={n_class})") for s in ("logits", "probs", "loss")]
    elif stack == "decoder":
        vocab = run.logits.shape[-1]
        boxes += [(s, names(s), f"(T={T}, vocab={vocab})") for s in ("logits", "probs")]
        boxes += [("next", names("next"), f"(T={T})"), ("loss", names("loss"), f"(T={T})")]
    return boxes


def _svg_text(x: float, y: float, lines: list[str], size: int, **attrs) -> str:
    extra = "".join(f' {k.replace("_", "-")}="{v}"' for k, v in attrs.items())
    spans = "".join(f'<tspan x="{x:g}" dy="{0 if i == 0 else size + 2}">{html.escape(line)}</tspan>'
                    for i, line in enumerate(lines))
    first = y - (len(lines) - 1) * (size + 2) / 2  # the lines centred on y
    return f'<text x="{x:g}" y="{first:g}" font-size="{size}" text-anchor="middle" dominant-baseline="central"{extra}>{spans}</text>'


def diagram(run: Walk, stage: str, stack: str, layer: int, head: int, cross: bool, lang: str = "en") -> str:
    """The architecture as SVG (HTML), every box labelled with its stage and its shape, the current stage lit,
    its title (the stage, and where in the model) above it."""
    columns = ["encoder", "decoder"] if run.kind == "translator" else [run.stack(None)]
    parts, rows = [], 0
    for c, col in enumerate(columns):
        boxes = _column(run, col, lang)
        rows = max(rows, len(boxes))
        x0 = PAD + c * (COLUMN_W + COLUMN_GAP)
        middle = x0 + COLUMN_W / 2
        heading = t(f"forward.column.{col if run.kind == 'translator' else run.kind}", lang)
        parts.append(_svg_text(middle, HEADING_H / 2, [heading], 13, font_weight="bold", fill="currentColor"))
        for i, (name, label, shape) in enumerate(boxes):
            # a readout's box is in one column only (the decoder's, for a translator): lit whichever stack is picked
            lit = name == stage and (col == run.stack(stack) or STAGES.index(stage) > STAGES.index("final_norm"))
            if name == "attn_out" and col == "decoder" and run.kind == "translator":
                label = f"{label} · {t('forward.cross_too', lang)}"
            y = HEADING_H + i * ROW_H
            parts.append(f'<rect class="box{" lit" if lit else ""}" data-stage="{name}" x="{x0}" y="{y}" '
                         f'width="{COLUMN_W}" height="{BOX_H}" rx="3" fill="{LIT if lit else BOX}" stroke="{EDGE}" '
                         f'stroke-width="{3 if lit else 1}"/>')
            parts.append(_svg_text(middle, y + BOX_H / 2, [label, shape], FONT, fill=INK))
        # one layer's boxes, framed: the model repeats them n_layer times
        top = HEADING_H + STAGES.index("norm") * ROW_H - 4
        bottom = HEADING_H + STAGES.index("block_out") * ROW_H + BOX_H + 4
        parts.append(f'<rect x="{x0 - 6}" y="{top}" width="{COLUMN_W + 12}" height="{bottom - top}" fill="none" '
                     f'stroke="{EDGE}" stroke-dasharray="4 3"/>')
        parts.append(f'<text x="{x0 + COLUMN_W + 9}" y="{top + 12}" font-size="11" fill="currentColor">'
                     f'× {run.n_layer}</text>')
    width = 2 * PAD + len(columns) * COLUMN_W + (len(columns) - 1) * COLUMN_GAP + NOTE_W
    height = HEADING_H + rows * ROW_H + PAD
    if run.kind == "translator":  # the encoder's output feeds every decoder layer's cross-attention (K and V)
        x_from, x_to = PAD + COLUMN_W, PAD + COLUMN_W + COLUMN_GAP
        y_from = HEADING_H + STAGES.index("final_norm") * ROW_H + BOX_H / 2
        y_to = HEADING_H + STAGES.index("qkv") * ROW_H + BOX_H / 2
        parts.append(f'<defs><marker id="forward-arrowhead" markerWidth="8" markerHeight="8" refX="7" refY="4" '
                     f'orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="{EDGE}"/></marker></defs>'
                     f'<line x1="{x_from}" y1="{y_from}" x2="{x_to - 2}" y2="{y_to}" stroke="{EDGE}" stroke-width="1.5" '
                     f'marker-end="url(#forward-arrowhead)"/>')
        parts.append(_svg_text((x_from + x_to) / 2, (y_from + y_to) / 2, [t("forward.kv_arrow", lang)], 10,
                               fill=EDGE, stroke="white", stroke_width=3, paint_order="stroke"))
    where = t("forward.where", lang, layer=layer, head=head) + (f" · {t('forward.cross', lang)}" if cross else "")
    title = html.escape(f"{stage_title(stage, lang)} — {where}")
    return (f'<div class="forward-diagram" style="text-align: center"><div class="forward-title">{title}</div>'
            f'<svg viewBox="0 0 {width} {height}" width="{width}" role="img" aria-label="{title}" '
            f'style="display: block; margin: 4px auto 0; max-width: 100%; height: auto">{"".join(parts)}</svg></div>')


def levels(values: np.ndarray, signed: bool) -> tuple[np.ndarray, float]:
    """(each cell as a signed byte: value / scale * LEVELS, the scale: the largest magnitude)."""
    scale = float(np.abs(values).max()) if values.size else 1.0
    scale = scale if scale > 0 else 1.0
    return np.round(values / scale * LEVELS).astype(np.int8), scale


def heatmap(piece: Slice, lang: str = "en") -> Figure:
    """The stage's matrix, rows are tokens (positions), the followed row outlined."""
    follow = piece.follow
    signed = bool((piece.values < 0).any())
    z, scale = levels(piece.values, signed)
    rows, cols = position_labels(piece.rows, lang), axis_text(piece.cols, lang)
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
                             ticktext=axis_text(piece.rows, lang)[::every]))
    return Figure([trace], layout)


def row(piece: Slice, lang: str = "en") -> Figure:
    """The followed token's row, with its exact values."""
    follow = piece.follow
    values = piece.values[follow] if len(piece.values) else np.zeros(0, np.float32)
    label = render(piece.rows[follow], lang) if piece.rows else ""
    x = axis_text(piece.cols, lang)
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

