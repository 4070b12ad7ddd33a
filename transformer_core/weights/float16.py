"""Checkpoints whose matrices stay float16 in memory: the real LLMs, half of float32's bytes, their choices kept.

Why float16: the LLMs' weights come from 4- to 8-bit GGUF blocks, and SmolLM2 reacts to every further rounding.
On 20 texts (benchmarks/llm.py), against the float32 import, the top choice moved at about 1 in 100 positions
with bfloat16 weights, 3 with bfloat16 inputs too (what oneDNN's fast bfloat16 and the int4 "tinygemm" kernels
read), 6 with int8 weights and a scale per row, and 46 with fbgemm's int8 kernel, which also rounds each input
to int8; with float16 (11 bits of each weight and each input) at none or 1 in 400 (benchmarks/RESULTS.md).
So the matrices (embeddings, projections, a tied output layer once) are stored and kept float16; a linear layer
reads one or two tokens' input as float16 (decoding) and a prompt's rows as float32 (`HalfLinear`), and gives
float32 back, so the residual stream, the norms and attention stay float32 (Gemma's residual stream outgrows
float16's range).

`load_model` reads such a folder (config.json says `"weights": "float16"`); on a GPU the model is float32.
"""

from __future__ import annotations

import dataclasses
import json
import math
import typing
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors import safe_open
from torch import nn

from ..device import on_two_cores
from .hub import LOADERS, save_checkpoint, shapes_only

FLOAT16 = "float16"


def save_float16(model: nn.Module, folder: str | Path, tokenizer=None, card: str | None = None,
                 extra_config: dict | None = None) -> Path:
    """`save_checkpoint` in float16; `extra_config` keys (what it reads, its chat template) join config.json."""
    folder = save_checkpoint(model, folder, tokenizer, card, dtype=torch.float16)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config.update(extra_config or {}, weights=FLOAT16)
    (folder / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return folder


# Rows above which W is read as float32 and x kept float32: a CPU's float16 matrix product is fast for a token
# or two (decoding, where reading the weights is the cost, and half the bytes is half the time) but several times
# slower than float32 for a prompt's rows (where the arithmetic is the cost); x is then not rounded at all.
HALF_ROWS = 2
# Weights read as float32 at once (16 MB): Gemma's tied output layer whole would be a 671 MB float32 copy per prompt
FLOAT32_CHUNK = 2**22
# Weights from which a CPU reads a prompt's product in two halves of the output at once: the tied output layers
# (SmolLM2's 28M, Gemma's 168M), whose float32 reading is most of a short prompt's pass
SPLIT_FROM = 2**24


class HalfLinear(nn.Module):
    """x W^T (+ b) with W kept float16, the output given as float32. Up to HALF_ROWS rows the input is read as
    float16 (float16 arithmetic); more rows are multiplied in float32, as is an input that outgrows float16's
    range (rare: Gemma's gated hidden units)."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None):
        super().__init__()
        self.weight = nn.Parameter(weight.to(torch.float16), requires_grad=False)
        self.bias = None if bias is None else nn.Parameter(bias.to(torch.float16), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.numel() <= HALF_ROWS * x.shape[-1]:
            out = F.linear(x.to(torch.float16), self.weight, self.bias).float()
            # finite exactly when every entry is (float16's largest values cannot overflow a float32 sum); one
            # sum is a quarter of isfinite().all()'s cost, paid by each of a decoding step's ~200 products
            if math.isfinite(out.sum()):
                return out
        x, per = x.float(), max(1, FLOAT32_CHUNK // self.weight.shape[1])
        bias = None if self.bias is None else self.bias.float()

        def outputs(ids: range) -> torch.Tensor:  # the outputs `ids`, their weights read a chunk at a time
            return torch.cat([F.linear(x, self.weight[i:min(i + per, ids.stop)].float(),
                                       None if bias is None else bias[i:min(i + per, ids.stop)])
                              for i in range(ids.start, ids.stop, per)], dim=-1)

        n = len(self.weight)
        if x.device.type == "cpu" and self.weight.numel() >= SPLIT_FROM:  # the halves are independent: a core each
            return torch.cat(on_two_cores(outputs, [range(0, n // 2), range(n // 2, n)]), dim=-1)
        return outputs(range(n))


class HalfEmbedding(nn.Module):
    """An embedding table kept float16; a token's vector comes out float32."""

    def __init__(self, weight: torch.Tensor):
        super().__init__()
        self.weight = nn.Parameter(weight.to(torch.float16), requires_grad=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return F.embedding(idx, self.weight).float()


def load_float16(cls: type[nn.Module], folder: Path, config: dict, device=None) -> nn.Module:
    """The model with its matrices float16 (`HalfLinear`, `HalfEmbedding`, a tied output layer sharing the
    embedding's table) and its vectors float32; on a GPU, all float32. Built on the meta device, the file read a
    tensor at a time: Gemma's float32 copy would be 1.1 GB."""
    config_cls = typing.get_type_hints(cls.__init__)["config"]
    model_config = config_cls(**{k: v for k, v in config.items() if k in {f.name for f in dataclasses.fields(config_cls)}})
    with shapes_only():
        model = cls(model_config)
    tied = getattr(model_config, "tie_embeddings", False)
    with safe_open(str(folder / "model.safetensors"), framework="pt") as stored:
        names = set(stored.keys())
        if device is not None and torch.device(device).type != "cpu":
            weights = {name: stored.get_tensor(name).float() for name in names}
            if tied:
                weights.setdefault("head.weight", weights["embed.tok.weight"])
            model.load_state_dict(weights, strict=True, assign=True)
            if tied:
                model.head.weight = model.embed.tok.weight
            return model
        for path, module in list(model.named_modules()):
            if not isinstance(module, (nn.Linear, nn.Embedding)) or f"{path}.weight" not in names:
                continue
            weight = stored.get_tensor(f"{path}.weight")
            names.discard(f"{path}.weight")
            if isinstance(module, nn.Embedding):
                half = HalfEmbedding(weight)
            else:
                bias = stored.get_tensor(f"{path}.bias") if f"{path}.bias" in names else None
                names.discard(f"{path}.bias")
                half = HalfLinear(weight, bias)
            parent, _, name = path.rpartition(".")
            setattr(model.get_submodule(parent), name, half)
        if tied:  # one table reads tokens in and writes them out, as in the float model
            model.head = HalfLinear(torch.empty(0))
            model.head.weight = model.embed.tok.weight
        left = model.load_state_dict({name: stored.get_tensor(name).float() for name in names}, strict=False,
                                     assign=True)
    placed = {f"{path}.{p}" for path, m in model.named_modules() if isinstance(m, (HalfLinear, HalfEmbedding))
              for p, _ in m.named_parameters()}
    if left.unexpected_keys or set(left.missing_keys) - placed:  # a weight missing from or extra to the file
        raise ValueError(f"missing {sorted(set(left.missing_keys) - placed)}, unexpected {left.unexpected_keys}")
    return model


LOADERS[FLOAT16] = load_float16
