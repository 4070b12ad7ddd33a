"""The forward pass's stages: each shown output recomputed from the shown inputs by plain matrix arithmetic
equals the model's traced tensor, a perturbed stage fails that check, and the last stage is what
Generate, Sentiment and Translate show for the same text."""

import copy
import math

import numpy as np
import pytest
import torch

from i18n import render
from lab import forward, store
from lab.policy import InputError
from transformer_core import device_of

TOL = dict(rtol=1e-4, atol=1e-4)
TEXTS = {"shakespeare-lm": "The cat sat on the mat because it was tired.",
         "tang-poems-char": "床前明月光，疑是地上霜。", "sentiment": "A moving, beautifully acted film.", "translate-reverse": "123456789"}


def layer_norm(x, norm):
    """(x - mean) / sqrt(var + eps) * gamma + beta, over the last axis."""
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + norm.eps) * norm.weight + norm.bias


def linear(x, layer):
    return x @ layer.weight.T + (layer.bias if layer.bias is not None else 0)


def heads(x, n_head):
    T, d = x.shape
    return x.reshape(T, n_head, d // n_head).transpose(0, 1)  # (H, T, d_head)


def softmax(x):
    e = torch.exp(x - x.max(-1, keepdim=True).values)
    return e / e.sum(-1, keepdim=True)


def gelu(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def check_attention(read, path, x_norm, source, module, mask, n_head):
    """Q, K, V, scores, softmax, weighted sum, concatenation and W_o of one attention, from its input."""
    q, k, v = (heads(linear(inp, w), n_head) for inp, w in ((x_norm, module.w_q), (source, module.w_k),
                                                            (source, module.w_v)))
    for name, mine in (("q", q), ("k", k), ("v", v)):
        torch.testing.assert_close(read(f"{path}.{name}")[0], mine, **TOL)
    scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
    torch.testing.assert_close(read(f"{path}.scores")[0], scores, **TOL)
    allowed = read(f"{path}.mask")[0].expand(n_head, -1, -1)
    assert torch.equal(allowed, mask.expand(n_head, -1, -1))
    attn = softmax(scores.masked_fill(~allowed, float("-inf")))
    torch.testing.assert_close(read(f"{path}.attn")[0], attn, **TOL)
    weighted = attn @ v
    torch.testing.assert_close(read(f"{path}.weighted")[0], weighted, **TOL)
    concat = weighted.transpose(0, 1).reshape(weighted.shape[1], -1)
    torch.testing.assert_close(read(f"{path}.concat")[0], concat, **TOL)
    out = linear(concat, module.w_o)
    torch.testing.assert_close(read(f"{path}.out")[0], out, **TOL)
    return out


def check_block(read, path, block, x, mask, n_head, memory=None, memory_mask=None):
    """One pre-LN block, stage by stage, from its input stream x (T, d_model); returns its output."""
    n = layer_norm(x, block.norm_self)
    torch.testing.assert_close(read(f"{path}.norm_self.out")[0], n, **TOL)
    x = x + check_attention(read, f"{path}.self_attn", n, n, block.self_attn, mask, n_head)
    if memory is not None:  # a decoder layer: the residual after self-attention, then cross-attention
        torch.testing.assert_close(read(f"{path}.resid_self")[0], x, **TOL)
        n = layer_norm(x, block.norm_cross)
        torch.testing.assert_close(read(f"{path}.norm_cross.out")[0], n, **TOL)
        x = x + check_attention(read, f"{path}.cross_attn", n, memory, block.cross_attn, memory_mask, n_head)
    torch.testing.assert_close(read(f"{path}.resid_mid")[0], x, **TOL)
    n = layer_norm(x, block.norm_ff)
    torch.testing.assert_close(read(f"{path}.norm_ff.out")[0], n, **TOL)
    hidden = gelu(linear(n, block.ff.w_1))
    torch.testing.assert_close(read(f"{path}.ff.hidden")[0], hidden, **TOL)
    out = linear(hidden, block.ff.w_2)
    torch.testing.assert_close(read(f"{path}.ff.out")[0], out, **TOL)
    torch.testing.assert_close(read(f"{path}.out")[0], x + out, **TOL)
    return x + out


def check_stack(read, run, model, stack, mask, memory=None):
    """Embedding + position, every block, the final norm: each recomputed from the one before it."""
    s = run.stacks[stack]
    embed = getattr(model, s["embed"])
    ids = torch.tensor(s["ids"])
    x = embed.tok.weight[ids] + embed.pos.weight[: len(ids)]
    torch.testing.assert_close(read(f"{s['embed']}.out")[0], x, **TOL)
    memory_mask = None if memory is None else torch.ones(len(ids), memory.shape[0], dtype=torch.bool)
    for path in s["blocks"]:
        block = model.get_submodule(path)
        check_block(read, path, block, x, mask, run.n_head, memory, memory_mask)
        x = read(f"{path}.out")[0]  # the next block starts from the traced stream it shows
    final = layer_norm(x, model.get_submodule(s["norm"].removesuffix(".out")))
    torch.testing.assert_close(read(s["norm"])[0], final, **TOL)
    return final


def on_cpu(name: str):
    """The walked checkpoint's model where the trace is, on the CPU (on a GPU machine the store holds it there)."""
    model, _ = store.load(name)
    return model if device_of(model).type == "cpu" else copy.deepcopy(model).cpu()


def check_walk(run, read):
    model = on_cpu(run.name)
    assert run.config["norm_first"] and run.config["activation"] == "gelu"  # what the arithmetic above writes
    if run.kind == "translator":
        S, T = len(run.stacks["encoder"]["ids"]), len(run.stacks["decoder"]["ids"])
        memory = check_stack(read, run, model, "encoder", torch.ones(S, S, dtype=torch.bool))
        final = check_stack(read, run, model, "decoder", torch.ones(T, T, dtype=torch.bool).tril(), memory)
        logits = linear(final, model.generator)
    elif run.kind == "lm":
        T = len(run.stacks["decoder"]["ids"])
        final = check_stack(read, run, model, "decoder", torch.ones(T, T, dtype=torch.bool).tril())
        logits = final @ model.head.weight.T
    else:
        T = len(run.stacks["encoder"]["ids"])
        final = check_stack(read, run, model, "encoder", torch.ones(T, T, dtype=torch.bool))
        pooled = final.mean(0)
        torch.testing.assert_close(read("pooled")[0], pooled, **TOL)
        logits = linear(pooled, model.head)
    check_readout(run, logits)


def check_readout(run, logits):
    """The readouts kept from the logits: every row's likeliest ids, their logits, softmax's denominator."""
    logits = logits.reshape(len(run.readout.top), -1)
    out = run.readout
    assert out.vocab_size == logits.shape[-1]
    torch.testing.assert_close(torch.from_numpy(out.at(out.columns)), logits[:, out.columns], **TOL)
    torch.testing.assert_close(torch.from_numpy(out.lse), torch.logsumexp(logits, -1), **TOL)
    assert np.array_equal(out.top[:, 0], logits.argmax(-1).numpy())
    probs = softmax(logits)
    torch.testing.assert_close(torch.from_numpy(out.probs(out.columns)), probs[:, out.columns], **TOL)
    scored = torch.arange(len(run.target))
    torch.testing.assert_close(torch.from_numpy(out.losses()), -probs[scored, run.target].log(), **TOL)


# --- a modern decoder (SmolLM2's and Gemma 3's switches, at a test's size) -------------------------------------

def rms_norm(x, norm):
    """x / sqrt(mean(x^2) + eps) * gamma: no mean subtracted, no bias."""
    return x / torch.sqrt((x ** 2).mean(-1, keepdim=True) + norm.eps) * norm.weight


def rotated(x, position_angles):
    """Dimension i and i + d/2 turned as a point in the plane by each position's angle for pair i."""
    half = x.shape[-1] // 2
    cos, sin = torch.cos(position_angles), torch.sin(position_angles)  # (T, d/2)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def check_modern_block(read, run, path, block, x, layer):
    """One block of a modern decoder, stage by stage, from its input stream x (T, d_model); returns its output."""
    config = run.config
    T, H, H_kv, d_head = x.shape[0], run.n_head, run.n_kv_head, run.d_head
    n = rms_norm(x, block.norm_self)
    torch.testing.assert_close(read(f"{path}.norm_self.out")[0], n, **TOL)
    attn = block.self_attn
    q, k, v = (heads(linear(n, w), h) for w, h in ((attn.w_q, H), (attn.w_k, H_kv), (attn.w_v, H_kv)))
    if config["qk_norm"]:
        q, k = rms_norm(q, attn.q_norm), rms_norm(k, attn.k_norm)
    for name, mine in (("q", q), ("k", k), ("v", v)):
        torch.testing.assert_close(read(f"{path}.self_attn.{name}")[0], mine, **TOL)
    # the angles the page shows, position by position, turn q and k
    position_angles = torch.stack([torch.from_numpy(forward.angles(p, d_head, run.rope_base(layer)))
                                   for p in range(T)])
    q_rot, k_rot = rotated(q, position_angles), rotated(k, position_angles)
    torch.testing.assert_close(read(f"{path}.self_attn.q_rot")[0], q_rot, **TOL)
    torch.testing.assert_close(read(f"{path}.self_attn.k_rot")[0], k_rot, **TOL)
    group = H // H_kv  # query head h reads key/value head h // group
    k_read, v_read = k_rot.repeat_interleave(group, 0), v.repeat_interleave(group, 0)
    scale = (config["query_pre_attn_scalar"] or d_head) ** -0.5
    scores = q_rot @ k_read.transpose(1, 2) * scale
    torch.testing.assert_close(read(f"{path}.self_attn.scores")[0], scores, **TOL)
    back = torch.arange(T)[:, None] - torch.arange(T)[None, :]
    allowed = (back >= 0) & ((back < config["sliding_window"]) if run.is_local(layer) else True)
    assert torch.equal(read(f"{path}.self_attn.mask")[0, 0], allowed)
    weights = softmax(scores.masked_fill(~allowed, float("-inf")))
    torch.testing.assert_close(read(f"{path}.self_attn.attn")[0], weights, **TOL)
    weighted = weights @ v_read
    torch.testing.assert_close(read(f"{path}.self_attn.weighted")[0], weighted, **TOL)
    concat = weighted.transpose(0, 1).reshape(T, -1)
    torch.testing.assert_close(read(f"{path}.self_attn.concat")[0], concat, **TOL)
    out = linear(concat, attn.w_o)
    torch.testing.assert_close(read(f"{path}.self_attn.out")[0], out, **TOL)
    if config["sandwich_norm"]:
        out = rms_norm(out, block.norm_self_out)
        torch.testing.assert_close(read(f"{path}.norm_self_out.out")[0], out, **TOL)
    x = x + out
    torch.testing.assert_close(read(f"{path}.resid_mid")[0], x, **TOL)
    n = rms_norm(x, block.norm_ff)
    act = torch.nn.functional.silu if config["activation"] == "silu" else \
        (lambda h: torch.nn.functional.gelu(h, approximate="tanh"))
    gate, up = act(linear(n, block.ff.w_1)), linear(n, block.ff.w_3)
    torch.testing.assert_close(read(f"{path}.ff.gate")[0], gate, **TOL)
    torch.testing.assert_close(read(f"{path}.ff.up")[0], up, **TOL)
    torch.testing.assert_close(read(f"{path}.ff.hidden")[0], gate * up, **TOL)
    down = linear(gate * up, block.ff.w_2)
    torch.testing.assert_close(read(f"{path}.ff.out")[0], down, **TOL)
    if config["sandwich_norm"]:
        down = rms_norm(down, block.norm_ff_out)
        torch.testing.assert_close(read(f"{path}.norm_ff_out.out")[0], down, **TOL)
    torch.testing.assert_close(read(f"{path}.out")[0], x + down, **TOL)
    return x + down


def check_modern_walk(run, read):
    model = on_cpu(run.name)
    config = run.config
    assert config["norm"] == "rms" and config["positions"] == "rotary" and config["gated"]
    ids = torch.tensor(run.stacks["decoder"]["ids"])
    x = model.embed.tok.weight[ids] * (config["d_model"] ** 0.5 if config["scale_embeddings"] else 1.0)
    torch.testing.assert_close(read("embed.out")[0], x, **TOL)  # no positions added: they turn q and k
    for layer, path in enumerate(run.stacks["decoder"]["blocks"]):
        check_modern_block(read, run, path, model.get_submodule(path), x, layer)
        x = read(f"{path}.out")[0]
    final = rms_norm(x, model.norm)
    torch.testing.assert_close(read("norm.out")[0], final, **TOL)
    check_readout(run, final @ model.head.weight.T)


@pytest.fixture(scope="module")
def modern(modern_store):
    """The tiny Llama- and Gemma-shaped checkpoints walked (conftest.modern_store)."""
    return {name: forward.walk(name, TEXTS["shakespeare-lm"]) for name in modern_store}


@pytest.mark.parametrize("name", ["tiny-llama", "tiny-gemma"])
def test_a_modern_decoders_stages_recomputed_by_plain_arithmetic_equal_the_traced_tensors(modern, name):
    """RMSNorm, q k v (QK-norm), the rotation by the angles the page shows, grouped-query attention, the
    sliding window, the gated feed-forward and Gemma's norms after each sublayer, each from the one before."""
    run = modern[name]
    check_modern_walk(run, lambda point: run.trace[point])


@pytest.mark.parametrize("point", ["layers.0.self_attn.q_rot", "layers.1.self_attn.k_rot", "layers.0.ff.gate",
                                   "layers.1.norm_ff_out.out", "layers.0.self_attn.weighted", "embed.out"])
def test_a_perturbed_modern_stage_fails_the_arithmetic_check(modern, point):
    run = modern["tiny-gemma"]

    def perturbed(name):
        x = run.trace[name]
        return x + 1e-2 * torch.randn_like(x) if name == point else x

    with pytest.raises(AssertionError):
        check_modern_walk(run, perturbed)


def test_a_modern_decoder_walks_only_its_own_stages_with_their_numbers(modern):
    """The rotation (4a), the gate (11a) and Gemma's sublayer norms (10a, 12a) join the walk; no pooling; the 19
    numbers keep naming the same stages."""
    llama, gemma = modern["tiny-llama"], modern["tiny-gemma"]
    assert [s for s, _, _ in forward.steps(llama)] == [
        "ids", "embed", "norm", "qkv", "rope", "scores", "mask", "attn", "weighted", "concat", "attn_out",
        "resid_mid", "gate_up", "ff", "block_out", "final_norm", "logits", "probs", "next", "loss"]
    assert {"attn_post_norm", "ff_post_norm"} <= set(gemma.stages) and "pooled" not in gemma.stages
    assert [forward.stage_of(n) for n in ("4", "4a", "10a", "11a", "12a", "17", "19")] == [
        "qkv", "rope", "attn_post_norm", "gate_up", "ff_post_norm", "next", "loss"]
    assert not forward.stage_slice(forward.walk("shakespeare-lm", TEXTS["shakespeare-lm"]), "rope").applies


def test_a_grouped_query_head_shows_the_key_value_head_it_reads(modern):
    run = modern["tiny-gemma"]  # 8 query heads, 1 key/value head
    piece = forward.stage_slice(run, "qkv", 1, 5)
    d = run.d_head
    np.testing.assert_array_equal(piece.values[:, :d], run.trace["layers.1.self_attn.q"][0, 5].numpy())
    np.testing.assert_array_equal(piece.values[:, d:2 * d], run.trace["layers.1.self_attn.k"][0, 0].numpy())
    llama = modern["tiny-llama"]  # 4 query heads over 2: head 3 reads key/value head 1
    assert llama.kv_head(3) == 1
    piece = forward.stage_slice(llama, "qkv", 0, 3)
    np.testing.assert_array_equal(piece.values[:, 2 * llama.d_head:], llama.trace["layers.0.self_attn.v"][0, 1])
    piece = forward.stage_slice(llama, "rope", 0, 3)
    np.testing.assert_array_equal(piece.values[:, 3 * llama.d_head:], llama.trace["layers.0.self_attn.k_rot"][0, 1])


def test_the_rotation_stage_gives_the_followed_positions_angles(modern):
    run = modern["tiny-gemma"]  # layer 0 is local (base 50), layer 1 global (base 5000)
    local, global_ = (forward.stage_slice(run, "rope", layer, 0, follow=3) for layer in (0, 1))
    d = run.d_head
    np.testing.assert_allclose(global_.angles, [(3 * 5000.0 ** (-2 * i / d)) % (2 * math.pi) for i in range(d // 2)],
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(local.angles, [(3 * 50.0 ** (-2 * i / d)) % (2 * math.pi) for i in range(d // 2)],
                               rtol=1e-4, atol=1e-4)


@pytest.fixture(scope="module")
def runs():
    return {name: forward.walk(name, text) for name, text in TEXTS.items() if name in store.checkpoints().values()}


@pytest.mark.parametrize("name", list(TEXTS))
def test_every_stage_recomputed_by_plain_matrix_arithmetic_equals_the_traced_tensor(runs, name):
    run = runs[name]
    check_walk(run, lambda point: run.trace[point])


@pytest.mark.parametrize("point", ["layers.1.self_attn.scores", "layers.0.ff.out", "embed.out", "norm.out",
                                   "layers.1.resid_mid", "layers.0.self_attn.v"])
def test_a_perturbed_stage_fails_the_arithmetic_check(runs, point):
    run = runs["shakespeare-lm"]

    def perturbed(name):
        x = run.trace[name]
        return x + 1e-2 * torch.randn_like(x) if name == point else x

    with pytest.raises(AssertionError):
        check_walk(run, perturbed)


@pytest.mark.parametrize("point", ["decoder.1.resid_self", "decoder.0.cross_attn.k", "encoder_norm.out"])
def test_a_perturbed_decoder_stage_fails_the_arithmetic_check(runs, point):
    run = runs["translate-reverse"]

    def perturbed(name):
        x = run.trace[name]
        return x + 1e-2 * torch.randn_like(x) if name == point else x

    with pytest.raises(AssertionError):
        check_walk(run, perturbed)


def test_the_decoder_shows_the_residual_after_self_attention_then_cross_attention_with_its_three_arrows(runs):
    """Q from the decoder's rows, K and V from the encoder's output: each recomputed from the stream it comes from."""
    run = runs["translate-reverse"]
    model = on_cpu(run.name)
    tr, last, head = run.trace, run.n_layer - 1, run.n_head - 1
    path = f"decoder.{last}"
    assert forward.stage_slice(run, "resid_mid", last, head, "decoder").points == (f"{path}.resid_self",)
    assert forward.stage_slice(run, "resid_mid", last, head, "decoder", cross=True).points == (f"{path}.resid_mid",)
    piece = forward.stage_slice(run, "qkv", last, head, "decoder", cross=True)
    assert piece.points == tuple(f"{path}.cross_attn.{p}" for p in "qkv")
    T, S = len(run.labels("decoder")), len(run.labels("encoder"))
    assert [r.split(" · ")[0] for r in piece.rows] == ["Q"] * T + ["K"] * S + ["V"] * S
    block = model.get_submodule(path)
    memory = tr["encoder_norm.out"][0]
    arrows = {"Q": (block.cross_attn.w_q, layer_norm(tr[f"{path}.resid_self"][0], block.norm_cross)),
              "K": (block.cross_attn.w_k, memory), "V": (block.cross_attn.w_v, memory)}
    start = 0
    for weight, source in arrows.values():
        mine = heads(linear(source, weight), run.n_head)[head].detach()
        np.testing.assert_allclose(piece.values[start:start + len(mine)], mine.numpy(), **TOL)
        start += len(mine)
    assert start == len(piece.values)
    from views import forward as views
    assert "K" in views.sentence(run, piece, "en") and "编码器" in views.sentence(run, piece, "zh-CN")


@pytest.mark.parametrize("name", list(TEXTS))
def test_each_stage_shows_the_traced_tensor_it_names(runs, name):
    """What is drawn is the trace's own tensor, sliced: the layer, head and stack picked."""
    run = runs[name]
    stack = "decoder" if run.kind != "classifier" else "encoder"
    layer, head = run.n_layer - 1, run.n_head - 1
    for stage in forward.STAGES[1:14]:
        piece = forward.stage_slice(run, stage, layer, head, stack)
        traced = run.trace[piece.points[0]][0]
        if stage in ("scores", "attn", "weighted", "mask"):
            traced = traced.expand(run.n_head, -1, -1)[head] if stage == "mask" else traced[head]
        if stage == "qkv":
            traced = torch.cat([run.trace[p][0, head] for p in piece.points], dim=-1)
        np.testing.assert_array_equal(piece.values, traced.numpy().astype(piece.values.dtype))
        assert len(piece.rows) == piece.values.shape[0]


def test_the_last_stage_is_what_generate_shows_at_temperature_0(runs):
    from lab import generate

    run = runs["shakespeare-lm"]
    model, tokenizer, _ = generate.load(generate.SHIPPED)
    request = generate.check(generate.SHIPPED, tokenizer, model.config.max_len, TEXTS["shakespeare-lm"], "greedy",
                             0.0, 0, 1.0, 0.0, 1.0, 1, 0)
    session = generate.sampled(model, tokenizer, request)
    assert list(request.prompt_ids) == run.stacks["decoder"]["ids"]
    piece = forward.stage_slice(run, "next", follow=len(request.prompt_ids) - 1)
    assert piece.cols[0] == forward.picks(run)[-1][1] == tokenizer.decode([session.ids[-1]])


def test_the_last_stage_is_what_sentiment_shows(runs):
    from lab import sentiment

    run = runs["sentiment"]
    shown = sentiment.classify(TEXTS["sentiment"], "sentiment")
    piece = forward.stage_slice(run, "probs")
    assert piece.values[0] == pytest.approx([shown.probs["negative"], shown.probs["positive"]], abs=1e-5)


def test_the_decoder_loop_is_what_translate_shows(runs):
    from lab import translate

    run = runs["translate-reverse"]
    shown = translate.translation("reverse", TEXTS["translate-reverse"])
    assert shown.output == "987654321"  # the shipped model reverses this source
    picked = [pick for _, pick, _ in forward.picks(run)]
    assert "".join(picked[:-1]) == shown.output == run.output and picked[-1] == "⟨/s⟩"
    # each step's pick is the next step's input: the loop, one token at a time
    assert [token for token, _, _ in forward.picks(run)][1:] == picked[:-1]


@pytest.mark.parametrize("name", list(TEXTS))
def test_every_stage_draws_for_every_model_kind(runs, name):
    from views import forward as views

    run = runs[name]
    stacks = ["encoder", "decoder"] if run.kind == "translator" else [None]
    for stack in stacks:
        for cross in ([False, True] if stack == "decoder" else [False]):
            for stage in forward.STAGES:
                piece = forward.stage_slice(run, stage, 0, 0, stack, cross, 2)
                for lang in ("en", "zh-CN"):
                    assert "<svg" in views.diagram(run, stage, stack or "", 0, 0, cross, lang)
                    assert views.sentence(run, piece, lang)
                    if piece.applies:
                        assert views.heatmap(piece, lang).to_json() and views.row(piece, lang).to_json()


@pytest.mark.parametrize("stage", ["0", "20", "attention", "", None, "1e9"])
def test_a_stage_that_does_not_exist_is_a_clear_error(runs, stage):
    with pytest.raises(InputError, match="There is no stage"):
        forward.stage_slice(runs["shakespeare-lm"], stage)


def test_a_128_token_stage_fits_in_60_kb():
    from views import forward as views

    run = forward.walk("shakespeare-lm", "To be, or not to be, that is the question. " * 30)
    assert len(run.labels()) == 128
    piece = forward.stage_slice(run, "resid_mid", 1, 0, None, False, 5)
    sizes = [len(f.to_json().encode()) for f in (views.heatmap(piece), views.row(piece))]
    sizes.append(len(views.diagram(run, "resid_mid", "", 1, 0, False).encode()))
    assert sum(sizes) < 60_000, sizes


def test_the_walk_is_computed_once_and_every_stage_is_a_slice_of_it(monkeypatch):
    text = "Computed once, then sliced."
    run = forward.walk("shakespeare-lm", text)
    monkeypatch.setattr(forward, "_compute", lambda *args: pytest.fail("the model ran again for a stage"))
    for stage in forward.STAGES:
        again = forward.walk("shakespeare-lm", text)
        assert again is run  # the cache's hit: the one traced run
        forward.stage_slice(again, stage, 1, 1, None, False, 3)


def test_the_walk_reads_through_the_reading_path_and_says_when_the_model_cannot_read_the_text():
    """A text the model cannot read gets the reading path's one line, as the Attention tab's does, and an
    empty one the reading path's error."""
    english = forward.walk("shakespeare-lm", "这部电影的演员演得很好，故事却很无聊。")
    assert "cannot read this text" in render(english.notice, "en"), english.notice
    with pytest.raises(InputError):
        forward.walk("shakespeare-lm", "   ")


def test_a_layer_or_head_out_of_range_is_clamped_with_a_notice_in_the_readers_language(runs):
    """Issue 57's bad input: a link's layer 40 of a 6-layer model is drawn at its last layer, and the page says so."""
    run = runs["shakespeare-lm"]
    piece = forward.stage_slice(run, "scores", 40, 99, follow=3)
    assert (piece.layer, piece.head) == (run.n_layer - 1, run.n_head - 1)
    assert "Layer can be 0 to 5; used 5." in render(piece.notice, "en")
    assert "层的范围是 0 到 5；已使用 5。" in render(piece.notice, "zh-CN")
    assert forward.stage_slice(run, "embed", 40).notice == ""  # a stage of no layer has nothing to clamp


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_a_modern_decoders_every_stage_draws_with_its_real_sizes(modern, lang):
    """What the page gets for each of Gemma's stages: the stage lit once in a diagram of only its stages, its
    boxes in the model's sizes (RMSNorm, the grouped heads, the sliding window of a local layer), figures drawn."""
    import json

    import i18n
    from ui import forward as tab

    run = modern["tiny-gemma"]
    for stage in run.stages:
        says, diagram, *figures, _ = tab.forward_stage("tiny-gemma", TEXTS["shakespeare-lm"], stage, 0, 5,
                                                       "decoder", False, 3, lang)  # the last, the follow slider
        assert diagram.count('class="box lit"') == 1 and 'data-stage="pooled"' not in diagram, stage
        assert "H_kv=1" in diagram and "RMSNorm" in diagram
        assert i18n.t("forward.stage.mask_window", lang, w=5) in diagram  # layer 0's mask: a window of 5 keys
        matrix, row = (json.loads(f.plot) for f in figures)
        assert matrix["data"] and (row["data"] or row["layout"]["annotations"]), stage
    says, diagram, *_ = tab.forward_stage("tiny-gemma", TEXTS["shakespeare-lm"], "qkv", 0, 5, "decoder", False, 3,
                                          lang)
    assert ("key/value head 0" if lang == "en" else "键/值头 0") in says


def test_the_translators_walk_is_its_encoder_then_its_decoder_then_its_cross_attention(runs):
    """Issue 60: the walk covered only the decoder; the encoder and cross-attention sat behind a radio button."""
    run = runs["translate-reverse"]
    walked = forward.steps(run)
    encoder = [s for s, stack, _ in walked if stack == "encoder"]
    assert encoder == ["ids", "embed", "norm", "qkv", "scores", "mask", "attn", "weighted", "concat", "attn_out",
                       "resid_mid", "ff", "block_out", "final_norm"]
    assert walked[len(encoder)] == ("ids", "decoder", False)  # then the decoder, from its own tokens
    cross = [s for s, _, c in walked if c]
    assert cross[0] == "norm" and "qkv" in cross and cross[-1] == "resid_mid"
    assert walked.index(("qkv", "decoder", True)) > walked.index(("resid_mid", "decoder", False))
    assert walked[-4:] == [(s, "decoder", False) for s in ("logits", "probs", "next", "loss")]
    # Next and Previous follow that order; a stage the model has not steps from where it would be
    assert forward.step(run, "final_norm", "encoder", False, +1) == ("ids", "decoder", False)
    assert forward.step(run, "resid_mid", "decoder", False, +1) == ("norm", "decoder", True)
    lm = runs["shakespeare-lm"]
    assert forward.step(lm, "pooled", None, False, +1)[0] == "logits"  # pooling would follow the final norm
    assert forward.step(lm, "pooled", None, False, -1)[0] == "final_norm"
    assert forward.step(lm, "ids", None, False, -1)[0] == "ids" and forward.step(lm, "loss", None, False, 1)[0] == "loss"
