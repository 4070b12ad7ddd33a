"""Stand-in checkpoints for the app-level tests while a shipped one is still training.

The browser, robustness and load tests start the whole app, which needs every checkpoint
the tabs load. When one is missing from assets/ (the Shakespeare LM trains for hours), a
tiny randomly initialised model of the same kind, with the shipped tokenizer, takes its
place in a temporary folder beside links to everything that is shipped. Random weights
give nonsense text and coin-flip labels, but every code path runs.
"""

from __future__ import annotations

from pathlib import Path

import torch

from transformer_core import (DecoderLM, DecoderLMConfig, EncoderClassifier, EncoderClassifierConfig,
                              save_checkpoint)
from transformer_core.tokenization import TextTokenizer

ASSETS = Path(__file__).resolve().parent.parent / "assets"
TINY = dict(d_model=32, n_head=2, n_layer=2, d_ff=64, dropout=0.0, max_len=256)


def _lm(tokenizer: TextTokenizer):
    return DecoderLM(DecoderLMConfig(vocab_size=tokenizer.vocab_size, **TINY))


def _classifier(tokenizer: TextTokenizer):
    return EncoderClassifier(EncoderClassifierConfig(vocab_size=tokenizer.vocab_size, n_class=2, **TINY))


# checkpoint name -> (tokenizer it ships with, how to build a random model of its kind)
STAND_INS = {
    "shakespeare-lm": (ASSETS / "shakespeare-bpe" / "tokenizer.json", _lm),
    "sentiment": (ASSETS / "sentiment" / "tokenizer.json", _classifier),
}


def missing() -> list[str]:
    """Checkpoints the app needs that assets/ does not hold yet."""
    return [name for name in STAND_INS if not (ASSETS / name / "model.safetensors").is_file()]


def model_dir(tmp: Path) -> Path:
    """assets/ when it is complete; otherwise `tmp` with links to assets/ and stand-ins for the rest."""
    if not missing():
        return ASSETS
    for entry in ASSETS.iterdir():
        if entry.name not in missing():
            (tmp / entry.name).symlink_to(entry)
    torch.manual_seed(0)
    for name in missing():
        tokenizer_path, build = STAND_INS[name]
        tokenizer = TextTokenizer.load(tokenizer_path)
        save_checkpoint(build(tokenizer).eval(), tmp / name, tokenizer, card=f"# {name}: random stand-in for tests\n")
    return tmp
