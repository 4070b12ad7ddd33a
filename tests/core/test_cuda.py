"""The CUDA path: every shipped checkpoint and every core entry point the tabs call, on a GPU.

A Space with a GPU loads every model onto it (`default_device()`), so any tensor a
function builds on the CPU and feeds to a model is a crash there and nowhere else.
These tests compare each GPU result with the CPU one. They are skipped without CUDA
(CI has none); run them on a GPU machine with `python -m pytest tests/core/test_cuda.py`.
"""

import copy
import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
from core_models import modern_lm
from random_models import GEMMA, LLAMA

import transformer_core as tc
from transformer_core.analysis.concepts import order_experiment
from transformer_core.decoding.seq2seq import Codec, traced
from transformer_core.analysis.sentiment import special_ids
from transformer_core.tokenization import TextTokenizer
from transformer_core.device import autocast
from transformer_core.training.loop import TrainConfig, train
from transformer_core.analysis import flow, modern

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

ASSETS = Path(__file__).resolve().parents[2] / "assets"
CHECKPOINTS = sorted(p.name for p in ASSETS.iterdir() if (p / "config.json").is_file())
TEXT = "Friends, Romans, countrymen, lend me your ears; I come to bury Caesar, not to praise him."


def on_both(name: str):
    """(cpu model, cuda model, tokenizer) of one shipped checkpoint."""
    return tc.load_model(ASSETS / name), tc.load_model(ASSETS / name, "cuda"), TextTokenizer.load(ASSETS / name)


def qkv(B=2, H=4, T=9, d_head=16, device="cuda"):
    return (torch.randn(B, H, T, d_head, device=device) for _ in range(3))


# 1. attention: the fused kernel and the textbook agree, and the fused kernel is what runs ---------

def test_sdpa_and_inspect_paths_agree_on_cuda():
    q, k, v = qkv()
    allowed = (tc.padding_mask([9, 4], 9) & tc.causal_mask(9)).for_heads("cuda").clone()
    allowed[1, :, 0] = False  # a query that sees no key: output 0, not NaN
    fast, _ = tc.attend(q, k, v, allowed)
    slow, weights = tc.attend(q, k, v, allowed, need_weights=True)
    torch.testing.assert_close(fast, slow, atol=1e-5, rtol=1e-5)
    assert weights.device.type == "cuda" and not fast.isnan().any()
    with autocast("cuda"):
        fast16, _ = tc.attend(q, k, v, allowed)
    assert fast16.dtype == torch.bfloat16
    torch.testing.assert_close(fast16.float(), slow, atol=3e-2, rtol=3e-2)


@pytest.mark.parametrize("masked", [False, True])
def test_sdpa_runs_a_fused_kernel_under_bf16_autocast(masked):
    q, k, v = qkv(B=4, H=4, T=128, d_head=64)
    allowed = tc.causal_mask(128).for_heads("cuda") if masked else None
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof, autocast("cuda"):
        tc.attend(q, k, v, allowed)
    ops = {e.name for e in prof.events()}
    fused = {op for op in ops if any(s in op for s in ("flash", "efficient_attention", "cudnn_attention"))}
    assert fused, f"no fused attention kernel ran; ops: {sorted(ops)}"
    assert "aten::_scaled_dot_product_attention_math" not in ops


# 2. every shipped checkpoint: the traced forward pass on the GPU matches the CPU ---------------

def inputs(model, tokenizer):
    ids = tokenizer.encode(TEXT)[: model.config.max_len]
    x = torch.tensor([ids])
    if isinstance(model, tc.EncoderDecoder):
        return x, x[:, : len(ids) // 2]
    return (x,)


@pytest.mark.parametrize("name", CHECKPOINTS)
def test_every_checkpoint_traces_the_same_on_cuda(name):
    cpu, gpu, tokenizer = on_both(name)
    assert tc.device_of(gpu).type == "cuda"
    args = inputs(cpu, tokenizer)
    expected, trace = cpu.run_with_trace(*args)
    got, gpu_trace = gpu.run_with_trace(*(a.cuda() for a in args))
    torch.testing.assert_close(got.cpu(), expected, atol=1e-3, rtol=1e-3)
    assert gpu_trace.groups == trace.groups
    for group in trace.groups:  # what the figures draw comes back on the CPU, in fp32
        torch.testing.assert_close(gpu_trace.attention(group), trace.attention(group), atol=1e-4, rtol=1e-3)


def test_a_mask_built_on_the_cpu_is_applied_on_cuda():
    cpu, gpu, tokenizer = on_both("shakespeare-lm")
    x = torch.tensor([tokenizer.encode(TEXT)])
    mask = tc.sliding_window_mask(x.shape[1], 3)
    expected, _ = cpu.run_with_trace(x, mask=mask)
    got, trace = gpu.run_with_trace(x.cuda(), mask=mask)
    torch.testing.assert_close(got.cpu(), expected, atol=1e-3, rtol=1e-3)
    assert (trace.attention("decoder")[..., ~mask.allowed] == 0).all()


# 3. generation under bf16 autocast ---------------------------------------------------------------

def test_next_token_distribution_in_bf16_is_close_to_fp32():
    cpu, gpu, tokenizer = on_both("shakespeare-lm")
    ids = tokenizer.encode(TEXT)
    expected, _ = tc.next_token_logits(cpu, ids)
    got, cache = tc.next_token_logits(gpu, ids)
    assert got.dtype == torch.float32 and cache.length == len(ids)
    p, q = torch.softmax(expected, -1), torch.softmax(got.cpu(), -1)
    assert 0.5 * (p - q).abs().sum() < 0.05  # total variation distance
    assert int(p.argmax()) == int(q.argmax())


def test_sampling_and_beam_search_on_cuda():
    _, gpu, tokenizer = on_both("shakespeare-lm")
    prompt = tokenizer.encode("ROMEO:")
    config = tc.SamplingConfig(temperature=0.8, top_k=50, top_p=0.9, seed=3)
    first = list(tc.stream(gpu, prompt, 20, choose=tc.Sampler(config)))
    again = list(tc.stream(gpu, prompt, 20, choose=tc.Sampler(config)))
    assert [t for t, _ in first] == [t for t, _ in again]  # the seeded draw replays on the GPU too
    for token, record in first:
        assert record.chosen == token and 0 < record.chosen_prob <= 1
    result = tc.beam_search_lm(gpu, prompt, width=3, max_new_tokens=12)
    scores = [h.score for h in result.hypotheses]
    assert len(scores) == 3 and scores == sorted(scores, reverse=True)


def test_a_long_generation_refills_the_cache_on_cuda():
    _, gpu, tokenizer = on_both("cheat-causal")  # context 16: a refill every 8 tokens
    ids = tc.generate(gpu, tokenizer.encode(TEXT), 40)
    assert len(ids) == 40 and all(0 <= i < gpu.config.vocab_size for i in ids)


# 4. what the masking, sentiment, translate and concepts tabs call --------------------------------

@pytest.mark.parametrize("name,kind", [("cheat-nomask", "none"), ("cheat-causal", "causal")])
def test_the_cheating_demo_on_cuda(name, kind):
    cpu, gpu, tokenizer = on_both(name)
    prompt = tokenizer.encode(TEXT)
    assert tc.greedy_with_mask(gpu, prompt, 10, kind) == tc.greedy_with_mask(cpu, prompt, 10, kind)
    assert tc.mean_loss(gpu, prompt) == pytest.approx(tc.mean_loss(cpu, prompt), abs=1e-4)


def test_attention_while_generating_on_cuda():
    _, gpu, tokenizer = on_both("shakespeare-lm")
    prompt = tokenizer.encode("ROMEO:")
    result = tc.attention_while_generating(gpu, prompt, 5)
    cfg = gpu.config
    assert [r.shape for r in result.rows] == [(cfg.n_layer, cfg.n_head, len(prompt) + s) for s in range(5)]
    assert all(r.device.type == "cpu" for r in result.rows)


def test_sentiment_verdict_on_cuda_matches_cpu():
    cpu, gpu, tokenizer = on_both("sentiment")
    text = "the acting was great but the plot was a mess"
    expected, got = tc.explain(cpu, tokenizer, text), tc.explain(gpu, tokenizer, text)
    for label, p in expected.probs.items():
        assert got.probs[label] == pytest.approx(p, abs=1e-4)
    torch.testing.assert_close(got.shares, expected.shares, atol=1e-4, rtol=1e-3)
    torch.testing.assert_close(got.rollout, expected.rollout, atol=1e-5, rtol=1e-4)
    ids = [tokenizer.encode(t) for t in ("a fine film", "dull and far too long", text)]
    pad_id, _ = special_ids(tokenizer)
    torch.testing.assert_close(tc.predict_proba(gpu, ids, pad_id), tc.predict_proba(cpu, ids, pad_id),
                               atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name,text", [("translate-reverse", "3141592653"), ("translate-pig-latin", "the quick fox")])
def test_translation_on_cuda_matches_cpu(name, text):
    cpu, gpu, tokenizer = on_both(name)
    codec = Codec(tokenizer)
    for width in (1, 3):
        assert tc.translate(gpu, codec, text, width).ids == tc.translate(cpu, codec, text, width).ids
    written = tc.translate(cpu, codec, text).ids
    probs, trace = traced(gpu, codec, text, written)
    assert probs.device.type == "cpu" and probs.shape[0] == len(written) + 1
    assert probs[:-1].argmax(-1).tolist() == written


def test_concepts_order_experiment_on_cuda():
    cpu, gpu, tokenizer = on_both("sentiment")
    ids = tokenizer.encode("not bad at all, really")
    perm = list(reversed(range(len(ids))))
    for expected, got in zip(order_experiment(cpu, ids, perm), order_experiment(gpu, ids, perm)):
        torch.testing.assert_close(got.h, expected.h, atol=1e-4, rtol=1e-3)


# 5. training on the GPU ----------------------------------------------------------------------------

def test_training_under_bf16_autocast_learns_and_saves(tmp_path):
    config = tc.DecoderLMConfig(vocab_size=32, d_model=64, n_layer=2, n_head=4, max_len=32, dropout=0.0)
    model = tc.DecoderLM(config).cuda()
    pattern = torch.arange(33, device="cuda") % 8  # a cycle the model can learn in a few steps

    def get_batch(split, g):
        return pattern[None, :-1].repeat(16, 1), pattern[None, 1:].repeat(16, 1)

    def loss_fn(model, batch):
        x, y = batch
        return torch.nn.functional.cross_entropy(model(x).flatten(0, 1).float(), y.flatten())

    losses = []
    train(model, TrainConfig(steps=60, lr=3e-3, warmup=5, eval_every=60, eval_batches=1),
             get_batch, loss_fn, on_step=lambda step, loss: losses.append(loss), progress=False)
    assert losses[-1] < 0.1 * losses[0]
    assert all(p.dtype == torch.float32 for p in model.parameters())  # autocast casts ops, not weights
    tc.save_checkpoint(model, tmp_path / "lm")
    reloaded = tc.load_model(tmp_path / "lm")  # saved from the GPU, read back on the CPU
    x = pattern[None, :-1]
    torch.testing.assert_close(reloaded(x.cpu()), model(x).cpu(), atol=1e-4, rtol=1e-4)


def test_sentiment_command_trains_on_the_gpu(tmp_path):
    from transformer_core.training.train_sentiment import main as train_main

    out = tmp_path / "out"
    train_main(["--out", str(out), "--tokenizer", str(ASSETS / "sentiment" / "tokenizer.json"), "--d-model", "32",
                "--n-layer", "1", "--n-head", "2", "--pretrain-steps", "4", "--pretrain-context", "16",
                "--steps", "6", "--eval-every", "3", "--batch-size", "8"])
    assert "(bf16 autocast)" in (out / "README.md").read_text()
    assert tc.load_model(out).config.d_model == 32


# 6. the modern decoder (SmolLM2's and Gemma 3's architecture) and the lessons read from it ---------
# The real LLMs' files are too large to travel to a lent GPU machine; their architecture, their import path and
# every lesson the Inside, Heads and Generate tabs run on them are checked here on tiny random models of each family.

FAMILIES = {"llama": LLAMA, "gemma": GEMMA}
IDS = list(range(3, 27))  # 24 tokens: Gemma's local layers (window 5) see only the last few


def modern_on_both(family: str):
    cpu = modern_lm(FAMILIES[family])
    return cpu, copy.deepcopy(cpu).cuda()


@pytest.mark.parametrize("family", FAMILIES)
def test_a_modern_decoder_traces_and_decodes_the_same_on_cuda(family):
    cpu, gpu = modern_on_both(family)
    x = torch.tensor([IDS])
    for offset in (0, 50):  # rotary positions read later in the text
        expected, trace = cpu.run_with_trace(x, offset=offset)
        got, gpu_trace = gpu.run_with_trace(x.cuda(), offset=offset)
        torch.testing.assert_close(got.cpu(), expected, atol=1e-3, rtol=1e-3)
        torch.testing.assert_close(gpu_trace.attention("decoder"), trace.attention("decoder"), atol=1e-4, rtol=1e-3)
    cache = gpu.new_cache()  # one token at a time past the sliding window, from a cache on the GPU
    steps = [gpu(x[:, :4].cuda(), cache=cache)] + [gpu(x[:, t:t + 1].cuda(), cache=cache) for t in range(4, len(IDS))]
    torch.testing.assert_close(torch.cat(steps, dim=1).cpu(), cpu(x), atol=1e-3, rtol=1e-3)
    assert tc.generate(gpu, IDS[:5], 12) == tc.generate(cpu, IDS[:5], 12)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_lessons_on_a_modern_decoder_are_the_same_on_cuda(family):
    cpu, gpu = modern_on_both(family)
    x = torch.tensor([IDS])
    lens_cpu = tc.logit_lens(cpu, cpu.run_with_trace(x)[1])
    lens_gpu = tc.logit_lens(gpu, gpu.run_with_trace(x.cuda())[1])
    for field in dataclasses.fields(lens_cpu):  # every field comes back on the CPU
        a, b = getattr(lens_cpu, field.name), getattr(lens_gpu, field.name)
        assert b.device.type == "cpu"
        torch.testing.assert_close(b.float(), a.float(), atol=1e-3, rtol=1e-3)
    graph_cpu, graph_gpu = flow.information_flow(cpu, IDS), flow.information_flow(gpu, IDS)
    np.testing.assert_allclose(graph_gpu.attention, graph_cpu.attention, atol=1e-3)
    np.testing.assert_allclose(graph_gpu.ffn, graph_cpu.ffn, atol=1e-3)
    assert graph_gpu.predicted == graph_cpu.predicted
    token, target = len(IDS) - 1, graph_cpu.predicted[-1]
    np.testing.assert_allclose(flow.direct_push(gpu, graph_gpu, token, target),
                               flow.direct_push(cpu, graph_cpu, token, target), atol=1e-2, rtol=1e-2)
    assert flow.head_logits(gpu, graph_gpu, 1, 0, token)[0][0] == flow.head_logits(cpu, graph_cpu, 1, 0, token)[0][0]
    assert modern.shift_change(gpu, IDS, 50).max() < 1e-3
    for a, b in zip(modern.without_first_token(cpu, IDS), modern.without_first_token(gpu, IDS)):
        torch.testing.assert_close(b, a, atol=1e-4, rtol=1e-3)
    for a, b in zip(modern.norm_difference(cpu, IDS), modern.norm_difference(gpu, IDS)):
        np.testing.assert_allclose(b, a, atol=1e-3)
    head = tc.Head("decoder", 1, 0)
    with tc.switch_off(cpu, [head]):
        expected = cpu(x)
    with tc.switch_off(gpu, [head]):
        got = gpu(x.cuda())
    torch.testing.assert_close(got.cpu(), expected, atol=1e-3, rtol=1e-3)
    assert not torch.allclose(expected, cpu(x), atol=1e-3)  # the head mattered


def test_an_llm_read_from_gguf_and_kept_float16_runs_as_float32_on_cuda(tmp_path):
    pytest.importorskip("gguf")
    from gguf_files import byte_level_vocab, write

    from transformer_core.weights.float16 import save_float16
    from transformer_core.weights.gguf import read_gguf

    model = modern_lm(LLAMA, vocab_size=len(byte_level_vocab()[0]), tie_embeddings=True)
    write(tmp_path / "llama.gguf", model, "llama")  # what lab/llms.py does with SmolLM2's file, in small
    read = read_gguf(tmp_path / "llama.gguf")
    folder = save_float16(read.model, tmp_path / "llm", read.tokenizer)
    cpu, gpu = tc.load_model(folder), tc.load_model(folder, "cuda")
    assert {p.dtype for p in gpu.parameters()} == {torch.float32} and tc.device_of(gpu).type == "cuda"
    x = torch.tensor([IDS])
    torch.testing.assert_close(gpu(x.cuda()).cpu(), cpu(x), atol=2e-2, rtol=2e-2)  # float16 rows on the CPU
    assert tc.generate(gpu, IDS[:5], 12) == tc.generate(cpu, IDS[:5], 12)
