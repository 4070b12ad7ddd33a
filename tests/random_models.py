"""Random models for tests, drawn so that every output depends on the whole context.

At its training init (N(0, 0.02)) an untrained model's next-token distribution is nearly
uniform, and the old remedy, token embeddings x 50 with the output head tied to them,
gives a model that repeats its last token whatever came before it. On such models a KV
cache that ignores the past, or a beam search that never moves its cache rows, still
passes. Here every weight is drawn at the scale that keeps activations of size 1, the
query and key projections a little larger (attention far from uniform), learned
positions of size 1 (order matters) and an untied head whose logits spread by about
`LOGIT_SCALE` (distributions peaked, so greedy choices are not near-ties).
`depends_on_context` is the property the tests rely on; tests/core/test_model_models.py checks it.
"""

from __future__ import annotations

import math

import torch

import transformer_core as tc

SMALL = dict(d_model=32, n_head=4, n_layer=2, d_ff=64, max_len=64, dropout=0.0)
LOGIT_SCALE = 3.0
ATTENTION_SCALE = 2.0  # scores of size ~ATTENTION_SCALE**2: each query favours a few keys
HEADS = ("head", "generator")  # the output layers, scaled to LOGIT_SCALE


def randomize(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Redraw every weight of `model` (LayerNorms stay the identity); returns it in eval mode."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                continue
            if p.dim() == 1:  # biases
                p.copy_(0.1 * torch.randn(p.shape, generator=generator))
                continue
            embedding = name.endswith(("tok.weight", "pos.weight"))
            std = 1.0 if embedding else 1 / math.sqrt(p.shape[1])
            if name.split(".")[0] in HEADS:
                std *= LOGIT_SCALE
            elif name.endswith(("w_q.weight", "w_k.weight")):
                std *= ATTENTION_SCALE
            p.copy_(std * torch.randn(p.shape, generator=generator))
    return model.eval()


def lm(vocab_size: int = 40, seed: int = 0, **config) -> tc.DecoderLM:
    return randomize(tc.DecoderLM(tc.DecoderLMConfig(vocab_size=vocab_size, **{"tie_embeddings": False, **SMALL,
                                                                               **config})), seed)


# today's decoders as switches of the one config: Llama / SmolLM2 (RMSNorm, rotary positions, SwiGLU, 4 query heads
# sharing 2 key/value heads) and Gemma 3 (also QK-norm, a norm after each sublayer, scaled embeddings, 8-head
# queries of d_head 8 over one key/value head, local layers with a window of 5 and their own rotary base)
LLAMA = dict(norm="rms", positions="rotary", gated=True, activation="silu", bias=False, n_kv_head=2, rope_base=500.0)
GEMMA = dict(LLAMA, activation="gelu_tanh", n_head=8, d_head=8, n_kv_head=1, qk_norm=True, sandwich_norm=True,
             scale_embeddings=True, sliding_window=5, global_every=2, rope_local_base=50.0, rope_base=5000.0,
             layer_norm_eps=1e-6)


def modern_lm(family: dict = LLAMA, vocab_size: int = 40, seed: int = 0, **config) -> tc.DecoderLM:
    return lm(vocab_size, seed, **{**family, **config})


def encdec(src_vocab_size: int = 30, tgt_vocab_size: int = 25, seed: int = 0, **config) -> tc.EncoderDecoder:
    return randomize(tc.EncoderDecoder(tc.EncoderDecoderConfig(src_vocab_size=src_vocab_size,
                                                               tgt_vocab_size=tgt_vocab_size, **{**SMALL, **config})),
                     seed)


def classifier(vocab_size: int = 40, seed: int = 0, **config) -> tc.EncoderClassifier:
    return randomize(tc.EncoderClassifier(tc.EncoderClassifierConfig(vocab_size=vocab_size, **{**SMALL, **config})),
                     seed)


def depends_on_context(model: tc.DecoderLM, ids: list[int]) -> float:
    """How far the last position's next-token distribution moves (total variation, 0..1)
    when the first token is changed: near 0 for a model that only reads its last token."""
    changed = [(ids[0] + 1) % model.config.vocab_size] + ids[1:]
    with torch.no_grad():
        p, q = (torch.softmax(model(torch.tensor([x]))[0, -1], -1) for x in (ids, changed))
    return float((p - q).abs().sum() / 2)
