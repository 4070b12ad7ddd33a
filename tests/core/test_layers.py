"""Embeddings and blocks (model/layers.py)."""

from core_models import lm
import pytest
import torch

import transformer_core as tc


def test_too_long_input_raises_typed_error():
    with pytest.raises(tc.SequenceTooLongError, match="max_len"):
        lm(max_len=8)(torch.zeros(1, 9, dtype=torch.long))
