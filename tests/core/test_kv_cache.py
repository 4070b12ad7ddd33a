"""The KV cache (model/kv_cache.py): cached decoding equals full recomputation, rows follow a beam's reorder, room grows
without copying the past every step."""

from core_models import encdec, lm
import torch

from transformer_core.model.kv_cache import KVCache, LayerCache


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
