"""The forward pass drawn: the architecture with the current stage lit, the stage's matrix, one token's row.

Pure functions of a `lab.forward.Walk` and a `Slice` of it. The diagram is drawn here, box by box, as
"Attention is all you need" draws it: one column for a language model (decoder only) or a classifier
(encoder only), an encoder beside a decoder for a translator, each box labelled with the tensor's
shape in the model's real sizes, and only the boxes the model has (a modern decoder's rotation, gate and
sublayer norms; no pooling in a language model). It is SVG in the page, not a plotly figure: it is boxes
and text that nothing hovers or zooms, and laid out by plotly it cost a tenth of each stage's click.

Size: a stage's heatmap at 128 tokens is 128 x 192 numbers; sent as floats that is ~100 kB on the wire.
Its colours need 255 levels, not 7 digits: the heatmap carries each cell as a signed byte (a level of the
largest magnitude), its colour bar labelled in real units, and the followed token's row beside it carries
the exact values (hover, and the JSON button of its toolbar).

Some stages read better as something other than a matrix: the token ids as a list, the chosen token as the
ranked bars of its candidates, and the rotation's angles pair by pair.
"""

from __future__ import annotations

import html

import numpy as np

from i18n import render, t
from lab.forward import HEAD_STAGES, LAYER_STAGES, NUMBERS, Slice, Walk, picks
from lab.markdown import literal
from views.kit import Figure, axis_text, placeholder, plain, position_labels, top_title

LEVELS = 127  # a signed byte's levels each side of 0
SIGNED = [[0, "#2166ac"], [0.5, "#f7f7f7"], [1, "#b2182b"]]  # blue below 0, red above
POSITIVE = [[0, "#f7fbff"], [1, "#08306b"]]  # probabilities, weights, the mask
LIT, BOX, EDGE, INK = "#fdae61", "#eef2fb", "#4c5a8a", "#1f2937"
# the diagram's sizes, in its SVG's pixels: a box holds two lines (the stage, its shape) of FONT pixels
BOX_H, ROW_H, COLUMN_W, COLUMN_GAP, HEADING_H, PAD, FONT = 28, 33, 236, 60, 26, 12, 11
NOTE_W = 26  # "× n_layer", right of a layer's frame
TICKED = 40  # columns named on the axis; beyond, a vector's dimensions are read by hover
UNITS = 128  # of a large feed-forward layer's units, the heatmap draws the first UNITS of the gate, up and product


def stage_title(stage: str, lang: str) -> str:
    return f"{NUMBERS[stage]}. {t(f'forward.stage.{stage}', lang)}"


def shape_text(piece: Slice) -> str:
    return f"({', '.join(piece.shape)})"


def _modern(run: Walk) -> bool:
    return run.config.get("norm") == "rms" or run.config.get("positions") == "rotary"


def box_name(run: Walk, stage: str, layer: int, lang: str) -> str:
    """A stage's name as its box says it: a modern decoder names its norm (RMSNorm) and its mask (a sliding
    window in Gemma's local layers)."""
    rms = run.config.get("norm") == "rms"
    if stage in ("norm", "final_norm", "attn_post_norm", "ff_post_norm") and rms:
        return t(f"forward.stage.{stage}_rms", lang)
    if stage == "embed" and run.config.get("positions") in ("rotary", "none"):
        return t("forward.stage.embed_scaled" if run.config.get("scale_embeddings") else "forward.stage.embed_only",
                 lang)
    if stage == "mask" and run.is_local(layer):
        return t("forward.stage.mask_window", lang, w=run.config["sliding_window"])
    if stage == "ff" and run.config.get("gated"):
        return t("forward.stage.ff_down", lang)
    return t(f"forward.stage.{stage}", lang)


def _column(run: Walk, stack: str, layer: int, lang: str) -> list[tuple[str, str, str]]:
    """(stage, name, shape) boxes of one column, top (input) to bottom (output), in the model's real sizes."""
    d_model, d_head, d_ff = run.config["d_model"], run.d_head, run.config["d_ff"]
    H, H_kv = run.n_head, run.n_kv_head
    T = len(run.labels(stack))
    vocab = run.readout.vocab_size
    qkv = f"(H={H}, T={T}, d_head={d_head})" if H_kv == H else f"(H={H} · H_kv={H_kv}, T={T}, d_head={d_head})"
    shapes = {"ids": f"(T={T})", "qkv": qkv, "rope": qkv,
              "scores": f"(H={H}, T={T}, T={T})", "mask": f"(T={T}, T={T})",
              "attn": f"(H={H}, T={T}, T={T})", "weighted": f"(H={H}, T={T}, d_head={d_head})",
              "concat": f"(T={T}, H·d_head={H * d_head})",
              "gate_up": f"(T={T}, d_ff={d_ff}) × 2",
              "ff": (f"(T={T}, d_ff={d_ff})→(T={T}, d_model={d_model})"),
              "pooled": f"(d_model={d_model})", "logits": f"(T={T}, vocab={vocab})",
              "probs": f"(T={T}, vocab={vocab})", "next": f"(T={T})", "loss": f"(T={T})"}
    if run.kind == "classifier":
        shapes.update({s: f"(n_class={vocab})" for s in ("logits", "probs", "loss")})
    stages = [s for s in run.stages if not (run.kind == "translator" and stack == "encoder"
                                            and run.stages.index(s) > run.stages.index("final_norm"))]
    return [(s, box_name(run, s, layer, lang), shapes.get(s, f"(T={T}, d_model={d_model})")) for s in stages]


def _svg_text(x: float, y: float, lines: list[str], size: int, **attrs) -> str:
    extra = "".join(f' {k.replace("_", "-")}="{v}"' for k, v in attrs.items())
    spans = "".join(f'<tspan x="{x:g}" dy="{0 if i == 0 else size + 2}">{html.escape(line)}</tspan>'
                    for i, line in enumerate(lines))
    first = y - (len(lines) - 1) * (size + 2) / 2  # the lines centred on y
    return f'<text x="{x:g}" y="{first:g}" font-size="{size}" text-anchor="middle" dominant-baseline="central"{extra}>{spans}</text>'


def where(run: Walk, stage: str, layer: int, head: int, cross: bool, lang: str) -> str:
    """Where in the model a stage was cut, said only where it applies: no layer for the embedding or the
    readouts, no head for a stage that mixes the heads; a grouped query head names its key/value head and a
    layer of Gemma says whether it sees a sliding window."""
    if stage not in LAYER_STAGES:
        return ""
    parts = [t("forward.where_layer", lang, layer=layer)]
    if run.config.get("sliding_window") is not None:
        parts.append(t("forward.local", lang, w=run.config["sliding_window"]) if run.is_local(layer)
                     else t("forward.global", lang))
    if stage in HEAD_STAGES:
        parts.append(t("forward.where_head", lang, head=head) if run.n_kv_head == run.n_head else
                     t("forward.where_kv_head", lang, head=head, kv=run.kv_head(head)))
    if cross:
        parts.append(t("forward.cross", lang))
    return " · ".join(parts)


def diagram(run: Walk, stage: str, stack: str, layer: int, head: int, cross: bool, lang: str = "en") -> str:
    """The architecture as SVG (HTML), every box labelled with its stage and its shape, the current stage lit,
    its title (the stage, and where in the model) above it."""
    columns = ["encoder", "decoder"] if run.kind == "translator" else [run.stack(None)]
    parts, rows, boxes = [], 0, []
    for c, col in enumerate(columns):
        boxes = _column(run, col, layer, lang)
        rows = max(rows, len(boxes))
        x0 = PAD + c * (COLUMN_W + COLUMN_GAP)
        middle = x0 + COLUMN_W / 2
        heading = t(f"forward.column.{col if run.kind == 'translator' else run.kind}", lang)
        parts.append(_svg_text(middle, HEADING_H / 2, [heading], 13, font_weight="bold", fill="currentColor"))
        for i, (name, label, shape) in enumerate(boxes):
            # a readout's box is in one column only (the decoder's, for a translator): lit whichever stack is picked
            lit = name == stage and (col == run.stack(stack) or name not in LAYER_STAGES | {"ids", "embed",
                                                                                              "final_norm"})
            if name == "attn_out" and col == "decoder" and run.kind == "translator":
                label = f"{label} · {t('forward.cross_too', lang)}"
            y = HEADING_H + i * ROW_H
            parts.append(f'<rect class="box{" lit" if lit else ""}" data-stage="{name}" x="{x0}" y="{y}" '
                         f'width="{COLUMN_W}" height="{BOX_H}" rx="3" fill="{LIT if lit else BOX}" stroke="{EDGE}" '
                         f'stroke-width="{3 if lit else 1}"/>')
            parts.append(_svg_text(middle, y + BOX_H / 2, [label, shape], FONT, fill=INK))
        # one layer's boxes, framed: the model repeats them n_layer times
        names = [name for name, _, _ in boxes]
        top = HEADING_H + names.index("norm") * ROW_H - 4
        bottom = HEADING_H + names.index("block_out") * ROW_H + BOX_H + 4
        parts.append(f'<rect x="{x0 - 6}" y="{top}" width="{COLUMN_W + 12}" height="{bottom - top}" fill="none" '
                     f'stroke="{EDGE}" stroke-dasharray="4 3"/>')
        parts.append(f'<text x="{x0 + COLUMN_W + 9}" y="{top + 12}" font-size="11" fill="currentColor">'
                     f'× {run.n_layer}</text>')
    width = 2 * PAD + len(columns) * COLUMN_W + (len(columns) - 1) * COLUMN_GAP + NOTE_W
    height = HEADING_H + rows * ROW_H + PAD
    if run.kind == "translator":  # the encoder's output feeds every decoder layer's cross-attention (K and V)
        encoder = [name for name, _, _ in _column(run, "encoder", layer, lang)]
        decoder = [name for name, _, _ in boxes]
        x_from, x_to = PAD + COLUMN_W, PAD + COLUMN_W + COLUMN_GAP
        y_from = HEADING_H + encoder.index("final_norm") * ROW_H + BOX_H / 2
        y_to = HEADING_H + decoder.index("qkv") * ROW_H + BOX_H / 2
        parts.append(f'<defs><marker id="forward-arrowhead" markerWidth="8" markerHeight="8" refX="7" refY="4" '
                     f'orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="{EDGE}"/></marker></defs>'
                     f'<line x1="{x_from}" y1="{y_from}" x2="{x_to - 2}" y2="{y_to}" stroke="{EDGE}" stroke-width="1.5" '
                     f'marker-end="url(#forward-arrowhead)"/>')
        parts.append(_svg_text((x_from + x_to) / 2, (y_from + y_to) / 2, [t("forward.kv_arrow", lang)], 10,
                               fill=EDGE, stroke="white", stroke_width=3, paint_order="stroke"))
    said = where(run, stage, layer, head, cross, lang)
    title = html.escape(f"{stage_title(stage, lang)} — {said}" if said else stage_title(stage, lang))
    return (f'<div class="forward-diagram" style="text-align: center"><div class="forward-title">{title}</div>'
            f'<svg viewBox="0 0 {width} {height}" width="{width}" role="img" aria-label="{title}" '
            f'style="display: block; margin: 4px auto 0; max-width: 100%; height: auto">{"".join(parts)}</svg></div>')


def levels(values: np.ndarray, signed: bool) -> tuple[np.ndarray, float]:
    """(each cell as a signed byte: value / scale * LEVELS, the scale: the largest magnitude)."""
    scale = float(np.abs(values).max()) if values.size else 1.0
    scale = scale if scale > 0 else 1.0
    return np.round(values / scale * LEVELS).astype(np.int8), scale


def heatmap(piece: Slice, lang: str = "en") -> Figure:
    """The stage's matrix, rows are tokens (positions), the followed row outlined; the token ids as a list and
    the chosen token as its candidates' bars (`ids_list`, `candidates`)."""
    if piece.stage == "ids":
        return ids_list(piece, lang)
    if piece.stage == "next":
        return candidates(piece, lang)
    follow = piece.follow
    values, cols, title = piece.values, piece.cols, f"{t(f'forward.stage.{piece.stage}', lang)} {shape_text(piece)}"
    if piece.stage == "gate_up" and values.shape[1] > 3 * UNITS:  # a real LLM's 3 x 1,536 units: the first of each
        d_ff = values.shape[1] // 3
        keep = np.concatenate([np.arange(part * d_ff, part * d_ff + UNITS) for part in range(3)])
        values, cols = values[:, keep], [cols[j] for j in keep]
        title = f"{title}, {t('forward.first_units', lang, n=UNITS, d_ff=d_ff)}"
    signed = bool((values < 0).any())
    z, scale = levels(values, signed)
    rows, cols = position_labels(piece.rows, lang), axis_text(cols, lang)
    ticks = [-LEVELS, 0, LEVELS] if signed else [0, LEVELS]
    colorbar = dict(tickvals=ticks, ticktext=[f"{v / LEVELS * scale:.3g}" for v in ticks], thickness=12)
    trace = dict(type="heatmap", z=z, x=cols, y=rows, colorscale=SIGNED if signed else POSITIVE,
                 zmin=-LEVELS if signed else 0, zmax=LEVELS, colorbar=colorbar,
                 hovertemplate=t("forward.hover", lang, scale=f"{scale / LEVELS:.3g}"))
    outline = [dict(type="rect", xref="paper", x0=0, x1=1, yref="y", y0=follow - 0.5, y1=follow + 0.5,
                    line=dict(color="#111", width=2))] if 0 <= follow < len(rows) else []
    every = max(1, -(-len(rows) // 40))
    layout = dict(title=top_title(title),
                  height=min(700, 160 + 9 * len(rows)), margin=dict(l=110, r=20, t=50, b=40), shapes=outline,
                  xaxis=dict(type="category", showticklabels=len(cols) <= TICKED),
                  yaxis=dict(type="category", autorange="reversed", tickmode="array", tickvals=rows[::every],
                             ticktext=axis_text(piece.rows, lang)[::every]))
    return Figure([trace], layout)


def _table(columns: list[str], cells: list[list], title: str, height: int, highlight: int | None = None) -> Figure:
    """A plotly table: `columns` as its header, `cells` one list per column; row `highlight` filled."""
    n = len(cells[0]) if cells else 0
    fill = ["#fdae61" if i == highlight else ("#f7f9fc" if i % 2 else "white") for i in range(n)]
    trace = dict(type="table", header=dict(values=[f"<b>{html.escape(c)}</b>" for c in columns], fill=dict(
                     color="#eef2fb"), align="left"),
                 cells=dict(values=cells, align="left", fill=dict(color=[fill] * len(cells)), height=24))
    return Figure([trace], dict(title=top_title(title), height=height, margin=dict(l=10, r=10, t=50, b=10)))


def ids_list(piece: Slice, lang: str = "en") -> Figure:
    """The token ids as a list: position, token, id, the followed token's row filled."""
    positions = list(range(len(piece.rows)))
    tokens = [plain(render(label, lang)) for label in piece.rows]
    ids = [int(v) for v in piece.values[:, 0]]
    height = min(700, 90 + 24 * (len(ids) + 1))
    return _table([t("forward.position", lang), t("forward.token", lang), "id"], [positions, tokens, ids],
                  f"{t('forward.stage.ids', lang)} {shape_text(piece)}", height, piece.follow)


def candidates(piece: Slice, lang: str = "en") -> Figure:
    """The followed token's likeliest next tokens, the chosen one (the argmax) on top and coloured."""
    probs = piece.values[piece.follow] if len(piece.values) else np.zeros(0, np.float32)
    names = [f"{i + 1}. {plain(repr(render(c, lang))[1:-1])}" for i, c in enumerate(piece.cols)]
    colours = [LIT if i == 0 else EDGE for i in range(len(names))]
    label = plain(render(piece.rows[piece.follow], lang)) if piece.rows else ""
    title = t("forward.candidates_title", lang, stage=f"{t('forward.stage.next', lang)} {shape_text(piece)}",
              token=label, position=piece.follow)
    layout = dict(title=top_title(title),
                  height=max(260, 26 * len(names) + 110), margin=dict(l=140, r=50, t=50, b=40),
                  xaxis=dict(title=dict(text=t("forward.probability", lang)), range=[0, 1.08]),
                  yaxis=dict(type="category", autorange="reversed"))
    trace = dict(type="bar", orientation="h", x=probs.astype(np.float64).round(4), y=names,
                 marker=dict(color=colours), text=[f"{p:.3f}" for p in probs], textposition="outside",
                 cliponaxis=False, hovertemplate="%{y}: %{x:.4f}<extra></extra>")
    return Figure([trace], layout)


def row(piece: Slice, lang: str = "en", run: Walk | None = None) -> Figure:
    """The followed token's row, with its exact values; at the rotation stage the angle of each pair, and at
    the chosen-token stage the token picked after every position (`run` given)."""
    if piece.stage == "rope" and piece.angles is not None:
        return rotation_angles(piece, lang)
    if piece.stage == "next" and run is not None:
        return picked_table(run, piece, lang)
    if piece.stage == "ids" and piece.rows:
        # the token goes in as written: the placeholder escapes its whole message once
        return placeholder(t("forward.id_of", lang, position=piece.follow, token=render(piece.rows[piece.follow], lang),
                             id=int(piece.values[piece.follow, 0])), height=120)
    follow = piece.follow
    values = piece.values[follow] if len(piece.values) else np.zeros(0, np.float32)
    label = render(piece.rows[follow], lang) if piece.rows else ""
    x = axis_text(piece.cols, lang)
    if len(values) <= TICKED:  # a bar per named column (the vocabulary's, the classes)
        trace = dict(type="bar", x=x, y=values.astype(np.float32), marker=dict(color=EDGE),
                     hovertemplate="%{x}: %{y:.4g}<extra></extra>")
    else:  # a vector's 192 dimensions: one filled line (one SVG path), not 192 bars (5x the browser's drawing)
        trace = dict(type="scatter", mode="lines", x=x, y=values.astype(np.float32), fill="tozeroy",
                     line=dict(color=EDGE, width=1), hovertemplate="%{x}: %{y:.4g}<extra></extra>")
    # plain numbers on the axis: plotly's SI prefixes wrote a loss of 8e-6 as "8µ"
    title = t("forward.text_row_title", lang) if piece.whole_text else t("forward.row_title", lang,
                                                                          token=plain(label), position=follow)
    layout = dict(title=top_title(title), height=260,
                  margin=dict(l=60, r=20, t=50, b=40),
                  yaxis=dict(exponentformat="power"),
                  xaxis=dict(type="category", showticklabels=len(values) <= TICKED))
    return Figure([trace], layout)


def rotation_angles(piece: Slice, lang: str = "en") -> Figure:
    """The angle by which the followed position turns each pair of dimensions (degrees, modulo a full turn)."""
    degrees = np.degrees(piece.angles).round(1)
    pairs = [f"{i}, {i + len(degrees)}" for i in range(len(degrees))]
    layout = dict(title=top_title(t("forward.angles_title", lang, position=piece.follow)), height=260,
                  margin=dict(l=60, r=20, t=50, b=40),
                  xaxis=dict(type="category", title=dict(text=t("forward.pair", lang)),
                             showticklabels=len(pairs) <= TICKED),
                  yaxis=dict(title=dict(text=t("forward.angle", lang)), range=[0, 360]))
    return Figure([dict(type="bar", x=pairs, y=degrees, marker=dict(color=EDGE),
                        hovertemplate=t("forward.angle_hover", lang))], layout)


def picked_table(run: Walk, piece: Slice, lang: str = "en") -> Figure:
    """After each position, the token the argmax picks and its probability: the model's next token, step by step."""
    rows = picks(run)
    tokens = [plain(render(token, lang)) for token, _, _ in rows]
    chosen = [plain(repr(render(pick, lang))[1:-1]) for _, pick, _ in rows]
    height = min(420, 90 + 24 * (len(rows) + 1))
    return _table([t("forward.position", lang), t("forward.token", lang), t("forward.picked", lang), "p"],
                  [list(range(len(rows))), tokens, chosen, [f"{p:.3f}" for _, _, p in rows]],
                  t("forward.picked_title", lang), height, piece.follow)


def sentence(run: Walk, piece: Slice, lang: str = "en") -> str:
    """The stage in one sentence (the glossary's words), and what this model does there."""
    if not piece.applies:
        return t("forward.not_this_kind", lang, stage=stage_title(piece.stage, lang))
    key = f"forward.says.{piece.stage}"
    rms = run.config.get("norm") == "rms"
    if piece.stage == "final_norm" and not run.config["norm_first"]:
        key = "forward.says.final_norm_post"
    elif piece.stage in ("norm", "final_norm") and rms:
        key = f"forward.says.{piece.stage}_rms"
    elif piece.stage == "embed" and run.config.get("positions") == "rotary":
        key = "forward.says.embed_scaled" if run.config.get("scale_embeddings") else "forward.says.embed_rotary"
    elif piece.stage == "ff" and run.config.get("gated"):
        key = "forward.says.ff_down"
    elif piece.stage in ("logits", "probs", "loss") and run.kind == "classifier":
        key = f"forward.says.{piece.stage}_classifier"
    elif piece.stage == "next" and run.kind == "translator":
        key = "forward.says.next_translator"
    elif piece.stage == "qkv" and ".cross_attn." in piece.points[0]:
        key = "forward.says.qkv_cross"
    elif piece.stage == "resid_mid" and run.kind == "translator" and piece.points[0].startswith("decoder."):
        key = "forward.says.resid_self" if piece.points[0].endswith(".resid_self") else "forward.says.resid_cross"
    said = t(key, lang, d_model=run.config["d_model"], d_head=run.d_head, d_ff=run.config["d_ff"])
    extra = []
    if piece.stage in ("qkv", "rope") and run.n_kv_head != run.n_head:
        group = run.n_head // run.n_kv_head
        kv = run.kv_head(piece.head)
        extra.append(t("forward.says.grouped", lang, head=piece.head, kv=kv, n_kv=run.n_kv_head, n=run.n_head,
                       heads=", ".join(str(h) for h in range(kv * group, (kv + 1) * group))))
    if piece.stage == "qkv" and run.config.get("qk_norm"):
        extra.append(t("forward.says.qk_norm", lang))
    if piece.stage == "rope":
        extra.append(t("forward.says.rope_base", lang, base=f"{run.rope_base(piece.layer):g}",
                       position=piece.follow))
    if piece.stage == "mask" and run.config.get("sliding_window") is not None:
        extra.append(t("forward.says.window", lang, w=run.config["sliding_window"]) if run.is_local(piece.layer)
                     else t("forward.says.global", lang, every=run.config["global_every"]))
    if piece.stage == "scores" and run.config.get("query_pre_attn_scalar"):
        extra.append(t("forward.says.scalar", lang, s=f"{run.config['query_pre_attn_scalar']:g}"))
    if run.kind == "translator" and piece.stage in ("next", "loss", "probs", "logits"):
        extra.append(t("forward.translation", lang, output=literal(run.output)))
    return " ".join([said, *extra])


def points_text(piece: Slice) -> str:
    return ", ".join(f"`{p}`" for p in piece.points)
