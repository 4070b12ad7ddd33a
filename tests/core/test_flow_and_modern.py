"""Information flow (analysis/flow.py) and what changed since GPT-2 (analysis/modern.py), on tiny random models."""

import numpy as np
import pytest
import torch
from core_models import lm, modern_lm
from random_models import GEMMA, LLAMA

from transformer_core.analysis import flow, modern


@pytest.mark.parametrize("family", [None, LLAMA, GEMMA])
def test_every_residual_sum_is_shared_among_its_terms(family):
    model = lm() if family is None else modern_lm(family)
    graph = flow.information_flow(model, list(range(3, 15)))
    n_layer, n_head, T = graph.shape
    attention_sums = graph.through_attention + graph.attention.sum(axis=(1, 3)).T.reshape(T, n_layer).T
    assert np.allclose(attention_sums, 1, atol=1e-4) and np.allclose(graph.ffn + graph.through_ffn, 1, atol=1e-4)
    assert graph.attention[:, :, np.triu_indices(T, 1)[0], np.triu_indices(T, 1)[1]].max() == 0  # never the future


def test_a_head_whose_output_is_zero_carries_nothing_and_routes_end_in_the_chosen_token():
    model = modern_lm(LLAMA)
    with torch.no_grad():
        model.layers[1].self_attn.w_o.weight[:, 2 * 8:3 * 8] = 0  # head 2 of layer 1 writes nothing
    graph = flow.information_flow(model, list(range(3, 15)))
    assert graph.attention[1, 2].max() == 0 and graph.attention[1, 1].max() > 0
    routes = flow.routes(graph, 11, 0.02)
    assert routes and all(r.target == 11 for r in routes if r.layer == model.config.n_layer - 1)
    assert not any(r.kind == "head" and r.layer == 1 and r.head == 2 for r in routes)


def test_a_heads_push_on_a_token_is_its_output_read_through_the_final_norm_and_unembedding():
    model = modern_lm(LLAMA)
    ids = list(range(3, 15))
    graph = flow.information_flow(model, ids)
    target = graph.predicted[-1]
    push = flow.direct_push(model, graph, len(ids) - 1, target)
    (up, up_values), _ = flow.head_logits(model, graph, *np.unravel_index(push.argmax(), push.shape), len(ids) - 1,
                                         k=model.config.vocab_size)
    assert up_values[up.index(target)] == pytest.approx(push.max(), rel=1e-4)


def test_rotary_positions_ignore_a_shift_that_learned_positions_notice():
    ids = list(range(3, 20))
    assert modern.shift_change(modern_lm(LLAMA), ids, 50).max() < 1e-4
    assert modern.shift_change(lm(), ids, 50).max() > 0.01


def test_kv_cache_bytes_count_keys_and_values_of_every_layer():
    config = modern_lm(LLAMA).config  # 2 layers, 4 query heads sharing 2 key/value heads of 8
    assert modern.kv_cache_bytes(config) == (2 * 2 * 2 * 8 * 4, 2 * 2 * 4 * 8 * 4)


def test_taking_the_first_tokens_share_away_renormalises_rows_and_moves_the_distribution():
    model = modern_lm(LLAMA)
    weights = torch.softmax(torch.randn(1, 2, 5, 5), -1)
    without = modern._without_first(weights)
    assert torch.allclose(without.sum(-1), torch.ones(1, 2, 5)) and without[..., 1:, 0].max() == 0
    assert torch.allclose(without[..., 0, :], weights[..., 0, :])  # the first query keeps its own row
    before, after = modern.without_first_token(model, list(range(3, 15)))
    assert torch.allclose(before.sum(), torch.tensor(1.0)) and (before - after).abs().sum() > 0.01


def test_rms_and_layer_norm_agree_exactly_on_a_stream_of_mean_zero():
    model = modern_lm(LLAMA)
    means, cosines = modern.norm_difference(model, list(range(3, 15)))
    assert means.shape == cosines.shape == (2, 12)
    assert np.allclose(cosines[means < 1e-6], 1, atol=1e-5) and (cosines <= 1 + 1e-5).all()


def test_a_sliding_window_layers_reach_stays_within_its_window():
    model = modern_lm(GEMMA, n_layer=2, global_every=2)  # layer 0 local (window 5), layer 1 global
    _, trace = model.run_with_trace(torch.randint(0, 40, (1, 30)))
    mean, farthest = modern.reach(trace.attention("decoder")[:, 0], queries=10)
    assert farthest[0] <= 4 and farthest[1] > 4 and mean[0] < mean[1]


def test_a_term_pointing_against_its_sum_carries_none_of_it():
    total = torch.tensor([1.0, 0.0])
    terms = torch.tensor([[1.0, 0.0], [-1.0, 0.0], [1.0, 0.0]])  # they add up to the total
    assert flow._proximity(terms, total).tolist() == [0.5, 0.0, 0.5]


def test_each_heads_share_is_its_own_output_the_value_heads_it_reads_through_its_slice_of_w_o():
    model = modern_lm(LLAMA)  # 4 query heads, key/value heads shared by (0, 1) and (2, 3)
    ids = list(range(3, 15))
    graph = flow.information_flow(model, ids)
    _, trace = model.run_with_trace(torch.tensor([ids]), names=all)
    d_head = model.config.d_head
    for head in range(4):
        w_o = model.layers[0].self_attn.w_o.weight[:, head * d_head:(head + 1) * d_head]
        own = trace["layers.0.self_attn.weighted"][0, head] @ w_o.T.detach()  # (T, d_model)
        assert torch.allclose(graph.head_out[0, head].float(), own, atol=2e-3), head
