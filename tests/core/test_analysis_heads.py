"""Which head links A to B, the importance map, the logit lens and head roles, on models whose answer is known."""

import pytest
import random_models
import torch
from torch import nn

import transformer_core as tc
from transformer_core.analysis.heads import (
    Head, HeadError, switch_off, head_roles, importance_map, logit_lens, rank_heads, repeated_random_tokens,
)

TEXT = torch.tensor([[3, 17, 5, 29, 11, 2, 38, 7, 19, 23]])


def planted_link(query: int, key: int, layer: int = 1, head: int = 2) -> tc.EncoderClassifier:
    """A random encoder whose head (layer, head) is rewired so that position `query` of TEXT
    attends to position `key`: its query projection reads the direction of query's normalised
    input, its key projection the direction of key's, so only that pair scores high."""
    model = random_models.classifier()
    _, run = model.run_with_trace(TEXT)
    block = model.layers[layer]
    with torch.no_grad():
        x = block.norm_self(run.hidden["encoder"][layer][0])  # (T, d_model): what the head reads
        d = model.config.d_head
        u = torch.zeros(d)
        u[0] = 2.0
        rows = slice(head * d, (head + 1) * d)
        for proj, pos in ((block.self_attn.w_q, query), (block.self_attn.w_k, key)):
            proj.weight[rows] = torch.outer(u, x[pos] / x[pos].norm())
            proj.bias[rows] = 0.0
    return model


def test_the_top_ranked_head_is_the_planted_one():
    model = planted_link(query=6, key=2)
    _, run = model.run_with_trace(TEXT)
    ranking = rank_heads(run, query=6, key=2)
    assert ranking.ranked[0][0] == Head("encoder", 1, 2)
    assert ranking.ranked[0][1] > 0.9 > ranking.mean
    assert ranking.weights.shape == (2, 4)
    # another pair is not the planted link: the planted head is not singled out there
    assert rank_heads(run, query=6, key=3).ranked[0][0] != Head("encoder", 1, 2)
    # a word of several tokens: the weights on its pieces add up
    both = rank_heads(run, query=6, key=[2, 3]).weights
    assert torch.allclose(both, ranking.weights + rank_heads(run, query=6, key=3).weights)


@pytest.mark.parametrize("query, key", [(-1, 0), (0, 10), (10, 0), (0, []), (0, [1, 10])])
def test_ranking_positions_outside_the_text_are_refused(query, key):
    _, run = random_models.classifier().run_with_trace(TEXT)
    with pytest.raises(HeadError, match="positions must be"):
        rank_heads(run, query, key)


def one_head_carries_the_answer(layer: int = 1, head: int = 2) -> tc.EncoderClassifier:
    """A random encoder whose verdict is read from two residual dimensions that only head
    (layer, head) writes: it writes a constant there, so with it the model says class 1 with
    p ~ 1, without it p = 1/2. Every other head still changes everything else."""
    model = random_models.classifier()
    answer = [30, 31]
    d = model.config.d_head
    with torch.no_grad():
        model.embed.tok.weight[:, answer] = 0.0
        model.embed.pos.weight[:, answer] = 0.0
        for block in model.layers:
            for proj in (block.self_attn.w_o, block.ff.w_2):
                proj.weight[answer] = 0.0
                proj.bias[answer] = 0.0
        carrier = model.layers[layer].self_attn
        cols = slice(head * d, (head + 1) * d)
        carrier.w_v.weight[cols] = 0.0
        carrier.w_v.bias[cols] = 1.0  # a constant value: whatever the head attends to, it writes it
        carrier.w_o.weight[answer[0], cols] = 1.0
        model.head.weight.zero_()
        model.head.bias.zero_()
        model.head.weight[1, answer] = torch.tensor([1.0, -1.0])
        model.head.weight[0, answer] = torch.tensor([-1.0, 1.0])
    return model


@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_importance_map_puts_the_head_that_carries_the_answer_first(mode):
    model = one_head_carries_the_answer()
    result = importance_map(model, TEXT[0], mode=mode)
    top, damage = result.ranked()[0]
    if mode == "zero":
        assert top == Head("encoder", 1, 2)
        assert damage == pytest.approx(torch.log(torch.tensor(2.0)).item(), abs=0.01)  # log 1 - log 1/2
        assert result.ranked()[1][1] < 0.1 * damage
    else:  # its mean is the constant it always writes: switching it to its mean changes nothing
        assert result.damage["encoder"][1, 2].abs() < 1e-4
    assert result.damage["encoder"].shape == (2, 4)


@pytest.mark.parametrize("kind", ["lm", "classifier", "encdec"])
@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_batched_importance_map_equals_one_ablation_at_a_time(kind, mode):
    """One head off per batch row, in batches of 5 rows, gives what separate runs give."""
    model = getattr(random_models, kind)()
    src, tgt = TEXT[0] % 30, torch.tensor([1, 5, 8, 3, 12, 2])  # the translator reads 30 source ids
    result = importance_map(model, src, target=tgt if kind == "encdec" else None, mode=mode, batch_rows=5)
    inputs = {"src": src[None], "tgt": tgt[None, :-1]} if kind == "encdec" else {"idx": src[None]}
    means = tc.head_means(model, **inputs)

    def score():
        with torch.no_grad():
            if kind == "lm":
                return -tc.mean_loss(model, src.tolist())
            if kind == "classifier":
                return torch.log_softmax(model(src[None]), -1)[0]
            logits = model(src[None], tgt[None, :-1])
            return torch.log_softmax(logits, -1)[0].gather(-1, tgt[1:, None]).sum()

    clean = score()
    label = int(clean.argmax()) if kind == "classifier" else None
    for head, damage in result.ranked():
        with switch_off(model, [head], mode, means):
            ablated = score()
        expected = (clean[label] - ablated[label]) if label is not None else clean - ablated
        assert damage == pytest.approx(float(expected), abs=1e-4), head
    assert sum(abs(d) for _, d in result.ranked()) > 0.01  # non-degenerate: heads matter


@pytest.mark.parametrize("kind, ids, target, message", [
    ("lm", [5], None, "too short"),
    ("classifier", [], None, "too short"),
    ("lm", [5, 40], None, "must lie in 0..39"),  # one past the vocabulary
    ("lm", [-1, 3], None, "must lie in"),
    ("encdec", [4, 9], None, "needs the target"),
    ("encdec", [4, 9], [1], "at least <s> and one token"),
    ("encdec", [4, 9], [1, 25], "target ids must lie"),
])
def test_importance_map_refuses_texts_it_cannot_score(kind, ids, target, message):
    with pytest.raises(HeadError, match=message):
        importance_map(getattr(random_models, kind)(), ids, target=target)


def test_logit_lens_last_layer_is_the_models_output():
    model = random_models.lm(n_layer=3)
    logits, run = model.run_with_trace(TEXT)
    probs = torch.softmax(logits[0], -1)
    lens = logit_lens(model, run)
    assert lens.top_ids.shape == (4, TEXT.shape[1])  # the embedding + 3 blocks, per position
    assert torch.equal(lens.top_ids[-1], probs.argmax(-1))
    assert torch.allclose(lens.top_probs[-1], probs.max(-1).values, atol=1e-6)
    assert torch.equal(lens.final_probs[-1], lens.top_probs[-1]) and (lens.final_rank[-1] == 0).all()
    # earlier layers are read differently: the embedding alone does not already make the final guess
    assert (lens.final_rank[0] > 0).any() and not torch.equal(lens.top_ids[0], lens.top_ids[-1])
    expected = torch.softmax(model.head(model.norm(run.hidden["decoder"][1][0])), -1)  # block 0's stream, by hand
    assert torch.allclose(lens.top_probs[1], expected.max(-1).values, atol=1e-6)


@pytest.mark.parametrize("chunk", [2**24, 30])  # the whole vocabulary at once, and two tokens per slice
@pytest.mark.parametrize("family", [{}, random_models.GEMMA])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])  # float16: as SmolLM2 and Gemma are kept
@pytest.mark.parametrize("split", [2**62, 0])  # the vocabulary read in one go, and in two halves on two threads
def test_logit_lens_reads_every_layer_as_a_full_softmax_would(monkeypatch, chunk, family, dtype, split):
    """The lens reads the unembedding a slice of the vocabulary at a time, summing the softmax as it goes:
    every layer's top guess, its probability, and the rank and probability of the model's prediction must
    equal those of that layer's full logits, read by hand (in float32, as the lens reads a float16 model)."""
    monkeypatch.setattr("transformer_core.analysis.heads.LENS_CHUNK", chunk)
    monkeypatch.setattr("transformer_core.analysis.heads.LENS_SPLIT_FROM", split)
    monkeypatch.setattr("transformer_core.analysis.heads.COUNT_ROWS", 3)  # the ranks counted in parts of rows
    model = random_models.modern_lm(family, n_layer=3, vocab_size=61).to(dtype)
    logits, run = model.run_with_trace(TEXT)
    lens = logit_lens(model, run)
    final = logits[0].float().argmax(-1)  # the model's own prediction
    assert torch.equal(lens.top_ids[-1], final) and (lens.final_rank[-1] == 0).all()
    for layer, h in enumerate(run.hidden["decoder"][:-1]):
        by_hand = model.norm(h[0].to(dtype)).float() @ model.head.weight.float().T  # (T, vocab)
        probs = torch.softmax(by_hand, -1)
        assert torch.equal(lens.top_ids[layer], by_hand.argmax(-1))
        assert torch.allclose(lens.top_probs[layer], probs.max(-1).values, atol=1e-6)
        assert torch.allclose(lens.final_probs[layer], probs.gather(-1, final[:, None])[:, 0], atol=1e-6)
        assert torch.equal(lens.final_rank[layer].long(), (by_hand > by_hand.gather(-1, final[:, None])).sum(-1))
    assert (lens.final_rank[:-1] > 0).any()  # the earlier layers do not all guess the answer already


@pytest.mark.parametrize("family", [{}, random_models.GEMMA])
@pytest.mark.parametrize("split", [2**62, 0])
def test_a_large_lens_multiplied_in_bfloat16_states_float32s_top_guess_and_near_ranks(monkeypatch, family, split):
    """A large lens multiplies in bfloat16 and reads each row's best candidates again in float32: the top guess
    is float32's, its probability within 1 %, the answer's rank exact among the candidates and, beyond them,
    off by no more than the tokens within twice the product's error bound of the answer's logit."""
    from transformer_core.analysis import heads

    keep = 8
    monkeypatch.setattr(heads, "_lens_dtype", lambda x, unembed: torch.bfloat16)
    monkeypatch.setattr(heads, "LENS_EXACT", keep)
    monkeypatch.setattr(heads, "LENS_CHUNK", 3000)  # a few slices of the vocabulary
    monkeypatch.setattr(heads, "LENS_SPLIT_FROM", split)
    model = random_models.modern_lm(family, n_layer=3, vocab_size=700).to(torch.float16)
    logits, run = model.run_with_trace(TEXT)
    lens = logit_lens(model, run)
    final = logits[0].float().argmax(-1)
    for layer, h in enumerate(run.hidden["decoder"][:-1]):
        x = model.norm(h[0].to(torch.float16)).float()
        by_hand = x @ model.head.weight.float().T  # (T, vocab) float32
        probs, answer = torch.softmax(by_hand, -1), by_hand.gather(-1, final[:, None])
        rank = (by_hand > answer).sum(-1)
        assert torch.equal(lens.top_ids[layer], by_hand.argmax(-1))
        assert torch.allclose(lens.top_probs[layer], probs.max(-1).values, rtol=0.01)
        near = rank < keep
        assert torch.equal(lens.final_rank[layer][near].long(), rank[near])
        band = ((by_hand - answer).abs() <= 2 * heads._bf16_error(x, model.head.weight, answer[:, 0])[:, None]).sum(-1)
        assert ((lens.final_rank[layer].long() - rank).abs() <= band).all()
        assert (~near).any() or layer > 0  # the embedding's row reads ranks beyond the candidates


def test_the_lens_reads_a_float32_stream_beyond_float16s_range_under_float16_matrices():
    """The real LLMs keep their matrices float16 and their residual stream float32; Gemma's stream at the first
    token outgrows float16 (over 65,504): the lens reads it as the model's final norm does, in float32."""
    from transformer_core.weights.float16 import HalfLinear

    model = random_models.modern_lm(random_models.GEMMA, n_layer=3, vocab_size=61)
    model.head = HalfLinear(model.head.weight.detach())
    _, run = model.run_with_trace(TEXT)
    run.hidden["decoder"][1][0, 0] *= 1e6  # block 0's stream at the first token, far past float16's range
    lens = logit_lens(model, run)
    assert torch.isfinite(lens.top_probs).all() and torch.isfinite(lens.final_probs).all()


def test_logit_lens_refuses_models_without_an_unembedding():
    model = random_models.classifier()
    _, run = model.run_with_trace(TEXT)
    with pytest.raises(HeadError, match="decoder language model"):
        logit_lens(model, run)


V, N = 8, 8  # tokens, and the length of the sequence that is repeated


def induction_circuit() -> tc.DecoderLM:
    """Olsson et al.'s two-head circuit, by hand, attention only (LayerNorms and MLPs off).

    Residual dims: [0, 8) the token, [8, 24) the position, [24, 32) the previous token,
    [32, 40) the prediction. Layer 0 head 0 is a previous-token head: position p's query
    matches the key of position p-1; it copies that token into the previous-token dims.
    Layer 1 head 0 is the induction head: a query for token t matches keys whose previous
    token is t, and copies the key's own token into the prediction dims, which the
    unembedding reads. Every other head is zero (uniform attention, writes nothing).
    """
    config = tc.DecoderLMConfig(vocab_size=V, d_model=40, n_head=2, n_layer=2, d_ff=4, max_len=2 * N,
                                dropout=0.0, tie_embeddings=False)
    model = tc.DecoderLM(config).eval()
    sharp = 8.0  # scores of sharp**2 / sqrt(d_head) ~ 14: softmax puts ~1 on the matching key
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        for block in model.layers:
            block.norm_self = block.norm_ff = nn.Identity()
        model.norm = nn.Identity()
        tok, pos, prev, pred = 0, V, V + 2 * N, 2 * V + 2 * N
        for t in range(V):
            model.embed.tok.weight[t, tok + t] = 1.0
            model.head.weight[t, pred + t] = 10.0
        previous, induction = model.layers[0].self_attn, model.layers[1].self_attn
        for p in range(2 * N):
            model.embed.pos.weight[p, pos + p] = 1.0
            previous.w_q.weight[p, pos + p] = sharp
            if p + 1 < 2 * N:
                previous.w_k.weight[p + 1, pos + p] = sharp
        for t in range(V):
            previous.w_v.weight[t, tok + t] = 1.0
            previous.w_o.weight[prev + t, t] = 1.0
            induction.w_q.weight[t, tok + t] = sharp
            induction.w_k.weight[t, prev + t] = sharp
            induction.w_v.weight[t, tok + t] = 1.0
            induction.w_o.weight[pred + t, t] = 1.0
    return model


def test_induction_score_of_a_hand_built_induction_circuit():
    model = induction_circuit()
    half = torch.stack([torch.randperm(V, generator=torch.Generator().manual_seed(s)) for s in range(3)])
    roles = head_roles(model, torch.cat([half, half], dim=1))
    induction, previous = roles.scores["induction"]["decoder"], roles.scores["previous-token"]["decoder"]
    assert induction[1, 0] > 0.9
    assert induction.flatten().argmax() == 2  # layer 1 head 0, and no other head
    assert previous[0, 0] > 0.9 and previous.flatten().argmax() == 0
    labels = {(head, role) for head, role, _ in roles.labels()}
    assert (Head("decoder", 1, 0), "induction") in labels and (Head("decoder", 0, 0), "previous-token") in labels
    assert not any(role == "induction" and head.layer == 0 for head, role in labels)
    # the induction demo: the second half is predicted by copying, the first half is not
    assert roles.losses.shape == (2 * N - 1,)
    assert roles.losses[N:].mean() < 0.2 * roles.losses[: N - 1].mean()


def test_a_random_model_has_no_induction_head():
    model = random_models.lm(max_len=64)
    roles = head_roles(model, repeated_random_tokens(20, range(40), batch=4))
    assert roles.scores["induction"]["decoder"].max() < 0.4
    assert set(roles.scores) == {"previous-token", "first-token", "duplicate-token", "induction"}


@pytest.mark.parametrize("tokens, message", [
    (torch.tensor([[1, 2, 3, 1, 2, 4]]), "repeated twice"),
    (torch.tensor([[1, 2, 3, 1, 2]]), "repeated twice"),
    (repeated_random_tokens(40, range(40)), "exceed the model's context"),
])
def test_head_roles_refuse_sequences_that_are_not_a_repeat(tokens, message):
    with pytest.raises(HeadError, match=message):
        head_roles(random_models.lm(), tokens)


@pytest.mark.parametrize("text, group, expected", [
    ("L5 H11", "decoder", Head("decoder", 5, 11)),
    ("  l5h11 ", "encoder", Head("encoder", 5, 11)),  # any case, spaces optional
    ("cross L1 H0", "encoder", Head("cross", 1, 0)),  # a written group wins over the model's first
    ("Decoder L0 H2", "encoder", Head("decoder", 0, 2)),
])
def test_a_head_is_read_from_its_name_short_or_full(text, group, expected):
    assert Head.parse(text, group) == expected


@pytest.mark.parametrize("groups", [["decoder"], ["encoder"], ["encoder", "decoder", "cross"]])
def test_every_head_reads_back_from_the_name_it_prints(groups):
    heads = [Head(g, layer, h) for g in groups for layer in (0, 11) for h in (0, 7)]
    assert all(Head.parse(head.name(groups), groups[0]) == head for head in heads)
    assert all(Head.parse(str(head), "cross") == head for head in heads)  # the full name, whatever the default
    assert Head("decoder", 5, 11).name(["decoder"]) == "L5 H11" and str(Head("decoder", 5, 11)) == "decoder L5 H11"


@pytest.mark.parametrize("text", ["head five", "L5", "H11 L5", "L5 H11 H2", "middle L1 H0", "L-1 H0", ""])
def test_a_name_that_is_no_head_is_a_head_error(text):
    with pytest.raises(HeadError, match="not a head's name"):
        Head.parse(text, "decoder")


def test_the_lens_keeps_one_bfloat16_copy_of_a_small_float16_unembedding_while_it_lives(monkeypatch):
    """SmolLM2's unembedding is converted to bfloat16 once, not for every lens; a matrix over LENS_BF16_KEEP
    weights (Gemma's) or one that is not float16 (it may be trained in place) is never copied."""
    import gc

    from transformer_core.analysis import heads

    unembed = torch.randn(700, 16).half()
    copy = heads._bf16_copy(unembed)
    assert copy.dtype == torch.bfloat16 and torch.equal(copy, unembed.to(torch.bfloat16))
    assert heads._bf16_copy(unembed) is copy
    key = id(unembed)
    del unembed, copy
    gc.collect()
    assert key not in heads._BF16_COPIES  # dropped with its matrix
    trained = torch.randn(700, 16)
    assert heads._bf16_copy(trained) is trained
    monkeypatch.setattr(heads, "LENS_BF16_KEEP", 700 * 16 - 1)
    large = torch.randn(700, 16).half()
    assert heads._bf16_copy(large) is large
