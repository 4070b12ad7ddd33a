"""Where the models run: cuda > mps > cpu, unless TRANSFORMER_CORE_DEVICE says otherwise.

On CUDA the forward pass runs under bf16 autocast: matrix products in bfloat16
(twice the tensor-core throughput, the same exponent range as fp32, so no loss
scaling), reductions such as softmax and LayerNorm kept in fp32 by autocast.
"""

from __future__ import annotations

import os
from contextlib import nullcontext

import torch

from .distributed import hardware, local

ENV_VAR = "TRANSFORMER_CORE_DEVICE"


class DeviceError(ValueError):
    """TRANSFORMER_CORE_DEVICE names a device torch does not know, or one this machine lacks."""


def default_device() -> torch.device:
    """The device models should run on."""
    chosen = os.environ.get(ENV_VAR)
    if chosen:
        try:
            device = torch.device(chosen)
        except RuntimeError as e:
            raise DeviceError(f"{ENV_VAR}={chosen!r} is not a device (try cpu, cuda, cuda:1 or mps)") from e
        if device.type == "cuda" and not torch.cuda.is_available():
            raise DeviceError(f"{ENV_VAR}={chosen!r} but this machine has no CUDA GPU that torch can use")
        return local(device)
    if torch.cuda.is_available():
        return local(torch.device("cuda"))
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def device_of(model: torch.nn.Module) -> torch.device:
    """The device a model's weights are on: inputs must be built there."""
    return next(model.parameters()).device


def autocast(device: torch.device | str):
    """bf16 autocast on CUDA; nothing elsewhere (CPU bf16 is slower than fp32 on most CPUs)."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return nullcontext()


def describe(device: torch.device | str) -> str:
    """What a model card says a run trained on (under torchrun: how many processes, and each one's device)."""
    device = torch.device(device)
    if device.type == "cuda":
        return hardware(f"one {torch.cuda.get_device_name(device)} (bf16 autocast)", device)
    if device.type == "cpu":
        return hardware(f"{torch.get_num_threads()} CPU thread(s) of a shared machine", device)
    return hardware(device.type, device)
