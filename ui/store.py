"""Shipped checkpoints, loaded lazily and once, shared by every tab.

The app starts serving before any model is read from disk; the first request
that needs a model loads it (a few hundred ms) and later requests reuse it.
"""

from __future__ import annotations

import threading
from pathlib import Path

from transformer_core import CheckpointError, default_device, load_model
from transformer_core.tokenization import TextTokenizer

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent.parent / "assets"

_lock = threading.Lock()
_models: dict[str, object] = {}
_tokenizers: dict[str, TextTokenizer] = {}
_model_dir = DEFAULT_MODEL_DIR


def set_model_dir(path: str | Path) -> None:
    """Read checkpoints from another folder (app.py --model-dir)."""
    global _model_dir
    with _lock:
        _model_dir = Path(path)
        _models.clear()
        _tokenizers.clear()


def model_dir() -> Path:
    return _model_dir


def model(name: str):
    """The checkpoint `assets/<name>/` as an eval-mode model on the default device."""
    with _lock:
        if name not in _models:
            folder = _model_dir / name
            if not folder.is_dir():
                raise CheckpointError(f"no checkpoint named {name!r} (looked in {folder})")
            _models[name] = load_model(folder, default_device())
        return _models[name]


def tokenizer(name: str) -> TextTokenizer:
    """The tokenizer.json shipped beside checkpoint `name`."""
    with _lock:
        if name not in _tokenizers:
            _tokenizers[name] = TextTokenizer.load(_model_dir / name / "tokenizer.json")
        return _tokenizers[name]
