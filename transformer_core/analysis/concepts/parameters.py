"""Idea 5: heads split the width, they add no parameters; and where a whole model's parameters live."""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from ...model.layers import MultiHeadAttention
from ...model.models import TransformerConfig
from .common import ConceptInputError

def _numel(*modules: nn.Module) -> int:
    return sum(p.numel() for m in modules for p in m.parameters())


@dataclass
class HeadCount:
    """Parameters of one MultiHeadAttention layer; total is sum(p.numel()) of the real module."""

    n_head: int
    d_head: int
    qkv: int
    out: int
    total: int


def head_parameter_counts(d_model: int, heads=(1, 2, 4, 8), bias: bool = True) -> list[HeadCount]:
    """Build real attention layers of width d_model with each head count and count their parameters."""
    if not 1 <= d_model <= 4096:
        raise ConceptInputError(f"d_model must lie in 1..4096, got {d_model}")
    bad = [h for h in heads if h < 1 or d_model % h]
    if bad:
        raise ConceptInputError(f"d_model={d_model} must be divisible by every head count; {bad} do not divide it",
                                "heads_divide", d_model=d_model, heads=", ".join(map(str, bad)))
    rows = []
    for n_head in heads:
        config = TransformerConfig(d_model=d_model, n_head=n_head, d_ff=d_model, bias=bias)
        layer = MultiHeadAttention(config)
        rows.append(HeadCount(n_head, config.d_head, _numel(layer.w_q, layer.w_k, layer.w_v), _numel(layer.w_o),
                              _numel(layer)))
    return rows


@dataclass
class ComponentCount:
    """Parameters of one component, summed over layers ("layers.*.ff" covers every layer's ff)."""

    component: str
    tensors: int
    params: int
    shared_with: str = ""  # a tied tensor counted once, under the name it appears first


def component_of(param_name: str) -> str:
    """'layers.3.self_attn.w_q.weight' -> 'layers.*.self_attn'; 'embed.tok.weight' -> 'embed.tok'."""
    parts = param_name.split(".")[:-1]
    if len(parts) >= 3 and parts[1].isdigit():
        return f"{parts[0]}.*.{parts[2]}"
    return ".".join(parts[:2])


def parameter_table(model: nn.Module) -> list[ComponentCount]:
    """Per-component parameter counts; rows sum to sum(p.numel() for p in model.parameters())."""
    rows: dict[str, ComponentCount] = {}
    first_name: dict[int, str] = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        row = rows.setdefault(component_of(name), ComponentCount(component_of(name), 0, 0))
        if id(p) in first_name:  # a tied weight (e.g. the LM head reuses the token embedding)
            row.shared_with = first_name[id(p)]
            continue
        first_name[id(p)] = name
        row.tensors += 1
        row.params += p.numel()
    return list(rows.values())
