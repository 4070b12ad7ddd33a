"""Checkpoints with int8 matrices: a quarter of float32, for pre-trained encoders too large for fp16.

Every matrix (embeddings, projections) is stored as int8 with one float scale per row (row = scale * int8,
scale = the row's largest |weight| / 127); vectors (biases, norms) as fp16. `load_model` reads such a folder
(config.json says `"weights": "int8"`) back into the model's float32 parameters. Rounding to 255 levels per
row moves a weight by at most half a step; the model cards measure what it costs.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from .hub import LOADERS, save_checkpoint, shapes_only

INT8 = "int8"
_SCALE = ".int8_scale"


def quantise(state_dict: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    out = {}
    for name, w in state_dict.items():
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


def load_int8(cls: type[nn.Module], folder: Path, config: dict, device=None) -> nn.Module:
    """The model, its weights dequantised once, here. It is built on the meta device and the weights put in place
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
    model.load_state_dict(dequantise(load_file(str(folder / "model.safetensors"))), strict=True, assign=True)
    return model


LOADERS[INT8] = load_int8
