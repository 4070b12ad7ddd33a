"""Import GPT-2 weights into `DecoderLM`, so real GPT-2 attention can be explored with our code.

GPT-2 stores its projections as `Conv1D` (y = x W + b, W of shape (in, out)) and
fuses Q, K and V into one `c_attn`; our layers are `nn.Linear` (W of shape
(out, in)) with separate w_q, w_k, w_v. The mapping transposes and splits.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from ..model.models import DecoderLM, DecoderLMConfig
from .hub import hub_repo, missing_folder


class GPT2ImportError(ValueError):
    """The files are not a GPT-2 checkpoint this importer understands."""


def gpt2_config(hf_config: dict) -> DecoderLMConfig:
    """Our config for a Hugging Face GPT-2 config.json dict."""
    if hf_config.get("activation_function", "gelu_new") not in ("gelu_new", "gelu_pytorch_tanh"):
        raise GPT2ImportError(f"unsupported activation {hf_config['activation_function']!r}")
    d_model = hf_config["n_embd"]
    return DecoderLMConfig(
        vocab_size=hf_config["vocab_size"],
        max_len=hf_config["n_positions"],
        d_model=d_model,
        n_head=hf_config["n_head"],
        n_layer=hf_config["n_layer"],
        d_ff=hf_config.get("n_inner") or 4 * d_model,
        dropout=0.0,
        activation="gelu_tanh",
        norm_first=True,
        positions="learned",
        bias=True,
        layer_norm_eps=hf_config.get("layer_norm_epsilon", 1e-5),
        tie_embeddings=True,
    )


def decoder_lm_from_gpt2(state_dict: dict[str, torch.Tensor], hf_config: dict) -> DecoderLM:
    """Build a DecoderLM holding exactly the weights of a GPT-2 state dict."""
    config = gpt2_config(hf_config)
    sd = {k.removeprefix("transformer."): v for k, v in state_dict.items()}
    d = config.d_model
    ours: dict[str, torch.Tensor] = {
        "embed.tok.weight": sd["wte.weight"],
        "embed.pos.weight": sd["wpe.weight"],
        "norm.weight": sd["ln_f.weight"],
        "norm.bias": sd["ln_f.bias"],
    }
    for i in range(config.n_layer):
        h, o = f"h.{i}.", f"layers.{i}."
        w_qkv, b_qkv = sd[h + "attn.c_attn.weight"], sd[h + "attn.c_attn.bias"]  # (d, 3d), (3d,)
        for j, name in enumerate(("w_q", "w_k", "w_v")):
            ours[o + f"self_attn.{name}.weight"] = w_qkv[:, j * d : (j + 1) * d].t()
            ours[o + f"self_attn.{name}.bias"] = b_qkv[j * d : (j + 1) * d]
        ours[o + "self_attn.w_o.weight"] = sd[h + "attn.c_proj.weight"].t()
        ours[o + "self_attn.w_o.bias"] = sd[h + "attn.c_proj.bias"]
        ours[o + "ff.w_1.weight"] = sd[h + "mlp.c_fc.weight"].t()
        ours[o + "ff.w_1.bias"] = sd[h + "mlp.c_fc.bias"]
        ours[o + "ff.w_2.weight"] = sd[h + "mlp.c_proj.weight"].t()
        ours[o + "ff.w_2.bias"] = sd[h + "mlp.c_proj.bias"]
        for theirs, mine in (("ln_1", "norm_self"), ("ln_2", "norm_ff")):
            ours[o + f"{mine}.weight"] = sd[h + f"{theirs}.weight"]
            ours[o + f"{mine}.bias"] = sd[h + f"{theirs}.bias"]
    model = DecoderLM(config)
    ours["head.weight"] = ours["embed.tok.weight"]  # tied, as in GPT-2
    model.load_state_dict({k: v.contiguous().float() for k, v in ours.items()}, strict=True)
    return model.eval()


def load_gpt2(name_or_path: str | Path = "hf://gpt2") -> DecoderLM:
    """GPT-2 from a local folder (config.json + model.safetensors) or a Hub repo written hf://name."""
    from safetensors.torch import load_file

    repo_id = hub_repo(name_or_path)
    if repo_id is None:
        path = Path(name_or_path).expanduser()
        if not path.is_dir():
            raise GPT2ImportError(missing_folder(name_or_path, "GPT-2"))
        config_file, weights = path / "config.json", path / "model.safetensors"
    else:
        from huggingface_hub import hf_hub_download

        config_file = Path(hf_hub_download(repo_id, "config.json"))
        weights = Path(hf_hub_download(repo_id, "model.safetensors"))
    if not config_file.is_file() or not weights.is_file():
        raise GPT2ImportError(f"{config_file.parent.absolute()} needs config.json and model.safetensors")
    return decoder_lm_from_gpt2(load_file(str(weights)), json.loads(config_file.read_text()))
