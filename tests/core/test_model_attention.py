"""Attention (model/layers.py): the fast path equals the inspect path, dropout, what it records, its layer."""

import math

from core_models import attention_config, lm
import pytest
import torch

import transformer_core as tc
from transformer_core.model.layers import attend


def _all_masks(n):
    return [
        tc.no_mask(n),
        tc.causal_mask(n),
        tc.padding_mask([n, n - 3], n),
        tc.sliding_window_mask(n, 2),
        tc.sliding_window_mask(n, 2, causal=True),
        tc.dilated_window_mask(n, 2, 2),
        tc.global_window_mask(n, 1, [0, 5]),
        tc.Mask(torch.zeros(n, n, dtype=torch.bool), "nothing"),
        tc.Mask(torch.arange(n)[:, None] > torch.arange(n)[None, :], "strictly-past"),  # row 0 empty
    ]


@pytest.mark.parametrize("mask", _all_masks(9), ids=lambda m: m.kind)
def test_fast_path_equals_inspect_path_for_every_mask(mask):
    q, k, v = (torch.randn(2, 3, 9, 8) for _ in range(3))
    allowed = mask.for_heads()
    fast, _ = attend(q, k, v, allowed)
    slow, weights = attend(q, k, v, allowed, need_weights=True)
    assert torch.allclose(fast, slow, atol=1e-5)
    assert not torch.isnan(fast).any() and not torch.isnan(weights).any()
    allowed = allowed.expand_as(weights)
    assert torch.all(weights[~allowed] == 0)
    rows = weights.sum(-1)
    has_key = allowed.any(-1)
    assert torch.allclose(rows[has_key], torch.ones_like(rows[has_key]), atol=1e-6)
    assert torch.all(rows[~has_key] == 0)


def test_attention_dropout_acts_only_in_training_on_both_paths_and_the_weights_are_kept_before_it():
    q, k, v = (torch.randn(1, 2, 6, 8) for _ in range(3))
    causal = tc.causal_mask(6).for_heads()
    for allowed in (None, causal):
        plain, weights = attend(q, k, v, allowed, need_weights=True)
        assert not torch.allclose(attend(q, k, v, allowed, dropout_p=0.5)[0], plain)
        dropped, kept = attend(q, k, v, allowed, dropout_p=0.5, need_weights=True)
        assert not torch.allclose(dropped, plain) and torch.equal(kept, weights)
    model = lm(dropout=0.5)
    x = torch.randint(0, 40, (1, 10))
    assert torch.equal(model(x), model(x))  # eval mode: no dropout anywhere
    assert not torch.allclose(model.train()(x), model(x))


def test_attention_is_the_softmax_weighted_average_of_the_values_and_by_default_keeps_no_weights():
    q, k, v = (torch.randn(2, 3, 5, 8) for _ in range(3))
    weights = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(8), -1)
    fast, none = attend(q, k, v)  # the defaults: no dropout, the fast path
    slow, kept = attend(q, k, v, need_weights=True)
    assert none is None and torch.allclose(kept, weights, atol=1e-6)
    assert torch.allclose(fast, weights @ v, atol=1e-5) and torch.allclose(slow, weights @ v, atol=1e-5)


def test_attention_dropout_drops_weights_at_the_rate_asked_for_and_rescales_the_rest_on_both_paths():
    p, T = 0.2, 64
    q, k = torch.randn(1, 2, T, T), torch.randn(1, 2, T, T)
    v = torch.eye(T).expand(1, 2, T, T)  # the output is then the dropped weights themselves
    weights = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(T), -1)
    for need_weights in (False, True):
        dropped, _ = attend(q, k, v, dropout_p=p, need_weights=need_weights)
        zero = dropped == 0
        assert abs(float(zero.float().mean()) - p) < 0.03, need_weights  # of 8192 weights
        assert torch.allclose(dropped[~zero], weights[~zero] / (1 - p), rtol=1e-4, atol=1e-7), need_weights


def test_attend_passes_its_scores_before_the_mask_through_the_hook_it_is_given():
    q, k, v = (torch.randn(1, 2, 4, 8) for _ in range(3))
    recorded = {}

    def hook(part, x):
        recorded[part] = x
        return x

    attend(q, k, v, tc.causal_mask(4).for_heads(), need_weights=True, hook=hook)
    assert set(recorded) == {"scores", "attn"}
    assert torch.allclose(recorded["scores"], q @ k.transpose(-1, -2) / math.sqrt(8), atol=1e-6)


def test_a_multi_head_attention_layer_applies_its_dropout_in_training_only():
    attn = tc.MultiHeadAttention(attention_config(dropout=0.5))
    x = torch.randn(1, 6, 32)
    for mask in (None, tc.causal_mask(6)):
        evaluated = attn.eval()(x, mask=mask)
        assert torch.equal(attn(x, mask=mask), evaluated)
        assert not torch.allclose(attn.train()(x, mask=mask), evaluated)


@pytest.mark.parametrize("bias", [True, False])
def test_attention_projections_have_biases_only_when_the_config_asks_for_them(bias):
    attn = tc.MultiHeadAttention(attention_config(bias=bias))
    assert [getattr(attn, name).bias is not None for name in ("w_q", "w_k", "w_v", "w_o")] == [bias] * 4


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_attention_asks_for_the_mask_on_the_device_of_its_queries(device):
    asked = []

    class Spy(tc.Mask):
        def for_heads(self, device=None):
            asked.append(device)
            return super().for_heads(device)

    attn = tc.MultiHeadAttention(attention_config()).to(device)
    out = attn(torch.randn(1, 5, 32, device=device), mask=Spy(tc.causal_mask(5).allowed, "causal"))
    assert asked == [torch.device(device)] and out.device.type == device


def test_a_traced_attention_records_every_stage_under_its_module_path():
    model = lm()
    x = torch.randint(0, 40, (1, 6))
    _, recorded = model.run_with_trace(x, names=all)
    at = {part: recorded[f"layers.1.self_attn.{part}"] for part in ("q", "k", "v", "attn", "weighted", "concat")}
    assert torch.allclose(at["weighted"], at["attn"] @ at["v"], atol=1e-5)  # attn @ v, per head
    assert torch.equal(at["concat"], at["weighted"].transpose(1, 2).reshape(1, 6, 32))  # the heads side by side


@pytest.mark.parametrize("n_head", [1, 2, 4, 8])
def test_attention_parameters_do_not_depend_on_heads(n_head):
    d = 32
    config = tc.DecoderLMConfig(vocab_size=10, d_model=d, n_head=n_head, n_layer=1, d_ff=64)
    attn = tc.MultiHeadAttention(config)
    assert sum(p.numel() for p in attn.parameters()) == 3 * d * d + d * d + 4 * d  # Q,K,V + W_o (+ biases)
