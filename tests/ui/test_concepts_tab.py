"""The Concepts tab shows each textbook idea correctly: displayed numbers equal direct computations."""

import math
import shutil

import gradio as gr
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import transformer_core as tc
from transformer_core.analysis import concepts as core
from transformer_core.tokenization import TextTokenizer
from lab import concepts as use
from ui import concepts as tab
from lab import store
from views import concepts as views

SMALL = dict(d_model=32, n_head=4, n_layer=2, d_ff=64, max_len=64, dropout=0.0)
BPE = store.DEFAULT_MODEL_DIR / "shakespeare-bpe" / "tokenizer.json"


@pytest.fixture
def model_dir(tmp_path):
    """An empty checkpoint folder holding only the BPE tokenizer; the store reads from it during the test."""
    (tmp_path / "shakespeare-bpe").mkdir()
    shutil.copy(BPE, tmp_path / "shakespeare-bpe" / "tokenizer.json")
    before = store.model_dir()
    store.set_model_dir(tmp_path)
    yield tmp_path
    store.set_model_dir(before)


# 1. self-attention is a weighted average ---------------------------------------------------

def test_parameter_free_weights_are_softmax_of_dot_products_and_outputs_weighted_averages():
    x = core.parse_matrix("2 0\n0 1\n1 1", "X")
    wa = core.self_attention_average(x)
    attn = torch.softmax(x @ x.T, dim=-1)
    assert torch.allclose(wa.scores, x @ x.T, atol=1e-5)
    assert torch.allclose(wa.attn, attn, atol=1e-6)
    assert torch.allclose(wa.y, attn @ x, atol=1e-6)
    # what the tab displays: the heatmap's cells and the output table
    assert torch.allclose(torch.tensor(views.weights_figure(wa).data[0].z), attn, atol=5e-4)  # 3 decimals, as hovered
    shown = [row[1:] for row in views.matrix_rows(wa.y, views.vector_labels(3, "y"))]
    assert torch.allclose(torch.tensor(shown), attn @ x, atol=1e-4)
    assert "0.867·v1" in views.weighted_sums(wa)  # softmax([4, 0, 2]) = 0.867, 0.016, 0.117


def test_projected_and_scaled_attention_match_the_formula():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 3, generator=g)
    w_q, w_k, w_v = (torch.randn(3, 3, generator=g) for _ in range(3))
    wa = core.self_attention_average(x, w_q, w_k, w_v, scaled=True)
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    attn = torch.softmax(q @ k.T / math.sqrt(3), dim=-1)
    assert torch.allclose(wa.attn, attn, atol=1e-6)
    assert torch.allclose(wa.y, attn @ v, atol=1e-5)


@pytest.mark.parametrize("text, problem", [("", "empty"), ("1 2\n3", "same number"), ("1 x", "not a number"),
                                           ("\n".join(["1"] * 9), "at most"), ("1e9 0", "at most 1000")])
def test_malformed_vectors_are_refused_with_the_reason(text, problem):
    with pytest.raises(core.ConceptInputError, match=problem):
        core.parse_matrix(text, "X")
    with pytest.raises(gr.Error):
        tab.weighted_average(text, False, "", "", "", False)


def test_projection_of_the_wrong_size_is_refused():
    with pytest.raises(gr.Error, match="W_q needs 2 rows"):
        tab.weighted_average("1 0\n0 1", True, "1 0 0", "1 0\n0 1", "1 0\n0 1", False)


# 2. why divide by √d -------------------------------------------------------------------------

def test_unscaled_max_weight_grows_with_d_while_scaled_stays_bounded():
    points = {p.d: p for p in core.scaling_sweep((4, 64, 1024), n_keys=16, n_queries=512)}
    raw = {d: p.max_weight["unscaled"].mean().item() for d, p in points.items()}
    scaled = {d: p.max_weight["scaled"].mean().item() for d, p in points.items()}
    assert raw[4] < raw[64] < raw[1024] and raw[1024] > 0.9
    assert max(scaled.values()) - min(scaled.values()) < 0.05  # the same distribution at every d
    # saturation kills the gradient: at d=1024 the raw softmax passes far less of it
    assert points[1024].grad_norm["unscaled"].mean() < 0.3 * points[1024].grad_norm["scaled"].mean()


def test_scaling_table_rows_equal_a_direct_computation():
    point = core.scaling_point(256, n_keys=8, n_queries=32)
    scores = point.q @ point.k.T
    for key, s in (("scaled", scores / 16), ("unscaled", scores)):
        p = torch.softmax(s, dim=-1)
        assert torch.allclose(point.attn[key], p, atol=1e-5)
        jacobian = torch.autograd.functional.jacobian(lambda z: torch.softmax(z, -1), s[0])
        assert math.isclose(point.grad_norm[key][0].item(), jacobian.norm().item(), rel_tol=1e-4, abs_tol=1e-7)
    row = views.scaling_rows([point])[0]
    assert row[1] == pytest.approx(torch.softmax(scores / 16, -1).max(-1).values.mean().item(), abs=1e-4)
    assert row[2] == pytest.approx(torch.softmax(scores, -1).max(-1).values.mean().item(), abs=1e-4)


# 3. attention ignores order -----------------------------------------------------------------

def test_shuffling_words_moves_their_tokens_as_blocks():
    assert core.token_permutation([2, 1, 3], [2, 0, 1]) == [3, 4, 5, 0, 1, 2]
    with pytest.raises(core.ConceptInputError):
        core.token_permutation([2, 1], [0, 0])
    order = core.shuffled_order(5, seed=3)
    assert sorted(order) == list(range(5)) and order != list(range(5))


def test_without_positions_outputs_are_permuted_and_verdict_unchanged_with_positions_they_differ():
    model = tc.EncoderClassifier(tc.EncoderClassifierConfig(vocab_size=50, **SMALL)).eval()
    ids, perm = [5, 9, 13, 21, 34, 2], [3, 4, 5, 0, 1, 2]
    none, learned = core.order_experiment(model, ids, perm)
    assert none.name == "no positions" and learned.name == "with positions"
    assert none.mismatch.max() < 1e-5 and torch.allclose(none.probs, none.probs_shuffled, atol=1e-6)
    assert learned.mismatch.min() > 1e-2
    # the "no positions" model is the same class with positions="none" and otherwise the same weights
    twin = core.without_positions(model)
    assert twin.config.positions == "none" and torch.equal(twin.embed.tok.weight, model.embed.tok.weight)
    x = torch.tensor([ids])
    assert torch.allclose(learned.probs, model(x).softmax(-1)[0], atol=1e-6)
    assert torch.allclose(none.h_shuffled, twin.encode(x[:, perm])[0], atol=1e-6)


def test_order_tab_uses_the_shipped_classifier_when_present(model_dir):
    note, _, verdicts = tab.order(tab.SENTENCE_DEFAULT, 0)
    assert "untrained" in note
    model = tc.EncoderClassifier(tc.EncoderClassifierConfig(vocab_size=4096, **SMALL)).eval()
    tc.save_checkpoint(model, model_dir / "sentiment", TextTokenizer.load(BPE))
    note, fig, verdicts = tab.order(tab.SENTENCE_DEFAULT, 0)
    assert "shipped" in note and list(verdicts.columns[3:5]) == ["P(negative)", "P(positive)"]
    none = verdicts[verdicts.model == "no positions"]
    assert none["P(positive)"].nunique() == 1 and max(fig.data[0].y) < 1e-4  # bars of "no positions": zero
    tok = store.tokenizer("sentiment")
    ids = torch.tensor([[i for w in tab.SENTENCE_DEFAULT.split() for i in tok.encode(" " + w)]])
    original = verdicts[(verdicts.model == "with positions") & (verdicts.sentence == "original")]
    assert original["P(positive)"].item() == pytest.approx(model(ids).softmax(-1)[0, 1].item(), abs=1e-4)
    with pytest.raises(gr.Error, match="2 to"):
        tab.order("word", 0)


# 4. positions --------------------------------------------------------------------------------

def test_sinusoidal_similarity_depends_only_on_the_offset():
    pe = core.sinusoidal_positions(32, 16)
    assert torch.equal(pe, tc.sinusoidal_encoding(32, 16))
    sim = core.position_similarity(pe)
    assert torch.allclose(sim, pe @ pe.T)
    for offset in (0, 1, 5):
        diagonal = torch.diagonal(sim, offset)
        assert torch.allclose(diagonal, diagonal[0].expand_as(diagonal), atol=1e-4)
    with pytest.raises(core.ConceptInputError):
        core.sinusoidal_positions(8, 7)


def test_learned_positions_are_the_models_own_table():
    translate = tc.EncoderDecoder(tc.EncoderDecoderConfig(src_vocab_size=30, tgt_vocab_size=25, **SMALL))
    assert torch.equal(core.learned_positions(translate, 10), translate.src_embed.pos.weight[:10])
    sinusoidal = tc.DecoderLM(tc.DecoderLMConfig(vocab_size=40, **{**SMALL, "positions": "sinusoidal"}))
    assert core.learned_positions(sinusoidal) is None


def test_learned_positions_come_from_the_shipped_lm_or_say_they_are_missing(model_dir):
    _, learned_fig, note = tab.positions(16, 8)
    assert "not available yet" in note and learned_fig.data == ()
    other = tc.DecoderLM(tc.DecoderLMConfig(vocab_size=40, **SMALL)).eval()
    tc.save_checkpoint(other, model_dir / "other-lm")
    _, learned_fig, note = tab.positions(16, 8)
    assert "instead" in note and torch.allclose(torch.tensor(learned_fig.data[0].z), other.embed.pos.weight[:16])
    lm = tc.DecoderLM(tc.DecoderLMConfig(vocab_size=40, **SMALL)).eval()
    tc.save_checkpoint(lm, model_dir / use.LM_NAME)
    sin_fig, learned_fig, note = tab.positions(16, 8)
    assert note == ""
    assert torch.allclose(torch.tensor(learned_fig.data[0].z), lm.embed.pos.weight[:16], atol=1e-6)
    assert torch.allclose(torch.tensor(sin_fig.data[0].z), tc.sinusoidal_encoding(16, 8), atol=1e-6)


# 5. multi-head costs nothing extra ---------------------------------------------------------------

def test_heads_do_not_change_the_parameter_count():
    counts = core.head_parameter_counts(64)
    assert [c.n_head for c in counts] == [1, 2, 4, 8]
    assert {(c.qkv, c.out, c.total) for c in counts} == {(3 * (64 * 64 + 64), 64 * 64 + 64, 4 * (64 * 64 + 64))}
    with pytest.raises(core.ConceptInputError):
        core.head_parameter_counts(12)


@pytest.mark.parametrize("make", [
    lambda: tc.DecoderLM(tc.DecoderLMConfig(vocab_size=40, **SMALL)),
    lambda: tc.EncoderClassifier(tc.EncoderClassifierConfig(vocab_size=40, **SMALL)),
    lambda: tc.EncoderDecoder(tc.EncoderDecoderConfig(src_vocab_size=30, tgt_vocab_size=25, **SMALL)),
])
def test_parameter_table_totals_equal_sum_of_numel(make):
    model = make()
    table = core.parameter_table(model)
    assert sum(c.params for c in table) == sum(p.numel() for p in model.parameters())
    assert views.parameter_rows("m", table)[-1][2] == sum(p.numel() for p in model.parameters())


def test_parameter_tab_lists_every_shipped_checkpoint(model_dir):
    lm = tc.DecoderLM(tc.DecoderLMConfig(vocab_size=40, **SMALL))
    tc.save_checkpoint(lm, model_dir / "tiny-lm")
    _, heads, models, note = tab.parameters(128)
    assert set(heads["total = sum(p.numel())"]) == {4 * (128 * 128 + 128)}
    total = models[models.component == "tiny-lm: TOTAL"]["parameters"].item()
    assert total == sum(p.numel() for p in lm.parameters())
    head = models[models.component == "tiny-lm: head"]
    assert head["parameters"].item() == 0 and "embed.tok.weight" in head["note"].item()  # tied, counted once


# 6. tracing the tensors --------------------------------------------------------------------------

SRC, TGT = torch.tensor([[1, 2, 3], [4, 3, 2]]), torch.tensor([[2, 3], [1, 4]])
EXPECTED_SHAPES = {
    "src_embed": (2, 3, 8), "encoder.0.self_attn.q": (2, 2, 3, 4), "encoder.0.self_attn.scores": (2, 2, 3, 3),
    "encoder.0.self_attn.attn": (2, 2, 3, 3), "encoder.0.self_attn.weighted": (2, 2, 3, 4),
    "encoder.0.self_attn.concat": (2, 3, 8), "encoder.0.ff.hidden": (2, 3, 32), "tgt_embed": (2, 2, 8),
    "decoder.0.self_attn.scores": (2, 2, 2, 2), "decoder.0.cross_attn.scores": (2, 2, 2, 3),
    "decoder.0.cross_attn.attn": (2, 2, 2, 3), "logits": (2, 2, 5), "loss": (2, 2), "loss_smoothed": (2, 2),
}


def test_traced_shapes_follow_the_textbook_list_in_order():
    run = core.trace_encoder_decoder(core.tiny_encoder_decoder(), SRC, TGT, 0.1)
    shapes = {s.name: s.shape for s in run.steps}
    assert {name: shapes[name] for name in EXPECTED_SHAPES} == EXPECTED_SHAPES
    names = [s.name for s in run.steps]
    order = ["src_embed", "encoder.0.self_attn.scores", "encoder.0.ff.hidden", "decoder.0.self_attn.scores",
             "decoder.0.cross_attn.scores", "logits", "loss", "loss_smoothed"]
    assert [names.index(n) for n in order] == sorted(names.index(n) for n in order)


def test_traced_values_equal_direct_computations():
    model = core.tiny_encoder_decoder(seed=3)
    run = core.trace_encoder_decoder(model, SRC, TGT, 0.2)
    v = {s.name: s.values for s in run.steps}
    enc = "encoder.0.self_attn"
    scores = v[f"{enc}.q"] @ v[f"{enc}.k"].transpose(-1, -2) / 2  # √d_head = √4
    assert torch.allclose(v[f"{enc}.scores"], scores, atol=1e-5)
    assert torch.allclose(v[f"{enc}.attn"], scores.softmax(-1), atol=1e-5)
    assert torch.allclose(v[f"{enc}.weighted"], v[f"{enc}.attn"] @ v[f"{enc}.v"], atol=1e-5)
    assert torch.allclose(v[f"{enc}.concat"], v[f"{enc}.weighted"].transpose(1, 2).reshape(2, 3, 8))
    future = torch.triu(torch.ones(2, 2, dtype=torch.bool), diagonal=1)
    assert (v["decoder.0.self_attn.attn"][..., future] == 0).all()  # masked: no peeking at the next token
    assert torch.equal(run.decoder_input, torch.tensor([[0, 2], [0, 1]]))  # BOS, then targets shifted right
    logits = model(SRC, run.decoder_input)
    assert torch.allclose(v["logits"], logits, atol=1e-5)
    log_p = logits.log_softmax(-1)
    ce = -log_p.gather(-1, TGT[..., None])[..., 0]
    assert torch.allclose(run.loss, ce, atol=1e-5)
    assert torch.allclose(run.loss_smoothed, 0.8 * ce + 0.2 * -log_p.mean(-1), atol=1e-5)
    shown = torch.tensor([row[4:] for row in views.loss_rows(run)]).view(2, 2, 3)
    assert torch.allclose(shown, torch.stack([ce.exp().reciprocal(), ce, run.loss_smoothed], -1), atol=1e-4)


def test_seeded_models_do_not_depend_on_the_global_random_state():
    first = core.tiny_encoder_decoder(seed=5)
    torch.manual_seed(123)
    torch.randn(1000)
    second = core.tiny_encoder_decoder(seed=5)
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), second.state_dict().values()))
    assert not torch.equal(core.tiny_encoder_decoder(seed=6).src_embed.tok.weight, first.src_embed.tok.weight)


def test_trace_tab_shows_every_step_and_refuses_bad_ids():
    steps, losses, followed, values = tab.trace(tab.SRC_DEFAULT, tab.TGT_DEFAULT, 0.0, 0, 1, 1)
    assert list(steps["tensor"])[-3:] == ["logits", "loss", "loss_smoothed"]
    assert (losses["cross-entropy"] == losses["cross-entropy, smoothed"]).all()  # smoothing 0: the same loss
    assert values.count("# ") == len(steps) and "[batch 1, head 1]" in values
    last = losses.iloc[-1]  # batch row 1, position 1: the token followed step by step
    assert f"**{last['cross-entropy']:.4f}**" in followed and f"p(target) = {last['p(target)']:.4f}" in followed
    with pytest.raises(gr.Error, match="position to follow"):
        tab.trace(tab.SRC_DEFAULT, tab.TGT_DEFAULT, 0.0, 0, 0, 2)
    for src, tgt, problem in (("1 2 5\n1 2 3", "1 1\n1 1", "0..4"), ("1 2 3", "1 1\n1 1", "same batch size"),
                              ("1 2.5 3\n1 2 3", "1 1\n1 1", "whole numbers")):
        with pytest.raises(gr.Error, match=problem):
            tab.trace(src, tgt, 0.1, 0)


def test_app_registers_the_concepts_tab_with_its_endpoints():
    import app

    assert tab in app.TABS
    names = {fn.api_name for fn in app.build_app().fns.values()}
    assert {"concepts_trace", "concepts_order", "concepts_parameters"} <= names


# every control: bad input gives a message, never a traceback ------------------------------------

WEIRD_TEXT = st.one_of(st.just(""), st.just("   \n\t"), st.text(max_size=60), st.just("1 2\n" * 30_000),
                       st.just("🙂 ١٢ \x00 1e999"), st.just(None))
WEIRD_NUMBER = st.one_of(st.just(None), st.just(float("nan")), st.just(float("inf")), st.just(-1), st.just(10**30),
                         st.just("abc"), st.integers(-5, 2000), st.floats(-1, 2))


def _answers_or_explains(fn, *args):
    try:
        fn(*args)
    except gr.Error:
        pass


@settings(max_examples=25, deadline=None)
@given(WEIRD_TEXT, WEIRD_TEXT, WEIRD_NUMBER, WEIRD_NUMBER)
def test_handlers_never_raise_anything_but_a_message(text, other, number, seed):
    _answers_or_explains(tab.weighted_average, text, True, other, text, other, False)
    _answers_or_explains(tab.trace, text, other, number, seed, number, seed)
    _answers_or_explains(tab.scaling, number, 16, seed)
    _answers_or_explains(tab.positions, number, seed)
    _answers_or_explains(tab.parameters, number)


@settings(max_examples=10, deadline=None)
@given(WEIRD_TEXT, WEIRD_NUMBER)
def test_order_handler_never_raises_anything_but_a_message(sentence, seed):
    _answers_or_explains(tab.order, sentence, seed)
