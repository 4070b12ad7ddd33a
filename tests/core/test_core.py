"""Properties of transformer_core that every view relies on."""

import doctest
import importlib
import json
import math
import re
import sys
from pathlib import Path

import pytest
import random_models
import torch

import transformer_core as tc
from transformer_core.model.attention import attend
from transformer_core.model.cache import KVCache, LayerCache
from transformer_core.weights.gpt2 import decoder_lm_from_gpt2

ASSETS = Path(__file__).resolve().parents[2] / "assets"
CONTEXT = 128


# random models whose outputs depend on the whole context (see random_models)
def lm(**kw):
    return random_models.lm(**{"max_len": CONTEXT, **kw})


def encdec(**kw):
    return random_models.encdec(**{"max_len": CONTEXT, **kw})


def classifier(**kw):
    return random_models.classifier(**{"max_len": CONTEXT, **kw})


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


# 1. causality -------------------------------------------------------------------------

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


# 2. order ------------------------------------------------------------------------------

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


# 3. fast path == inspect path ------------------------------------------------------------

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


def test_attend_records_its_scores_before_the_mask_under_its_name():
    from transformer_core.model import trace

    q, k, v = (torch.randn(1, 2, 4, 8) for _ in range(3))
    with trace.recording(keep_values=True) as recorded:
        attend(q, k, v, tc.causal_mask(4).for_heads(), need_weights=True)
        attend(q, k, v, need_weights=True, name="mine")
    assert set(recorded.shapes) == {"attn.scores", "mine.scores"}  # "attn" unless named
    assert torch.allclose(recorded.values["attn.scores"], q @ k.transpose(-1, -2) / math.sqrt(8), atol=1e-6)


def _attention_config(**kw):
    return tc.DecoderLMConfig(vocab_size=10, **{**random_models.SMALL, "dropout": 0.0, **kw})


def test_a_multi_head_attention_layer_applies_its_dropout_in_training_only():
    attn = tc.MultiHeadAttention(_attention_config(dropout=0.5))
    x = torch.randn(1, 6, 32)
    for mask in (None, tc.causal_mask(6)):
        evaluated = attn.eval()(x, mask=mask)
        assert torch.equal(attn(x, mask=mask), evaluated)
        assert not torch.allclose(attn.train()(x, mask=mask), evaluated)


@pytest.mark.parametrize("bias", [True, False])
def test_attention_projections_have_biases_only_when_the_config_asks_for_them(bias):
    attn = tc.MultiHeadAttention(_attention_config(bias=bias))
    assert [getattr(attn, name).bias is not None for name in ("w_q", "w_k", "w_v", "w_o")] == [bias] * 4


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_attention_asks_for_the_mask_on_the_device_of_its_queries(device):
    asked = []

    class Spy(tc.Mask):
        def for_heads(self, device=None):
            asked.append(device)
            return super().for_heads(device)

    attn = tc.MultiHeadAttention(_attention_config()).to(device)
    out = attn(torch.randn(1, 5, 32, device=device), mask=Spy(tc.causal_mask(5).allowed, "causal"))
    assert asked == [torch.device(device)] and out.device.type == device


def test_a_traced_attention_records_every_stage_under_its_module_path():
    model = lm()
    x = torch.randint(0, 40, (1, 6))
    _, recorded = model.run_with_trace(x, keep_values=True)
    at = {part: recorded.values[f"layers.1.self_attn.{part}"] for part in ("q", "k", "v", "attn", "weighted", "concat")}
    assert torch.allclose(at["weighted"], at["attn"] @ at["v"], atol=1e-5)  # attn @ v, per head
    assert torch.equal(at["concat"], at["weighted"].transpose(1, 2).reshape(1, 6, 32))  # the heads side by side


def test_trace_points_of_a_module_traced_on_its_own_are_named_from_its_root_or_bare():
    from transformer_core.model import trace

    block = tc.Block(_attention_config())
    trace.name_trace_points(block, {"": "encoder"}, root="solo")
    assert (block.trace_name, block.self_attn.trace_name) == ("solo", "solo.self_attn")
    assert block.self_attn.point("q") == "solo.self_attn.q"
    unnamed = tc.MultiHeadAttention(_attention_config())
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
    assert list(trace.shapes)[:2] == ["embed", "layers.0.self_attn.q"]  # in the order computed, named by module path


def test_kv_cache_rows_follow_reorder_in_self_and_cross_attention():
    cache = KVCache(2)
    assert cache.length == 0
    rows = torch.arange(3.0)[:, None, None, None].expand(3, 2, 5, 4)
    cache.self_attn[0].k = cache.self_attn[0].v = rows
    cache.cross_attn[1].k = cache.cross_attn[1].v = rows + 10
    assert cache.length == 5
    cache.reorder(torch.tensor([2, 2, 0]))
    assert cache.self_attn[0].k[:, 0, 0, 0].tolist() == [2.0, 2.0, 0.0]
    assert cache.cross_attn[1].v[:, 0, 0, 0].tolist() == [12.0, 12.0, 10.0]
    assert cache.self_attn[1].k is None and cache.cross_attn[0].k is None  # empty layers stay empty


# 4. KV cache -------------------------------------------------------------------------------

def test_kv_cache_decoding_equals_full_recomputation_for_decoder_lm():
    model = lm()
    ids = torch.randint(0, 40, (1, 70))
    full = model(ids)
    cache = model.new_cache()
    steps = [model(ids[:, :6], cache=cache)]
    steps += [model(ids[:, t : t + 1], cache=cache) for t in range(6, 70)]  # 64 single-token steps
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-5)


def test_kv_cache_decoding_equals_full_recomputation_for_encoder_decoder():
    model = encdec()
    src, tgt = torch.randint(0, 30, (2, 11)), torch.randint(0, 25, (2, 66))
    lengths = torch.tensor([11, 8])
    memory = model.encode(src, lengths)
    full = model.decode(tgt, memory, lengths)
    cache = model.new_cache()
    steps = [model.decode(tgt[:, t : t + 1], memory, lengths, cache=cache) for t in range(66)]
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-5)
    assert cache.cross_attn[0].k.shape == (2, 4, 11, 8)  # computed once from the memory


def test_generation_with_and_without_cache_agree():
    model = lm()
    prompt = [1, 2, 3]
    assert tc.generate(model, prompt, 40) == tc.generate(model, prompt, 40, use_cache=False)


def test_kv_cache_appends_in_place_until_its_room_is_full():
    cache = LayerCache()
    k = torch.randn(1, 2, 5, 4)
    cache.append(k, -k)
    buffers = [cache.k.data_ptr()]
    for t in range(15):
        new = torch.full((1, 2, 1, 4), float(t))
        all_k, all_v = cache.append(new, -new)
        buffers.append(all_k.data_ptr())
        assert torch.equal(all_k[:, :, :5], k) and torch.equal(all_k[:, :, -1:], new) and torch.equal(all_v, -all_k)
    assert cache.k.shape == (1, 2, 20, 4)
    assert len(set(buffers)) == 2  # room for 10 positions, then for 22: no copy of the past per step


def test_next_token_logits_follow_the_weights_when_they_change():
    model, ids = lm(), [3, 1, 4, 1, 5]
    before, _ = tc.next_token_logits(model, ids)
    with torch.no_grad():
        model.head.weight.mul_(2)  # tied: the token embeddings change too
    after, _ = tc.next_token_logits(model, ids)
    assert not torch.allclose(after, before, atol=1e-3)
    assert torch.allclose(after, model(torch.tensor([ids]))[0, -1], atol=1e-5)


def test_the_head_by_columns_is_copied_once_and_again_only_when_the_weight_changes():
    from transformer_core.decoding.generation import _head_by_columns

    model, ids = lm(), [3, 1, 4, 1, 5]
    first = _head_by_columns(model)
    assert torch.equal(first, model.head.weight.t()) and first.is_contiguous()
    tc.next_token_logits(model, ids)
    tc.next_token_logits(model, ids + [9])
    assert _head_by_columns(model) is first  # every step reuses the one copy
    with torch.no_grad():
        model.head.weight.add_(1.0)
    changed = _head_by_columns(model)
    assert changed is not first and torch.equal(changed, model.head.weight.t())
    assert _head_by_columns(model) is changed


# 5. GPT-2 parity -----------------------------------------------------------------------------

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


# 6. checkpoints -------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [lm, classifier, encdec])
def test_save_load_round_trip_reproduces_logits_exactly(tmp_path, make):
    model = make(positions="sinusoidal") if make is encdec else make()
    tc.save_checkpoint(model, tmp_path)
    loaded = tc.load_model(tmp_path)
    assert type(loaded) is type(model) and loaded.config == model.config
    x = torch.randint(0, 25, (2, 6))
    out = (model(x, x), loaded(x, x)) if make is encdec else (model(x), loaded(x))
    assert torch.equal(*out)


def test_corrupted_weights_raise_a_clear_error(tmp_path):
    tc.save_checkpoint(lm(), tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(tc.CheckpointError, match="could not load DecoderLM"):
        tc.load_model(tmp_path)


def test_mismatched_config_names_the_problem(tmp_path):
    tc.save_checkpoint(lm(), tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    config["d_model"] = 64
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(tc.CheckpointError, match="size mismatch|shape"):
        tc.load_model(tmp_path)


def test_missing_files_name_the_path(tmp_path):
    with pytest.raises(tc.CheckpointError, match="config.json"):
        tc.load_model(tmp_path)
    with pytest.raises(tc.CheckpointError, match="no checkpoint folder"):
        tc.load_model(tmp_path / "absent")


LOCAL_LOOKING = ["assets/sentiment", "sentiment", "./assets/sentiment", "../assets/sentiment", "~/no/such/folder"]


def test_a_path_that_looks_local_never_goes_to_the_hub_and_the_error_names_it(tmp_path, monkeypatch):
    from transformer_core.weights import hub

    monkeypatch.chdir(tmp_path)  # "assets/sentiment" asked for from another working directory
    asked = []
    monkeypatch.setattr(hub, "snapshot_download", lambda repo_id, **kwargs: asked.append(repo_id))
    monkeypatch.setattr("huggingface_hub.hf_hub_download", lambda repo_id, *args, **kwargs: asked.append(repo_id))
    for name in [*LOCAL_LOOKING, str(tmp_path / "assets" / "sentiment"), Path("assets/sentiment")]:
        looked_in = str(Path(name).expanduser().absolute())
        with pytest.raises(tc.CheckpointError) as error:
            tc.load_model(name)
        assert looked_in in str(error.value) and "hf://" in str(error.value)
        with pytest.raises(tc.GPT2ImportError, match=re.escape(looked_in)):
            tc.load_gpt2(name)
    assert asked == []


def test_a_hub_repo_is_asked_for_as_hf_namespace_name(tmp_path, monkeypatch):
    from transformer_core.weights import hub

    tc.save_checkpoint(lm(), tmp_path / "download")
    asked = []
    monkeypatch.setattr(hub, "snapshot_download",
                        lambda repo_id, **kwargs: asked.append(repo_id) or str(tmp_path / "download"))
    assert isinstance(tc.load_model("hf://someone/lm"), tc.DecoderLM) and asked == ["someone/lm"]


def test_unknown_arch_is_refused(tmp_path):
    tc.save_checkpoint(lm(), tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"arch": "Banana"}))
    with pytest.raises(tc.CheckpointError, match="arch"):
        tc.load_model(tmp_path)


# 7. parameter counts ---------------------------------------------------------------------------

@pytest.mark.parametrize("n_head", [1, 2, 4, 8])
def test_attention_parameters_do_not_depend_on_heads(n_head):
    d = 32
    config = tc.DecoderLMConfig(vocab_size=10, d_model=d, n_head=n_head, n_layer=1, d_ff=64)
    attn = tc.MultiHeadAttention(config)
    assert sum(p.numel() for p in attn.parameters()) == 3 * d * d + d * d + 4 * d  # Q,K,V + W_o (+ biases)


def test_decoder_lm_parameter_count_has_closed_form():
    V, d, L, f, T = 40, 32, 2, 64, 128
    model = tc.DecoderLM(tc.DecoderLMConfig(vocab_size=V, d_model=d, n_layer=L, n_head=4, d_ff=f, max_len=T))
    per_layer = (4 * d * d + 4 * d) + (d * f + f + f * d + d) + 2 * (2 * d)
    expected = V * d + T * d + L * per_layer + 2 * d  # head tied to the embedding
    assert sum(p.numel() for p in model.parameters()) == expected


# 8. trace shapes --------------------------------------------------------------------------------

def test_trace_records_per_head_shapes():
    model = tc.EncoderDecoder(tc.EncoderDecoderConfig(src_vocab_size=5, tgt_vocab_size=5, d_model=8, n_head=2, n_layer=1, d_ff=32))
    model.eval()
    _, trace = model.run_with_trace(torch.randint(0, 5, (2, 3)), torch.randint(0, 5, (2, 2)), keep_values=True)
    assert trace.shapes["encoder.0.self_attn.q"] == (2, 2, 3, 4)
    assert trace.shapes["encoder.0.self_attn.scores"] == (2, 2, 3, 3)
    assert trace.shapes["decoder.0.self_attn.scores"] == (2, 2, 2, 2)
    assert trace.shapes["decoder.0.cross_attn.attn"] == (2, 2, 2, 3)
    assert trace.shapes["encoder.0.ff.hidden"] == (2, 3, 32)
    assert trace.shapes["logits"] == (2, 2, 5)
    assert set(trace.groups) == {"encoder", "decoder", "cross"}
    s = trace.values["encoder.0.self_attn.scores"]
    q, k = trace.values["encoder.0.self_attn.q"], trace.values["encoder.0.self_attn.k"]
    assert torch.allclose(s, q @ k.transpose(-1, -2) / math.sqrt(4), atol=1e-6)


def test_tracing_is_off_by_default_and_keeps_shapes_not_values_unless_asked():
    from transformer_core.model import trace

    assert trace.active() is None
    _, recorded = lm().run_with_trace(torch.randint(0, 40, (1, 5)))
    assert recorded.shapes["logits"] == (1, 5, 40) and recorded.values == {}
    with pytest.raises(KeyError, match=r"no attention recorded for 'cross'; recorded groups: \['decoder'\]"):
        recorded.attention("cross")


# masks ---------------------------------------------------------------------------------------------

def test_mask_builders_have_the_documented_patterns():
    assert torch.equal(tc.causal_mask(3).allowed, torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool))
    w = tc.sliding_window_mask(5, 1).allowed
    assert w.sum(1).tolist() == [2, 3, 3, 3, 2]
    d = tc.dilated_window_mask(7, 2, 2).allowed
    assert d[3].nonzero().flatten().tolist() == [1, 3, 5]
    g = tc.global_window_mask(6, 1, [0]).allowed
    assert g[0].all() and g[:, 0].all() and not g[5, 2]
    p = tc.padding_mask([3, 2]).allowed
    assert p.shape == (2, 3, 3) and not p[1, :, 2].any() and p[0].all()


def test_the_dilated_window_docstring_example_is_what_the_mask_does():
    masks = sys.modules[tc.dilated_window_mask.__module__]
    results = doctest.testmod(masks)
    assert results.attempted >= 1 and results.failed == 0


@pytest.mark.parametrize("bad", [lambda: tc.sliding_window_mask(4, 0), lambda: tc.causal_mask(0),
                                 lambda: tc.global_window_mask(4, 1, [9]), lambda: tc.build_mask("zigzag", 4)])
def test_bad_mask_parameters_raise_mask_error(bad):
    with pytest.raises(tc.MaskError):
        bad()


def test_bad_config_raises_config_error():
    with pytest.raises(tc.ConfigError, match="divisible"):
        tc.DecoderLMConfig(vocab_size=10, d_model=30, n_head=4)
    with pytest.raises(tc.ConfigError, match="dropout"):
        tc.EncoderClassifierConfig(vocab_size=10, dropout=1.0)


@pytest.mark.parametrize("command, argv", [
    ("train_lm", ["--tokenizer", str(ASSETS / "shakespeare-lm"), "--d-model", "30", "--n-head", "4"]),
    ("train_translate", ["--task", "copy", "--dropout", "1.5"]),
    ("train_sentiment", ["--tokenizer", str(ASSETS / "sentiment"), "--pretrain-dropout", "-0.1"]),
])
def test_training_commands_report_a_bad_config_without_a_traceback(command, argv, tmp_path):
    main = importlib.import_module(f"transformer_core.training.{command}").main
    with pytest.raises(SystemExit, match=r"^error: (d_model=30 is not divisible|dropout must be)"):
        main(["--out", str(tmp_path / "out"), *argv])
    assert not (tmp_path / "out").exists()


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


def test_too_long_input_raises_typed_error():
    with pytest.raises(tc.SequenceTooLongError, match="max_len"):
        lm(max_len=8)(torch.zeros(1, 9, dtype=torch.long))


@pytest.mark.parametrize("value, message", [("gpu", "is not a device"), ("cuda", "no CUDA GPU")])
def test_a_bad_device_env_var_is_a_device_error_and_the_commands_say_so(value, message, monkeypatch, tmp_path):
    if value == "cuda" and torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    monkeypatch.setenv("TRANSFORMER_CORE_DEVICE", value)
    with pytest.raises(tc.DeviceError, match=message):
        tc.default_device()
    for command in ("train_lm", "train_sentiment"):
        main = importlib.import_module(f"transformer_core.training.{command}").main
        with pytest.raises(SystemExit, match=f"^error: TRANSFORMER_CORE_DEVICE='{value}'"):
            main(["--out", str(tmp_path / "out"), "--tokenizer", str(ASSETS / "sentiment" / "tokenizer.json")])
    assert not (tmp_path / "out").exists()


def test_device_env_var_is_honoured(monkeypatch):
    monkeypatch.setenv("TRANSFORMER_CORE_DEVICE", "cpu")
    assert tc.default_device().type == "cpu"


def test_trace_points_are_named_by_module_path():
    model = lm().eval()
    _, trace = model.run_with_trace(torch.tensor([[1, 2, 3]]), keep_values=True)
    paths = {name for name, _ in model.named_modules()}
    for name in trace.shapes:
        assert name == "logits" or name.rsplit(".", 1)[0] in paths or name in paths, name
    assert "layers.1.self_attn.q" in trace.shapes and "layers.0.ff.hidden" in trace.shapes and "embed" in trace.shapes
    assert len(trace.attention("decoder")) == len(model.layers)
