"""Import BERT weights into `EncoderClassifier`, so a pre-trained encoder can teach ours.

BERT is the 2017 encoder with post-LN blocks, GELU, learned positions and one
extra LayerNorm on the summed embeddings (`embed_norm`). It also adds a
"segment" (token type) vector to every token; single sentences are all
segment 0, so that vector is folded into the position table. Projections are
`nn.Linear` on both sides: the mapping only renames. The classifier head is new
(random): BERT's own pooler is not used, mean pooling is, as sentence-transformers
models were trained with it.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from tokenizers import Tokenizer

from ..model.models import EncoderClassifier, EncoderClassifierConfig


class BertImportError(ValueError):
    """The files are not a BERT checkpoint this importer understands."""


def bert_config(hf_config: dict, n_class: int = 2) -> EncoderClassifierConfig:
    """Our config for a Hugging Face BERT config.json dict."""
    if hf_config.get("model_type") != "bert" or hf_config.get("hidden_act") != "gelu":
        raise BertImportError(f"expected a BERT config with GELU, got model_type={hf_config.get('model_type')!r}, "
                              f"hidden_act={hf_config.get('hidden_act')!r}")
    missing = sorted({"vocab_size", "max_position_embeddings", "hidden_size", "num_attention_heads",
                      "num_hidden_layers", "intermediate_size"} - hf_config.keys())
    if missing:
        raise BertImportError(f"the BERT config lacks {', '.join(missing)}")
    return EncoderClassifierConfig(
        vocab_size=hf_config["vocab_size"],
        max_len=hf_config["max_position_embeddings"],
        d_model=hf_config["hidden_size"],
        n_head=hf_config["num_attention_heads"],
        n_layer=hf_config["num_hidden_layers"],
        d_ff=hf_config["intermediate_size"],
        dropout=hf_config.get("hidden_dropout_prob", 0.1),
        activation="gelu",
        norm_first=False,
        positions="learned",
        layer_norm_eps=hf_config.get("layer_norm_eps", 1e-12),
        embed_norm=True,
        n_class=n_class,
        pooling="mean",
    )


# BERT's names within one encoder layer -> ours
_LAYER_NAMES = {"attention.self.query": "self_attn.w_q", "attention.self.key": "self_attn.w_k",
                "attention.self.value": "self_attn.w_v", "attention.output.dense": "self_attn.w_o",
                "attention.output.LayerNorm": "norm_self", "intermediate.dense": "ff.w_1",
                "output.dense": "ff.w_2", "output.LayerNorm": "norm_ff"}


def encoder_classifier_from_bert(state_dict: dict[str, torch.Tensor], hf_config: dict,
                                 n_class: int = 2, seed: int = 0) -> EncoderClassifier:
    """An EncoderClassifier holding a BERT state dict's encoder and a new seeded head."""
    config = bert_config(hf_config, n_class)
    sd = {k.removeprefix("bert."): v for k, v in state_dict.items()}
    try:
        ours = {
            "embed.tok.weight": sd["embeddings.word_embeddings.weight"],
            "embed.pos.weight": sd["embeddings.position_embeddings.weight"] + sd["embeddings.token_type_embeddings.weight"][0],
            "embed.norm.weight": sd["embeddings.LayerNorm.weight"],
            "embed.norm.bias": sd["embeddings.LayerNorm.bias"],
        }
        for i in range(config.n_layer):
            for theirs, mine in _LAYER_NAMES.items():
                for p in ("weight", "bias"):
                    ours[f"layers.{i}.{mine}.{p}"] = sd[f"encoder.layer.{i}.{theirs}.{p}"]
    except KeyError as e:
        raise BertImportError(f"the BERT weights lack {e.args[0]}") from None
    with torch.random.fork_rng():  # a seeded head without reseeding the caller's generator
        torch.manual_seed(seed)
        model = EncoderClassifier(config)
    ours["head.weight"], ours["head.bias"] = model.head.weight.detach(), model.head.bias.detach()
    try:
        model.load_state_dict({k: v.contiguous().float() for k, v in ours.items()}, strict=True)
    except RuntimeError as e:  # shapes that contradict the config
        raise BertImportError(str(e).splitlines()[0]) from None
    return model


def load_bert(folder: str | Path, n_class: int = 2, seed: int = 0,
              max_len: int | None = None) -> tuple[EncoderClassifier, Tokenizer]:
    """A BERT folder (config.json, model.safetensors, tokenizer.json) -> (classifier, its WordPiece tokenizer).

    The tokenizer adds [CLS] ... [SEP] itself, as the encoder saw in pre-training, and cuts
    encodings to `max_len` tokens (default: the model's); it never pads (batches pad themselves)."""
    from safetensors.torch import load_file

    folder = Path(folder)
    files = [folder / name for name in ("config.json", "model.safetensors", "tokenizer.json")]
    if not all(f.is_file() for f in files):
        raise BertImportError(f"{folder} needs config.json, model.safetensors and tokenizer.json")
    model = encoder_classifier_from_bert(load_file(str(files[1])), json.loads(files[0].read_text()), n_class, seed)
    tokenizer = Tokenizer.from_file(str(files[2]))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_len or model.config.max_len)
    return model, tokenizer
