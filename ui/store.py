"""Shipped checkpoints, loaded lazily and once, shared by every tab; and GPT-2 from the Hub.

The app starts serving before any model is read from disk; the first request
that needs a model loads it (a few hundred ms) and later requests reuse it.
GPT-2 is downloaded from the Hugging Face Hub (`HF_ENDPOINT` names another
server) on the first request that asks for it, or read from the local Hugging
Face cache when the Hub cannot be reached.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path
from urllib.parse import urlparse

from transformer_core import CheckpointError, default_device, load_gpt2, load_model
from transformer_core.tokenization import TextTokenizer

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent.parent / "assets"
GPT2_REPO = "gpt2"
GPT2_FILES = ["config.json", "model.safetensors", "tokenizer.json"]

_lock = threading.Lock()
_models: dict[str, object] = {}
_tokenizers: dict[str, TextTokenizer] = {}
_model_dir = DEFAULT_MODEL_DIR
_gpt2_lock = threading.Lock()  # its own: a download must not hold up the shipped models
_gpt2: tuple | None = None


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


def _hub_reachable(timeout: float = 3.0) -> bool:
    """Can we open a connection to the Hub's host at all? (A quick check: downloads retry for a minute.)"""
    from huggingface_hub import constants

    endpoint = urlparse(constants.ENDPOINT)
    port = endpoint.port or (80 if endpoint.scheme == "http" else 443)
    try:
        socket.create_connection((endpoint.hostname or "huggingface.co", port), timeout=timeout).close()
        return True
    except OSError:
        return False


def gpt2() -> tuple[object, TextTokenizer]:
    """(GPT-2 in our DecoderLM, its tokenizer), downloaded once; CheckpointError says why it is unavailable."""
    global _gpt2
    from huggingface_hub import snapshot_download

    with _gpt2_lock:
        if _gpt2 is None:
            try:
                folder = snapshot_download(GPT2_REPO, allow_patterns=GPT2_FILES, local_files_only=not _hub_reachable())
                _gpt2 = (load_gpt2(folder).to(default_device()), TextTokenizer.load(f"{folder}/tokenizer.json"))
            except Exception as e:  # offline and not cached, or unreadable: all mean "not available"
                raise CheckpointError(f"GPT-2 needs the Hugging Face Hub (or a copy in the local Hugging Face "
                                      f"cache), and neither could be reached ({type(e).__name__}).") from e
        return _gpt2
