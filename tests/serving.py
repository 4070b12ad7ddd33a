"""The whole app, served for app-level tests and benchmarks/load.py.

`start_app` runs `python app.py` as a person would and times it to the first page served.
The app needs every checkpoint the tabs load; when one is missing from assets/ (the
Shakespeare LM trains for hours), `model_dir` puts a tiny randomly initialised model of
the same kind, with the shipped tokenizer, in a temporary folder beside links to
everything that is shipped. Random weights give nonsense text and coin-flip labels, but
every code path runs.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import torch

from transformer_core import (DecoderLM, DecoderLMConfig, EncoderClassifier, EncoderClassifierConfig,
                              save_checkpoint)
from transformer_core.tokenization import TextTokenizer

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"
LOGS = ROOT / "test-artifacts"
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


def modern_checkpoints(folder: Path) -> list[str]:
    """Two tiny modern decoders in `folder`, random (tests/random_models.py) with the Shakespeare BPE tokenizer:
    "tiny-llama" (RMSNorm, rotary positions, 4 query heads over 2 key/value heads, SwiGLU) and "tiny-gemma"
    (also QK-norm, norms after each sublayer, scaled embeddings, 8 query heads over 1 key/value head, a
    sliding-window layer then a global one): the real LLMs' code paths, at a test's size. Returns their names."""
    import random_models

    tokenizer = TextTokenizer.load(ASSETS / "shakespeare-bpe" / "tokenizer.json")
    for name, family in (("tiny-llama", random_models.LLAMA), ("tiny-gemma", random_models.GEMMA)):
        model = random_models.modern_lm(family, vocab_size=tokenizer.vocab_size, max_len=128)
        save_checkpoint(model, folder / name, tokenizer, card=f"# {name}: random modern decoder for tests\n")
    return ["tiny-llama", "tiny-gemma"]


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


# A config of d_model 2048 x 12 layers: 2.3 GiB of float32 parameters, over lab/store.MAX_MODEL_BYTES (issue 49)
OVERSIZED = {"arch": "DecoderLM", "vocab_size": 4096, "d_model": 2048, "n_head": 16, "n_layer": 12, "d_ff": 8192,
             "max_len": 256, "dropout": 0.0}


def model_dir_with_oversized(tmp: Path) -> Path:
    """`tmp/models`: links to every checkpoint of `model_dir(tmp)`, and "oversized", a checkpoint whose config is
    OVERSIZED (its weights file is never read: the config alone is refused)."""
    models = tmp / "models"
    models.mkdir()
    for entry in model_dir(tmp).iterdir():
        if entry.is_dir() and entry != models:
            (models / entry.name).symlink_to(entry.resolve())
    (models / "oversized").mkdir()
    (models / "oversized" / "config.json").write_text(json.dumps(OVERSIZED))
    (models / "oversized" / "model.safetensors").write_bytes(b"never read: refused from its config")
    shutil.copy(ASSETS / "shakespeare-bpe" / "tokenizer.json", models / "oversized" / "tokenizer.json")
    return models


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(port: int, *flags: str, timeout_s: float = 120) -> tuple[subprocess.Popen, float]:
    """Start `python app.py --port PORT [flags]`; return (process, seconds until the first page was served).

    The app's output goes to test-artifacts/app-PORT.log.
    """
    LOGS.mkdir(exist_ok=True)
    log = LOGS / f"app-{port}.log"
    if "--llm-dir" not in flags:  # the real LLMs are listed, unavailable, and never fetched for a test
        (LOGS / "no-llms").mkdir(exist_ok=True)
        flags = (*flags, "--llm-dir", str(LOGS / "no-llms"))
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "app.py", "--port", str(port), *flags], cwd=ROOT,
                               stdout=log.open("w"), stderr=subprocess.STDOUT)
    while time.perf_counter() - started < timeout_s:
        if process.poll() is not None:
            raise RuntimeError(f"app.py exited with {process.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
                if response.status == 200:
                    return process, time.perf_counter() - started
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"app.py served nothing within {timeout_s} s (log: {log})")
