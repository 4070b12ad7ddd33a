"""GPT-2 import (weights/gpt2.py): the same logits as the transformers implementation."""

import pytest
import torch

import transformer_core as tc
from transformer_core.weights.gpt2 import decoder_lm_from_gpt2


def test_gpt2_weights_give_the_same_logits():
    transformers = pytest.importorskip("transformers")
    hf_config = transformers.GPT2Config(n_embd=48, n_head=4, n_layer=3, n_positions=64, vocab_size=101)
    hf = transformers.GPT2LMHeadModel(hf_config).eval()
    ours = decoder_lm_from_gpt2(hf.state_dict(), hf_config.to_dict())
    x = torch.randint(0, 101, (2, 20))
    with torch.no_grad():
        assert torch.allclose(ours(x), hf(x).logits, atol=1e-4)


def test_gpt2_folder_import(tmp_path):
    transformers = pytest.importorskip("transformers")
    hf = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_embd=32, n_head=2, n_layer=1, n_positions=16, vocab_size=50))
    hf.save_pretrained(tmp_path)
    ours = tc.load_gpt2(tmp_path)
    x = torch.randint(0, 50, (1, 8))
    with torch.no_grad():
        assert torch.allclose(ours(x), hf.eval()(x).logits, atol=1e-4)
