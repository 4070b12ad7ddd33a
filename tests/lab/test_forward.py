"""The forward pass's stages: each shown output recomputed from the shown inputs by plain matrix arithmetic
equals the model's traced tensor, a perturbed stage fails that check, and the last stage is what
Generate, Sentiment and Translate show for the same text."""

import math

import numpy as np
import pytest
import torch

from i18n import render
from lab import forward, store
from lab.policy import InputError

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


def check_walk(run, read):
    model, _ = store.load(run.name)
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
    torch.testing.assert_close(read("logits")[0], logits, **TOL)
    torch.testing.assert_close(run.logits, logits, **TOL)
    torch.testing.assert_close(forward.probabilities(run), softmax(logits), **TOL)


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
    model, _ = store.load(run.name)
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
    assert piece.rows[-1].endswith(f"→ {tokenizer.decode([session.ids[-1]])}")


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
    picked = [row.split(" → ")[-1] for row in forward.stage_slice(run, "next", stack="decoder").rows]
    assert "".join(picked[:-1]) == shown.output and picked[-1] == "⟨/s⟩"
    # each step's pick is the next step's input: the loop, one token at a time
    assert [row.split(" → ")[0] for row in forward.stage_slice(run, "next").rows][1:] == picked[:-1]


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
