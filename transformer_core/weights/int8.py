"""Checkpoints with int8 matrices: a quarter of float32, for pre-trained models too large for fp16.

Every matrix (embeddings, projections) is stored as int8 with one float scale per row (row = scale * int8,
scale = the row's largest |weight| / 127); vectors (biases, norms) as fp16; a tied output matrix once.
`load_model` reads such a folder (config.json says `"weights": "int8"`) back into the model's float32
parameters. Rounding to 255 levels per row moves a weight by at most half a step; the model cards measure
what it costs.

A checkpoint whose config also says `"serve": "int8"` (the real LLMs) stays int8 in memory on a CPU: its
linear layers multiply with fbgemm's int8 kernel (`Int8Linear`, the activations rounded to int8 per call)
and its embedding gathers int8 rows (`Int8Embedding`). Generating a token reads every weight once, so reading
a quarter of float32's bytes is what makes it fast; the model cards measure what the rounding costs.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from torch import nn

from .hub import LOADERS, save_checkpoint, shapes_only

INT8 = "int8"
_SCALE = ".int8_scale"


def quantise(state_dict: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    out = {}
    tok = state_dict.get("embed.tok.weight")
    tied = tok is not None and "head.weight" in state_dict and state_dict["head.weight"].data_ptr() == tok.data_ptr()
    for name, w in state_dict.items():
        if tied and name == "head.weight":  # the embedding's rows, stored once
            continue
        w = w.detach().float().cpu()
        if w.ndim == 2:
            scale = w.abs().amax(dim=1).clamp_min(1e-12) / 127
            out[name] = torch.round(w / scale[:, None]).to(torch.int8)
            out[name + _SCALE] = scale
        else:
            out[name] = w.to(torch.float16)
    return out


def dequantise(stored: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {name: (w.float() * stored[name + _SCALE][:, None] if name + _SCALE in stored else w.float())
            for name, w in stored.items() if not name.endswith(_SCALE)}


def save_int8(model: nn.Module, folder: str | Path, tokenizer=None, card: str | None = None,
              extra_config: dict | None = None) -> Path:
    """`save_checkpoint`, with int8 matrices; `extra_config` keys (e.g. "languages") join config.json."""
    folder = save_checkpoint(model, folder, tokenizer, card, dtype=torch.float16)
    save_file(quantise(model.state_dict()), str(folder / "model.safetensors"))
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config.update(extra_config or {}, weights=INT8)
    (folder / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return folder


SERVE = "serve"  # config.json's key: how a CPU keeps the model in memory ("int8", or float32 when absent)


def load_int8(cls: type[nn.Module], folder: Path, config: dict, device: torch.device | str = "cpu") -> nn.Module:
    """The model, its weights dequantised once, here; or, for a config that says `"serve": "int8"` on a CPU,
    kept int8 (`Int8Linear`, `Int8Embedding`). It is built on the meta device and the weights put in place
    (`assign`): drawing random initial weights only to overwrite them took half of a 35M-parameter load (the app
    loads every checkpoint before it serves). A model with buffers the file does not hold (a sinusoidal position
    table) is built for real."""
    config_cls = typing.get_type_hints(cls.__init__)["config"]
    names = {f.name for f in dataclasses.fields(config_cls)}
    model_config = config_cls(**{k: v for k, v in config.items() if k in names})
    with shapes_only():
        model = cls(model_config)
    if any(True for _ in model.buffers()):
        model = cls(model_config)
    if config.get(SERVE) == INT8 and torch.device(device).type == "cpu":
        with safe_open(str(folder / "model.safetensors"), framework="pt") as stored:  # a tensor at a time
            return _kept_int8(model, stored)
    weights = dequantise(load_file(str(folder / "model.safetensors")))
    if getattr(model_config, "tie_embeddings", False) and "head.weight" not in weights:
        weights["head.weight"] = weights["embed.tok.weight"]
    model.load_state_dict(weights, strict=True, assign=True)
    if getattr(model_config, "tie_embeddings", False):
        model.head.weight = model.embed.tok.weight
    return model


class Int8Linear(nn.Module):
    """x W^T + b with W kept as int8 rows and a scale per row, multiplied by fbgemm's kernel: each call rounds
    x to int8 (one scale for the whole input) and sums int8 products in int32."""

    def __init__(self, weight: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor | None = None):
        super().__init__()
        self.out_features, self.in_features = weight.shape
        rows = torch._make_per_channel_quantized_tensor(weight, scale.double(), torch.zeros(len(scale), dtype=torch.long), 0)
        self._packed = torch.ops.quantized.linear_prepack(rows, None if bias is None else bias.float())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.quantized.linear_dynamic(x.float(), self._packed, False)

    @property
    def weight(self) -> torch.Tensor:
        """The weight as float32 (unpacked anew each time: for reading, not for computing)."""
        rows, _ = torch.ops.quantized.linear_unpack(self._packed)
        return rows.dequantize()


class Int8Embedding(nn.Module):
    """An embedding table kept as int8 rows and a scale per row: a token's vector is its row times its scale."""

    def __init__(self, weight: torch.Tensor, scale: torch.Tensor):
        super().__init__()
        self.register_buffer("rows", weight, persistent=False)
        self.register_buffer("scale", scale.float(), persistent=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.rows[idx].float() * self.scale[idx, None]

    @property
    def weight(self) -> torch.Tensor:
        return self.rows.float() * self.scale[:, None]


def _kept_int8(model: nn.Module, stored) -> nn.Module:
    """Put the int8 matrices of the open file `stored` into int8 modules in place of the model's Linear and
    Embedding layers, the vectors (fp16 in the file) into float32 parameters."""
    names = set(stored.keys())
    for path, module in list(model.named_modules()):
        key = f"{path}.weight"
        if key + _SCALE not in names or not isinstance(module, (nn.Linear, nn.Embedding)):
            continue
        weight, scale = stored.get_tensor(key), stored.get_tensor(key + _SCALE)
        names -= {key, key + _SCALE}
        if isinstance(module, nn.Embedding):
            kept = Int8Embedding(weight, scale)
        else:
            bias = stored.get_tensor(f"{path}.bias") if f"{path}.bias" in names else None
            names.discard(f"{path}.bias")
            kept = Int8Linear(weight, scale, bias)
        parent, _, name = path.rpartition(".")
        setattr(model.get_submodule(parent), name, kept)
        if path == "embed.tok" and getattr(model.config, "tie_embeddings", False):
            model.head = Int8Linear(weight, scale)  # the same rows write the logits (packed for the kernel)
    model.load_state_dict({name: stored.get_tensor(name).float() for name in names}, strict=True, assign=True)
    return model


LOADERS[INT8] = load_int8
