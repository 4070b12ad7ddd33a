"""The core tests' random models: random_models' draws with room for 128 positions (a prompt and 64 cached
decoding steps fit), and the small config the attention and trace tests build single layers from."""

from pathlib import Path

import random_models

import transformer_core as tc

ASSETS = Path(__file__).resolve().parents[2] / "assets"
CONTEXT = 128


# random models whose outputs depend on the whole context (see random_models)
def lm(**kw):
    return random_models.lm(**{"max_len": CONTEXT, **kw})


def modern_lm(family=random_models.LLAMA, **kw):
    return random_models.modern_lm(family, **{"max_len": CONTEXT, **kw})


def encdec(**kw):
    return random_models.encdec(**{"max_len": CONTEXT, **kw})


def classifier(**kw):
    return random_models.classifier(**{"max_len": CONTEXT, **kw})


def attention_config(**kw):
    return tc.DecoderLMConfig(vocab_size=10, **{**random_models.SMALL, "dropout": 0.0, **kw})
