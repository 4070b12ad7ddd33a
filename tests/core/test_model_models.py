"""The three models (model/models.py): causality, order, parameter counts, config checks; and the test
models themselves read their whole context."""

from core_models import CONTEXT, classifier, encdec, lm
import pytest
import random_models
import torch

import transformer_core as tc


def test_the_test_models_read_their_whole_context():
    ids = torch.randint(0, 40, (30,)).tolist()
    assert random_models.depends_on_context(lm(), ids) > 0.05  # the first token moves the 30th prediction
    assert random_models.depends_on_context(lm(), ids) > 1e3 * random_models.depends_on_context(_last_token_lm(), ids)


def _last_token_lm():
    """The test model these tests used before: tied embeddings x 50 (repeats the last token, reads nothing else)."""
    model = tc.DecoderLM(tc.DecoderLMConfig(vocab_size=40, **{**random_models.SMALL, "max_len": CONTEXT})).eval()
    with torch.no_grad():
        model.embed.tok.weight.mul_(50)
    return model


@pytest.mark.parametrize("norm_first", [True, False])
def test_future_tokens_do_not_change_past_outputs_of_decoder_lm(norm_first):
    model = lm(norm_first=norm_first)
    x = torch.randint(0, 40, (2, 12))
    base = model(x)
    for i in range(11):
        changed = x.clone()
        changed[:, i + 1 :] = torch.randint(0, 40, changed[:, i + 1 :].shape)
        assert torch.allclose(model(changed)[:, : i + 1], base[:, : i + 1], atol=1e-6)


def test_future_target_tokens_do_not_change_past_outputs_of_encoder_decoder():
    model = encdec()
    src, tgt = torch.randint(0, 30, (2, 7)), torch.randint(0, 25, (2, 9))
    base = model(src, tgt)
    for i in range(8):
        changed = tgt.clone()
        changed[:, i + 1 :] = (changed[:, i + 1 :] + 3) % 25
        assert torch.allclose(model(src, changed)[:, : i + 1], base[:, : i + 1], atol=1e-6)


def test_causal_check_is_not_vacuous_without_the_mask():
    model = lm()
    x = torch.randint(0, 40, (1, 8))
    changed = x.clone()
    changed[0, -1] = (changed[0, -1] + 1) % 40
    none = tc.no_mask(8)
    assert not torch.allclose(model(x, mask=none)[:, 0], model(changed, mask=none)[:, 0], atol=1e-6)


def test_encoder_without_positions_is_permutation_equivariant_and_classifier_invariant():
    model = classifier(positions="none")
    x = torch.randint(0, 40, (1, 10))
    perm = torch.randperm(10)
    h, h_perm = model.encode(x), model.encode(x[:, perm])
    assert torch.allclose(h[:, perm], h_perm, atol=1e-5)
    assert torch.allclose(model(x), model(x[:, perm]), atol=1e-5)


@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
def test_encoder_with_positions_depends_on_order(positions):
    model = classifier(positions=positions)
    x = torch.randint(0, 40, (1, 10))
    perm = torch.arange(9, -1, -1)
    assert not torch.allclose(model.encode(x)[:, perm], model.encode(x[:, perm]), atol=1e-4)
    assert not torch.allclose(model(x), model(x[:, perm]), atol=1e-5)


def test_decoder_lm_parameter_count_has_closed_form():
    V, d, L, f, T = 40, 32, 2, 64, 128
    model = tc.DecoderLM(tc.DecoderLMConfig(vocab_size=V, d_model=d, n_layer=L, n_head=4, d_ff=f, max_len=T))
    per_layer = (4 * d * d + 4 * d) + (d * f + f + f * d + d) + 2 * (2 * d)
    expected = V * d + T * d + L * per_layer + 2 * d  # head tied to the embedding
    assert sum(p.numel() for p in model.parameters()) == expected


def test_bad_config_raises_config_error():
    with pytest.raises(tc.ConfigError, match="divisible"):
        tc.DecoderLMConfig(vocab_size=10, d_model=30, n_head=4)
    with pytest.raises(tc.ConfigError, match="dropout"):
        tc.EncoderClassifierConfig(vocab_size=10, dropout=1.0)
