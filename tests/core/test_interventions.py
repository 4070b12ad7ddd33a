"""Switching heads off through the trace: free when off, exact where it must be, the same on every path."""

import pytest
import random_models
import torch

from transformer_core.analysis.heads import Head, HeadError, switch_off, head_means

IDS = torch.tensor([[3, 17, 5, 29, 11, 2, 38, 7, 19, 23, 31, 13]])


def test_switching_off_nothing_is_bit_identical():
    model = random_models.lm()
    with torch.no_grad():
        clean = model(IDS)
        with switch_off(model, []):
            same = model(IDS)
    assert torch.equal(clean, same)


@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_switching_off_a_head_leaves_earlier_layers_unchanged_and_changes_the_output(mode):
    model = random_models.lm(n_layer=3)
    means = head_means(model, idx=IDS)
    clean_logits, clean = model.run_with_trace(IDS)
    with switch_off(model, [Head("decoder", 2, 1)], mode, means):
        logits, ablated = model.run_with_trace(IDS)
    # hidden[l] is the stream after block l-1 (hidden[0]: the embedding); block 2 is the first to change
    for before in range(3):
        assert torch.equal(clean.hidden["decoder"][before], ablated.hidden["decoder"][before])
    assert not torch.allclose(clean.hidden["decoder"][3], ablated.hidden["decoder"][3], atol=1e-3)
    assert (logits - clean_logits).abs().max() > 0.05


def test_mean_ablation_writes_the_heads_mean_over_positions_at_every_position():
    model = random_models.lm()
    means = head_means(model, idx=IDS)
    with switch_off(model, [Head("decoder", 1, 2)], "mean", means):
        _, run = model.run_with_trace(IDS, names=all)
    out = run["layers.1.self_attn.weighted"][0, 2]  # (T, d_head)
    assert torch.allclose(out, means["layers.1.self_attn"][2].expand_as(out))
    assert not torch.allclose(run["layers.1.self_attn.weighted"][0, 1], out)


@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_fast_and_inspect_paths_agree_under_ablation(mode):
    model = random_models.lm()
    heads = [Head("decoder", 0, 3), Head("decoder", 1, 0), Head("decoder", 1, 2)]
    means = head_means(model, idx=IDS)
    with switch_off(model, heads, mode, means), torch.no_grad():
        fast = model(IDS)  # no trace recording: torch's fused attention
        inspect, _ = model.run_with_trace(IDS)  # the textbook lines, keeping the weights
    with torch.no_grad():
        assert (fast - model(IDS)).abs().max() > 0.05  # the ablation did something
    assert torch.allclose(fast, inspect, atol=1e-5)


@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_ablation_with_the_kv_cache_equals_ablation_by_recomputation(mode):
    model = random_models.lm()
    means = head_means(model, idx=IDS)
    with switch_off(model, [Head("decoder", 0, 1), Head("decoder", 1, 3)], mode, means), torch.no_grad():
        whole = model(IDS)
        cache = model.new_cache()
        steps = [model(IDS[:, :4], cache=cache)]
        steps += [model(IDS[:, t : t + 1], cache=cache) for t in range(4, IDS.shape[1])]
    assert torch.allclose(torch.cat(steps, dim=1), whole, atol=1e-5)
    with torch.no_grad():
        assert (whole - model(IDS)).abs().max() > 0.05


def test_translator_cross_attention_heads_can_be_switched_off_with_the_cache():
    model = random_models.encdec()
    src, tgt = torch.tensor([[4, 9, 2, 14, 7, 21]]), torch.tensor([[1, 5, 8, 3, 12]])
    with switch_off(model, [Head("cross", 1, 2), Head("decoder", 0, 0)]), torch.no_grad():
        whole = model(src, tgt)
        memory, cache = model.encode(src), model.new_cache()
        steps = [model.decode(tgt[:, t : t + 1], memory, cache=cache) for t in range(tgt.shape[1])]
    assert torch.allclose(torch.cat(steps, dim=1), whole, atol=1e-5)
    with torch.no_grad():
        assert (whole - model(src, tgt)).abs().max() > 0.05


@pytest.mark.parametrize("head, mode, message", [
    (Head("decoder", 2, 0), "zero", "no head"),  # a layer the model does not have
    (Head("decoder", 0, 4), "zero", "no head"),  # a head index past n_head
    (Head("cross", 0, 0), "zero", "no head"),  # a language model has no cross-attention
    (Head("decoder", 0, 0), "half", "switch-off mode must be"),
    (Head("decoder", 0, 0), "mean", "needs the heads' means"),
])
def test_bad_ablations_are_refused_with_a_clear_message(head, mode, message):
    model = random_models.lm()
    with pytest.raises(HeadError, match=message):
        with switch_off(model, [head], mode):
            pass
