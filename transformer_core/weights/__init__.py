"""Weights in and out: our checkpoints through the Hugging Face Hub's format, GPT-2 and BERT imported into our models."""

from . import float16, int8  # noqa: F401 -- hub.load_model reads their checkpoints through the loaders they add
