"""lab.store and the checkpoint loader against a bad checkpoint (issue 49): it fails once, is marked
unavailable with its reason, and never holds up a request for another model."""

from __future__ import annotations

import json
import shutil
import threading
import time

import pytest
import random_models
import torch

from lab import store
from transformer_core import CheckpointError, CheckpointTooLarge, load_model, save_checkpoint
from transformer_core.weights import hub

OVERSIZED = {"arch": "DecoderLM", "vocab_size": 4096, "d_model": 2048, "n_head": 16, "n_layer": 12, "d_ff": 8192,
             "max_len": 256, "dropout": 0.0}  # 2.3 GiB of float32 parameters


@pytest.fixture
def folder(tmp_path):
    """A model folder: one small intact LM (with the shipped tokenizer) and one oversized config."""
    small = save_checkpoint(random_models.lm(vocab_size=40), tmp_path / "small")
    shutil.copy(store.DEFAULT_MODEL_DIR / "shakespeare-char" / "tokenizer.json", small / "tokenizer.json")
    big = tmp_path / "big"
    big.mkdir()
    (big / "config.json").write_text(json.dumps(OVERSIZED))
    (big / "model.safetensors").write_bytes(b"not read: refused from its config")
    shutil.copy(small / "tokenizer.json", big / "tokenizer.json")
    store.set_model_dir(tmp_path)
    yield tmp_path
    store.set_model_dir(store.DEFAULT_MODEL_DIR)


def test_the_parameter_count_comes_from_the_config_without_building_weights():
    model = random_models.lm(vocab_size=40)
    config = {**vars(model.config), "arch": "DecoderLM"}
    assert hub.parameter_count(config) == sum(p.numel() for p in model.parameters())


def test_counting_draws_no_initial_weights_and_counts_an_encoder_decoder_with_its_fixed_positions(monkeypatch):
    """Counted on the meta device with no initialiser run: on every checkpoint at start-up they cost 3 s."""
    model = random_models.encdec(positions="sinusoidal")
    config = {**vars(model.config), "arch": "EncoderDecoder"}
    drawn = []
    real = torch.Tensor.normal_
    monkeypatch.setattr(torch.Tensor, "normal_", lambda self, *a, **k: drawn.append(self.shape) or real(self, *a, **k))
    assert hub.parameter_count(config) == sum(p.numel() for p in model.parameters())
    assert drawn == []


def test_an_oversized_config_is_refused_before_any_weight_is_read(folder):
    t0 = time.perf_counter()
    with pytest.raises(CheckpointTooLarge) as refused:
        load_model(folder / "big", limit_bytes=2**30)
    assert time.perf_counter() - t0 < 10  # building and filling 2.4 GB took 26-34 s
    assert refused.value.parameters * 4 > 2**30 and "GiB" in str(refused.value)
    assert isinstance(refused.value, CheckpointError)


def test_a_failed_load_is_remembered_until_its_files_change(folder, monkeypatch):
    broken = folder / "broken"
    shutil.copytree(folder / "small", broken)
    (broken / "model.safetensors").write_bytes(b"truncated")
    calls = []
    real = store.load_model
    monkeypatch.setattr(store, "load_model", lambda *a, **k: calls.append(a) or real(*a, **k))
    for _ in range(3):
        with pytest.raises(CheckpointError):
            store.model("broken")
    assert len(calls) == 1
    shutil.copy(folder / "small" / "model.safetensors", broken / "model.safetensors")  # mended
    assert store.model("broken") is not None and len(calls) == 2


def test_the_pickers_mark_an_oversized_checkpoint_unavailable_with_its_reason(folder):
    labels = {name: label for label, name in store.checkpoints().items()}
    assert "unavailable" in labels["big"] and "GiB" in labels["big"]
    assert "unavailable" not in labels["small"]
    with pytest.raises(CheckpointTooLarge):
        store.model("big")


def test_start_up_names_each_checkpoint_that_cannot_be_used_and_why(folder, caplog):
    with caplog.at_level("WARNING", logger="transformer_lab"):
        store.warm()
    said = [r.getMessage() for r in caplog.records]
    assert any("'big' is unavailable" in line and "GiB" in line for line in said), said
    assert not any("'small'" in line for line in said)


def test_an_unavailable_checkpoint_is_listed_last_and_never_routed_to(folder):
    from lab import models

    # "big" sorts before "small": first in the pickers it was their default, and the masking tab (which runs the
    # first language model) answered every request with "too large"
    assert list(store.checkpoints().values()) == ["small", "big"]
    assert models.route("DecoderLM", "The cat sat on the mat.") == "small"


def test_loading_one_model_never_holds_up_a_request_for_another(folder, monkeypatch):
    store.model("small")
    loading, release = threading.Event(), threading.Event()
    real = store.load_model

    def slow(path, *args, **kwargs):  # a big model being read from disk
        if path.name == "broken":
            loading.set()
            release.wait(20)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(store, "load_model", slow)
    shutil.copytree(folder / "small", folder / "broken")
    loader = threading.Thread(target=lambda: store.model("broken"), daemon=True)
    loader.start()
    assert loading.wait(20)
    answered = []
    asker = threading.Thread(target=lambda: answered.append(store.model("small")), daemon=True)
    asker.start()
    asker.join(timeout=2)
    release.set()
    loader.join(timeout=20)
    assert answered, "a request for a loaded model waited for another model's load"
