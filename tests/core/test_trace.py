"""The trace (model/trace.py): free when off, the same outputs when on, every point named by its module path."""

import math

from core_models import attention_config, lm
import pytest
import torch

import transformer_core as tc


def test_model_outputs_agree_with_and_without_trace():
    model = lm()
    x = torch.randint(0, 40, (2, 16))
    traced, trace = model.run_with_trace(x)
    assert torch.allclose(model(x), traced, atol=1e-5)
    attn = trace.attention("decoder")
    assert attn.shape == (2, 2, 4, 16, 16)
    assert torch.all(attn[..., torch.triu(torch.ones(16, 16, dtype=torch.bool), 1)] == 0)


def test_mask_override_is_what_the_trace_records():
    model = lm()
    mask = tc.sliding_window_mask(10, 3, causal=True)
    _, trace = model.run_with_trace(torch.randint(0, 40, (1, 10)), mask=mask)
    assert trace.masks["decoder"] is mask
    assert torch.all(trace.attention("decoder")[..., ~mask.allowed] == 0)


def test_trace_points_of_a_module_traced_on_its_own_are_named_from_its_root_or_bare():
    from transformer_core.model import trace

    block = tc.Block(attention_config())
    trace.name_trace_points(block, {"": "encoder"}, root="solo")
    assert (block.trace_name, block.self_attn.trace_name) == ("solo", "solo.self_attn")
    assert block.self_attn.point_name("q") == "solo.self_attn.q"
    unnamed = tc.MultiHeadAttention(attention_config())
    with trace.recording() as recorded:
        unnamed(torch.randn(1, 3, 32))
    assert {"q", "k", "v", "concat"} <= set(recorded.shapes)  # no path: the bare names


def test_the_trace_keeps_every_layers_residual_stream_and_the_logits_come_from_the_last():
    model = lm()
    x = torch.randint(0, 40, (2, 7))
    logits, trace = model.run_with_trace(x)
    hidden = trace.hidden["decoder"]
    assert len(hidden) == model.config.n_layer + 1 and all(h.shape == (2, 7, 32) for h in hidden)
    assert torch.allclose(hidden[0], model.embed.tok.weight[x] + model.embed.pos.weight[:7])
    with torch.no_grad():
        assert torch.allclose(model.head(model.norm(hidden[-1])), logits, atol=1e-5)
        assert torch.allclose(hidden[1], model.layers[0](hidden[0], tc.causal_mask(7)), atol=1e-5)
    assert torch.equal(trace.logits, logits) and trace.groups == ["decoder"]
    assert list(trace.shapes)[:4] == ["embed.tok", "embed.pos", "embed.out", "layers.0.norm_self.out"]  # in the order computed, named by module path


def test_trace_records_per_head_shapes():
    model = tc.EncoderDecoder(tc.EncoderDecoderConfig(src_vocab_size=5, tgt_vocab_size=5, d_model=8, n_head=2, n_layer=1, d_ff=32))
    model.eval()
    _, trace = model.run_with_trace(torch.randint(0, 5, (2, 3)), torch.randint(0, 5, (2, 2)), names=all)
    assert trace.shapes["encoder.0.self_attn.q"] == (2, 2, 3, 4)
    assert trace.shapes["encoder.0.self_attn.scores"] == (2, 2, 3, 3)
    assert trace.shapes["decoder.0.self_attn.scores"] == (2, 2, 2, 2)
    assert trace.shapes["decoder.0.cross_attn.attn"] == (2, 2, 2, 3)
    assert trace.shapes["encoder.0.ff.hidden"] == (2, 3, 32)
    assert trace.shapes["logits"] == (2, 2, 5)
    assert set(trace.groups) == {"encoder", "decoder", "cross"}
    s = trace["encoder.0.self_attn.scores"]
    q, k = trace["encoder.0.self_attn.q"], trace["encoder.0.self_attn.k"]
    assert torch.allclose(s, q @ k.transpose(-1, -2) / math.sqrt(4), atol=1e-6)


def test_tracing_is_off_by_default_and_keeps_shapes_of_every_point_but_values_of_the_viewed_ones_unless_asked():
    from transformer_core.model import trace

    assert trace.active() is None
    _, recorded = lm().run_with_trace(torch.randint(0, 40, (1, 5)))
    assert recorded.shapes["logits"] == (1, 5, 40) and "layers.0.self_attn.q" not in recorded
    with pytest.raises(KeyError, match=r"no attention recorded for 'cross'; recorded groups: \['decoder'\]"):
        recorded.attention("cross")


def test_trace_points_are_named_by_module_path():
    model = lm().eval()
    _, trace = model.run_with_trace(torch.tensor([[1, 2, 3]]), names=all)
    paths = {name for name, _ in model.named_modules()}
    for name in trace.shapes:
        assert name == "logits" or name.rsplit(".", 1)[0] in paths or name in paths, name
    assert "layers.1.self_attn.q" in trace.shapes and "layers.0.ff.hidden" in trace.shapes and "embed.out" in trace.shapes
    assert len(trace.attention("decoder")) == len(model.layers)
