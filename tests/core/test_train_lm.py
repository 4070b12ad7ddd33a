"""The language-model training command (training/train_lm.py)."""

import importlib
import json

from core_models import ASSETS

import transformer_core as tc


def test_lm_command_trains_on_a_local_text_and_writes_its_card(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_CORE_DEVICE", "cpu")  # the card names the device; pin it
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"line {i}: to be or not to be, that is the question.\n" for i in range(300)))
    out = tmp_path / "out"
    importlib.import_module("transformer_core.training.train_lm").main([
        "--out", str(out), "--tokenizer", str(ASSETS / "shakespeare-lm" / "tokenizer.json"), "--corpus", str(corpus),
        "--d-model", "16", "--n-layer", "1", "--n-head", "2", "--context", "16", "--batch-size", "4",
        "--steps", "6", "--eval-every", "3"])
    assert [row["step"] for row in json.loads((out / "history.json").read_text())] == [3, 6]
    card = (out / "README.md").read_text()
    assert "6 steps of 4 x 16 tokens" in card and "CPU thread(s)" in card  # where it trained
    assert tc.load_model(out).config.max_len == 16
