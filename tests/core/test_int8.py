"""int8 checkpoints: a quarter of the bytes, read back by load_model within a step per weight."""

import json

import torch

from transformer_core import EncoderClassifier, EncoderClassifierConfig, load_model
from transformer_core.weights.int8 import save_int8


def test_an_int8_checkpoint_loads_into_float_weights_within_half_a_step_and_keeps_its_extra_config(tmp_path):
    torch.manual_seed(0)
    model = EncoderClassifier(EncoderClassifierConfig(vocab_size=50, d_model=32, n_head=2, n_layer=2, d_ff=64)).eval()
    folder = save_int8(model, tmp_path / "m", extra_config={"languages": ["en", "zh"]})
    loaded = load_model(folder)
    config = json.loads((folder / "config.json").read_text())
    assert config["languages"] == ["en", "zh"] and config["weights"] == "int8"
    for name, w in model.state_dict().items():
        step = w.abs().amax(dim=-1, keepdim=True) / 127 if w.ndim == 2 else 1e-3 * w.abs().max()
        assert ((loaded.state_dict()[name] - w).abs() <= step / 2 + 1e-6).all(), name
    ids = torch.randint(0, 50, (3, 9))
    assert torch.allclose(loaded(ids), model(ids), atol=0.05)
    assert (folder / "model.safetensors").stat().st_size < sum(w.numel() for w in model.state_dict().values()) * 1.5
