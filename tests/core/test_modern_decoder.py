"""The modern decoder as switches of the one DecoderLM (model/): RMSNorm, rotary positions, grouped-query attention, a
gated feed-forward layer, and Gemma 3's QK-norm, sandwich norms, scaled embeddings and sliding-window layers."""

import pytest
import torch
from core_models import modern_lm
from random_models import GEMMA, LLAMA, depends_on_context

import transformer_core as tc
from transformer_core.model.layers import RMSNorm, rotary_angles, rotate

FAMILIES = {"llama": LLAMA, "gemma": GEMMA}


def test_rms_norm_divides_by_the_root_mean_square_and_keeps_the_mean():
    x = torch.tensor([[3.0, 4.0, 5.0, 6.0]])
    norm = RMSNorm(4, eps=0.0)
    with torch.no_grad():
        norm.weight.copy_(torch.tensor([1.0, 2.0, 1.0, 1.0]))
    out = norm(x)
    rms = (x.pow(2).mean()).sqrt()
    assert torch.allclose(out, x / rms * norm.weight)
    assert out.mean() != 0  # no centring: LayerNorm's output would have mean 0


def test_rotation_turns_pairs_of_split_halves_and_keeps_lengths():
    x = torch.randn(1, 2, 6, 8)
    cos, sin = rotary_angles(3, 6, 8, 100.0)
    turned = rotate(x, cos, sin)
    pair = lambda t, i: torch.stack([t[..., i], t[..., i + 4]], -1).norm(dim=-1)  # noqa: E731
    for i in range(4):
        assert torch.allclose(pair(turned, i), pair(x, i), atol=1e-5)  # a rotation of each pair (i, i + d/2)
    angle = 5 * 100.0 ** (-2 * 1 / 8)  # position 3 + 2, pair 1
    assert cos[2, 1].item() == pytest.approx(torch.cos(torch.tensor(angle)).item(), abs=1e-6)


@pytest.mark.parametrize("family", FAMILIES)
def test_rope_scores_depend_only_on_the_offset_between_positions(family):
    """Moving the whole text k positions later leaves every attention weight as it was (rotary), where
    learned positions change them."""
    model = modern_lm(FAMILIES[family], n_layer=1)
    ids = torch.randint(0, 40, (1, 12))
    weights = [model.run_with_trace(ids, offset=k)[1]["layers.0.self_attn.attn"] for k in (0, 7, 40)]
    assert torch.allclose(weights[0], weights[1], atol=1e-4) and torch.allclose(weights[0], weights[2], atol=1e-4)
    q0 = model.run_with_trace(ids, names=all)[1]["layers.0.self_attn.q_rot"]
    q7 = model.run_with_trace(ids, offset=7, names=all)[1]["layers.0.self_attn.q_rot"]
    assert not torch.allclose(q0, q7, atol=1e-3)  # each query did turn: only the differences stayed
    learned = modern_lm(LLAMA, n_layer=1, positions="learned")
    before, after = (learned.run_with_trace(ids, offset=k)[1]["layers.0.self_attn.attn"] for k in (0, 7))
    assert not torch.allclose(before, after, atol=1e-3)


def test_grouped_query_attention_equals_multi_head_attention_with_repeated_keys_and_values():
    gqa = modern_lm(LLAMA, n_kv_head=2)
    mha = modern_lm(LLAMA, n_kv_head=4)
    state = gqa.state_dict()
    d_head = gqa.config.d_head
    for i in range(gqa.config.n_layer):
        for part in ("w_k", "w_v"):  # each of the 2 key/value heads, repeated for the 2 query heads that read it
            w = state[f"layers.{i}.self_attn.{part}.weight"].view(2, d_head, -1)
            state[f"layers.{i}.self_attn.{part}.weight"] = w.repeat_interleave(2, dim=0).reshape(4 * d_head, -1)
    mha.load_state_dict(state)
    ids = torch.randint(0, 40, (2, 15))
    assert torch.allclose(gqa(ids), mha(ids), atol=1e-5)
    _, trace = gqa.run_with_trace(ids, names=all)
    assert trace["layers.0.self_attn.k"].shape == (2, 2, 15, d_head)  # each key/value head once
    assert trace["layers.0.self_attn.attn"].shape == (2, 4, 15, 15)  # a weight matrix per query head


@pytest.mark.parametrize("family", FAMILIES)
def test_inspect_and_fast_paths_agree_and_the_model_reads_its_whole_context(family):
    model = modern_lm(FAMILIES[family])
    ids = torch.randint(0, 40, (2, 20))
    fast = model(ids)
    inspected, trace = model.run_with_trace(ids)
    assert "layers.0.self_attn.attn" in trace
    assert torch.allclose(fast, inspected, atol=1e-5)
    assert depends_on_context(model, ids[0, -4:].tolist()) > 0.05


@pytest.mark.parametrize("family", FAMILIES)
def test_cached_decoding_equals_the_full_pass_also_past_the_window(family):
    model = modern_lm(FAMILIES[family])
    ids = torch.randint(0, 40, (1, 30))  # 30 tokens: Gemma's local layers see 5
    full = model(ids)
    cache = model.new_cache()
    steps = [model(ids[:, :4], cache=cache)] + [model(ids[:, t:t + 1], cache=cache) for t in range(4, 30)]
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-4)


def test_a_sliding_window_layer_cannot_see_past_its_window():
    model = modern_lm(GEMMA, n_layer=1, global_every=2)  # one layer, local (layer 0 of every 2)
    assert model.config.is_local(0) and not model.config.is_local(1)
    ids = torch.randint(0, 40, (1, 20))
    _, trace = model.run_with_trace(ids)
    attn = trace["layers.0.self_attn.attn"][0]  # (H, T, T)
    offsets = torch.arange(20)[:, None] - torch.arange(20)[None, :]
    assert attn[:, (offsets >= 5) | (offsets < 0)].abs().max() == 0  # 5 keys: itself and the 4 before
    assert attn[:, (offsets >= 0) & (offsets < 5)].min() > 0
    changed = ids.clone()
    changed[0, 3] = (changed[0, 3] + 1) % 40
    out, out_changed = model(ids), model(changed)
    assert torch.allclose(out[0, 8:], out_changed[0, 8:], atol=1e-6)  # position 3 is beyond 8's window
    assert not torch.allclose(out[0, 3:8], out_changed[0, 3:8], atol=1e-3)


def test_global_layers_read_the_whole_text_and_use_their_own_rotary_base():
    model = modern_lm(GEMMA, n_layer=2)
    assert [model.config.rope_base_of(i) for i in range(2)] == [50.0, 5000.0]
    _, trace = model.run_with_trace(torch.randint(0, 40, (1, 20)))
    assert trace["layers.1.self_attn.attn"][0, :, 19, 0].min() > 0  # the global layer's last query sees the first key


def test_gemma_switches_change_the_computation_and_configs_refuse_what_cannot_be_built():
    ids = torch.randint(0, 40, (1, 10))
    base = modern_lm(GEMMA)
    for switch in ("qk_norm", "sandwich_norm", "scale_embeddings"):
        other = modern_lm(GEMMA, **{switch: False})
        state = {k: v for k, v in base.state_dict().items() if k in other.state_dict()}
        other.load_state_dict(state)
        assert not torch.allclose(base(ids), other(ids), atol=1e-3), switch
    with pytest.raises(tc.ConfigError):
        tc.DecoderLMConfig(vocab_size=10, n_head=4, n_kv_head=3)  # 3 does not divide 4
    with pytest.raises(tc.ConfigError):
        tc.DecoderLMConfig(vocab_size=10, sliding_window=4)  # which layers are local?
    with pytest.raises(tc.ConfigError):
        tc.EncoderClassifierConfig(vocab_size=10, positions="rotary")
    old = tc.DecoderLMConfig(vocab_size=10, d_model=32, n_head=4)  # a config.json of before keeps its sizes
    assert (old.d_head, old.n_kv_head, old.norm, old.gated) == (8, 4, "layer", False)
