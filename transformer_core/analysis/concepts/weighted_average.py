"""Idea 1: self-attention is a weighted average of value vectors, shown on matrices typed by hand."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import torch

from ...model.layers import attend
from .common import ConceptInputError

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def parse_matrix(text: str, name: str, max_rows: int = 8, max_cols: int = 8) -> torch.Tensor:
    """Rows of numbers, one row per line, separated by spaces or commas -> (rows, cols) float tensor."""
    rows = []
    for line_no, line in enumerate((text or "").strip().splitlines(), start=1):
        cells = [c for c in re.split(r"[,\s;]+", line.strip()) if c]
        if not cells:
            continue
        bad = [c for c in cells if not _NUMBER.fullmatch(c)]
        if bad:
            raise ConceptInputError(f"{name}, line {line_no}: {bad[0]!r} is not a number", "not_a_number",
                                    name=name, line=line_no, value=repr(bad[0]))
        rows.append([float(c) for c in cells])
    if not rows:
        raise ConceptInputError(f"{name} is empty: type one row of numbers per line, e.g. '1 0'", "empty", name=name)
    widths = {len(r) for r in rows}
    if len(widths) > 1:
        raise ConceptInputError(f"{name}: every line needs the same number of values, got {sorted(widths)}", "ragged",
                                name=name, widths=", ".join(map(str, sorted(widths))))
    if len(rows) > max_rows or len(rows[0]) > max_cols:
        raise ConceptInputError(f"{name}: at most {max_rows} rows of {max_cols} values, got {len(rows)}x{len(rows[0])}",
                                "too_big", name=name, max_rows=max_rows, max_cols=max_cols, rows=len(rows),
                                cols=len(rows[0]))
    m = torch.tensor(rows)
    if not torch.isfinite(m).all() or m.abs().max() > 1e3:
        raise ConceptInputError(f"{name}: values must be finite and at most 1000 in size", "not_finite", name=name)
    return m


@dataclass
class WeightedAverage:
    """Self-attention over n vectors, with every intermediate.

    x (n, d) inputs; q, k (n, d_k); v (n, d_v); scores (n, n) what softmax saw;
    attn (n, n) rows sum to 1; y (n, d_v) = attn @ v, each output a weighted average of the v rows.
    """

    x: torch.Tensor
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    scores: torch.Tensor
    attn: torch.Tensor
    y: torch.Tensor
    scaled: bool


def single_head(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scaled: bool):
    """Run `attend` on (n, d) matrices as one batch of one head: (scores, attn, out).

    `attend` always divides by √d_k; for the unscaled textbook version softmax(q kᵀ)
    the queries are multiplied by √d_k first, which undoes that division exactly.
    """
    d_k = q.shape[-1]
    q_in = q if scaled else q * math.sqrt(d_k)
    seen = {}

    def keep(part: str, x: torch.Tensor) -> torch.Tensor:  # attend passes its stages through this hook
        seen[part] = x
        return x

    out, attn = attend(q_in[None, None], k[None, None], v[None, None], need_weights=True, hook=keep)
    return seen["scores"][0, 0], attn[0, 0], out[0, 0]


def self_attention_average(x, w_q=None, w_k=None, w_v=None, scaled: bool = False) -> WeightedAverage:
    """Self-attention of the rows of x (n, d). Without projections q = k = v = x (the
    parameter-free version, weights softmax(x xᵀ)); with them q = x W_q, k = x W_k, v = x W_v."""
    given = [w is not None for w in (w_q, w_k, w_v)]
    if any(given) and not all(given):
        raise ConceptInputError("give all three of W_q, W_k, W_v, or none of them")
    if all(given):
        for w, name in ((w_q, "W_q"), (w_k, "W_k"), (w_v, "W_v")):
            if w.shape[0] != x.shape[1]:
                raise ConceptInputError(f"{name} needs {x.shape[1]} rows (one per input dimension), got {w.shape[0]}",
                                        "projection_rows", name=name, need=x.shape[1], got=w.shape[0])
        if w_q.shape[1] != w_k.shape[1]:
            raise ConceptInputError(
                f"W_q and W_k need the same number of columns, got {w_q.shape[1]} and {w_k.shape[1]}",
                "query_key_columns", q=w_q.shape[1], k=w_k.shape[1])
        q, k, v = x @ w_q, x @ w_k, x @ w_v
    else:
        q = k = v = x
    scores, attn, y = single_head(q, k, v, scaled)
    return WeightedAverage(x, q, k, v, scores, attn, y, scaled)
