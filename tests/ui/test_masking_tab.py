"""Masking tab: the gallery draws the masks the model applies; masks change a trained model as taught."""

import math
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
import torch

from transformer_core import DecoderLM, DecoderLMConfig, build_mask, load_model, save_checkpoint
from transformer_core.analysis.readouts import mean_loss, token_losses
from transformer_core.tokenization import TextTokenizer
from lab import masking as use
from lab import store
from figures import figures, grid_blocks
from ui import masking as tab
from views import masking as views
from views.kit import axis_text, grid_axes

ASSETS = Path(__file__).resolve().parents[2] / "assets"
BPE = ASSETS / "shakespeare-bpe" / "tokenizer.json"
TEXT = "To be, or not to be, that is the question"


@pytest.fixture(scope="module")
def stand_in_dir(tmp_path_factory):
    """A tiny random stand-in for the shipped LM (the handler's plumbing does not need a trained one)."""
    root = tmp_path_factory.mktemp("models")
    torch.manual_seed(0)
    bpe = TextTokenizer.load(BPE)
    config = DecoderLMConfig(vocab_size=bpe.vocab_size, d_model=32, n_head=4, n_layer=2, d_ff=64, max_len=96,
                             dropout=0.0)
    save_checkpoint(DecoderLM(config).eval(), root / use.LM, bpe)
    return root


@pytest.fixture
def model_dir(stand_in_dir):
    store.set_model_dir(stand_in_dir)
    yield stand_in_dir
    store.set_model_dir(store.DEFAULT_MODEL_DIR)


def test_each_gallery_matrix_is_the_mask_the_model_applied(model_dir):
    model, tokenizer = store.model(use.LM), store.tokenizer(use.LM)
    ids, ids_b = tokenizer.encode(TEXT), tokenizer.encode("To be, or not")
    n = len(ids)
    settings = use.settings("none", n, 2, 2, "0 3", False, [])
    masks = use.gallery_masks(n, [n, len(ids_b)], settings)
    figure = views.mask_gallery(views.gallery_panels(masks, [str(i) for i in ids], [str(i) for i in ids_b]))
    drawn = iter(figure.data)
    for title, mask in masks:
        batch = [ids, ids_b + [0] * (n - len(ids_b))] if mask.allowed.dim() == 3 else [ids]
        _, trace = model.run_with_trace(torch.tensor(batch), mask=mask)
        applied = trace.masks["decoder"].allowed
        for row in applied if applied.dim() == 3 else [applied]:
            np.testing.assert_array_equal(next(drawn).z, row.numpy().astype(np.int8), err_msg=title)
    assert next(drawn, None) is None  # nothing drawn that the model did not apply


def test_handler_compares_causal_with_the_chosen_mask(model_dir):
    notice, gallery, attention, loss, top, position = figures(tab.masking(TEXT, "To be", "sliding_window", 2, 2, "0",
                                                                         True, 1, 3, 4))
    assert notice == ""  # nothing was cut or clamped
    n = len(store.tokenizer(use.LM).encode(TEXT))
    assert position == gr.update(maximum=n - 1)  # the slider spans the text's tokens; 4 fits
    assert len(loss.data) == 2 and len(top.data) == 2
    window = grid_blocks(attention.data[0].z, 1, 2)[0, 1]  # the two runs side by side: causal, then the chosen mask
    assert np.all(window[~build_mask("sliding_window", n, w=2, causal=True).allowed.numpy()] == 0)
    assert all(len(trace.y) == n - 1 for trace in loss.data)
    # the axes name the tokens, as one head's figure does: the queries on the left, each panel's keys below it
    tokens = list(axis_text(use.masking_run(TEXT, "To be", "sliding_window", 2, 2, "0", True).labels))
    assert list(attention.layout.yaxis.ticktext) == tokens and attention.layout.yaxis.showticklabels
    assert list(attention.layout.xaxis.ticktext) == tokens * 2
    # the top-5 title names the position apart from its token (it read "after '4:,'", as if that were the token)
    label = use.masking_run(TEXT, "To be", "sliding_window", 2, 2, "0", True).labels[4]
    assert top.layout.title.text == f"Top next-token guesses after token 4 ({label!r})"


def test_the_top_5_title_names_token_and_position_in_the_pages_language(model_dir):
    poem = "床前明月光，疑是地上霜。"
    *_, top, _ = figures(tab.masking(poem, "To be", "causal", 3, 2, "0", True, 0, 0, 5, lang="zh-CN"))
    label = use.masking_run(poem, "To be", "causal", 3, 2, "0", True).labels[5]
    assert top.layout.title.text == f"词元 5（{label!r}）之后下一个词元的前几名猜测"


def test_long_text_is_cut_with_a_notice(model_dir):
    notice, gallery, attention, *_ = figures(tab.masking(TEXT * 20, "To be", "none", 3, 2, "0", True, 0, 0, 0))
    assert f"the first {use.MAX_TOKENS} are used" in notice
    assert np.asarray(gallery.data[0].z).shape == (use.MAX_TOKENS, use.MAX_TOKENS)
    # 64 rows in 180 px: every 6th token named on the left (15 px a label), every 4th below each panel (40 in all)
    assert len(attention.layout.yaxis.ticktext) == 11 and len(attention.layout.xaxis.ticktext) == 32


def test_a_position_past_the_text_moves_to_its_last_token_on_the_slider_too(model_dir):
    n = len(store.tokenizer(use.LM).encode("To be or"))
    notice, *_, position = figures(tab.masking("To be or", "To", "causal", 3, 2, "0", True, 0, 0, 40))
    assert f"can be 0 to {n - 1}; used {n - 1}." in notice
    assert position == gr.update(maximum=max(1, n - 1), value=n - 1)


def test_an_empty_second_text_is_named_in_the_message(model_dir):
    with pytest.raises(gr.Error, match="second text of the padding batch is empty"):
        tab.masking(TEXT, "", "causal", 3, 2, "0", True, 0, 0, 0)


@pytest.mark.parametrize("text, w, global_tokens, message", [
    ("", 3, "0", "no tokens"),
    ("To", 3, "0", "type at least 2"),
    (TEXT, 3, "zero", "positions like"),
    (TEXT, 3, "99", "must lie in"),
    (TEXT, 3, "<img src=x>", "&lt;img src=x&gt;"),  # the person's own text comes back escaped
])
def test_bad_input_gives_a_clear_message(model_dir, text, w, global_tokens, message):
    with pytest.raises(gr.Error, match=message):
        tab.masking(text, "To be", "sliding_window", w, 2, global_tokens, True, 0, 0, 0)


@pytest.mark.parametrize("kind", ["none", "sliding_window"])
def test_a_window_wider_than_the_text_is_narrowed_with_a_notice(model_dir, kind):
    n = len(store.tokenizer(use.LM).encode("To be or"))
    notice, gallery, attention, *_ = figures(tab.masking("To be or", "To", kind, 16, 2, "0", True, 0, 0, 0))
    assert f"Window width can be 1 to {n - 1}; used {n - 1}." in notice
    assert grid_blocks(attention.data[0].z, 1, 2).shape[:2] == (1, 2)


@pytest.mark.parametrize("w", [0, None, -4])
def test_a_window_below_one_is_raised_to_one_with_a_notice(model_dir, w):
    notice, *_ = figures(tab.masking(TEXT, "To be", "sliding_window", w, 2, "0", True, 0, 0, 0))
    assert "Window width" in notice and "used 1." in notice


def test_moving_a_view_slider_re_slices_the_run_instead_of_running_the_model(model_dir, monkeypatch):
    args = (TEXT, "To be", "causal", 3, 2, "0", True)
    first = figures(tab.masking(*args, 0, 0, 0))
    calls = []
    monkeypatch.setattr(use, "_compute", lambda *a: calls.append(a))
    moved = figures(tab.masking(*args, 1, 3, 5))  # another layer, head and position: the same run
    assert calls == [] and moved[2].layout.title.text != first[2].layout.title.text


def test_per_token_loss_is_next_token_cross_entropy():
    logits, ids = torch.randn(6, 11), torch.randint(0, 11, (6,))
    loss = token_losses(logits, ids)
    assert loss.shape == (5,)
    torch.testing.assert_close(loss.mean(), torch.nn.functional.cross_entropy(logits[:-1], ids[1:]))


@pytest.mark.parametrize("name, text", [
    ("shakespeare-lm", tab.FRIENDS),  # measured: 4.16 -> 5.85 nats/token
    ("cheat-causal", TEXT),  # measured: 4.58 -> 5.11 (its context is 16 tokens)
])
@torch.no_grad()
def test_a_causal_model_gets_worse_when_it_may_look_ahead(name, text):
    model, bpe = load_model(ASSETS / name), TextTokenizer.load(BPE)
    ids = torch.tensor([bpe.encode(text)])
    n = ids.shape[1]
    causal = mean_loss(model, ids[0].tolist())
    look_ahead = token_losses(model(ids, mask=build_mask("none", n))[0], ids[0]).mean()
    assert causal < 0.6 * math.log(bpe.vocab_size)  # trained weights: far better than a uniform guess
    assert look_ahead > causal + 0.25


def test_mean_loss_needs_two_tokens():
    with pytest.raises(ValueError, match="at least two tokens"):
        mean_loss(load_model(ASSETS / "cheat-causal"), [5])


@torch.no_grad()
def test_the_model_trained_without_a_mask_copies_the_answer_and_cannot_predict_it():
    cheat, honest = load_model(ASSETS / "cheat-nomask"), load_model(ASSETS / "cheat-causal")
    bpe = TextTokenizer.load(BPE)
    ids = bpe.encode(tab.FRIENDS)[: cheat.config.max_len]  # the validation play: never trained on
    peeking = token_losses(cheat(torch.tensor([ids]), mask=build_mask("none", len(ids)))[0], torch.tensor(ids))
    assert peeking.mean() < 0.1  # it reads each next token from its input
    # made to predict (the causal mask), it does worse than a uniform guess; the honest model does far better
    assert mean_loss(cheat, ids) > math.log(bpe.vocab_size) > mean_loss(honest, ids)


@pytest.mark.parametrize("name", ["cheat-causal", "cheat-nomask"])
def test_cheating_demo_checkpoints_are_tiny(name):
    assert sum(f.stat().st_size for f in (ASSETS / name).iterdir()) < 2_000_000


@pytest.fixture
def shipped_store():
    """The store reading assets/, emptied afterwards so no loaded model leaks into other tests."""
    store.set_model_dir(store.DEFAULT_MODEL_DIR)
    yield
    store.set_model_dir(store.DEFAULT_MODEL_DIR)


def test_cheating_demo_shows_both_loss_curves_and_continuations(shipped_store):
    text, curves = figures(tab.cheating(tab.FRIENDS, 10))  # 28 tokens: longer than the tiny models' context
    assert "trained with the causal mask" in text and "trained with no mask" in text
    assert len(curves.data) == 4  # training and validation loss of each model
    nomask_train = next(t for t in curves.data if t.name == "trained with no mask: training")
    assert min(nomask_train.y) < 1.0


def test_a_long_texts_gallery_has_no_gaps_and_its_loss_axis_names_every_kth_token_without_markers():
    short, long = (["t"] * n for n in (views.GAP_TOKENS, views.GAP_TOKENS + 1))
    masks = [("causal", build_mask("causal", len(short))), ("causal", build_mask("causal", len(long)))]
    gapped, plain = views.mask_gallery([views.gallery_panels([m], labels, labels)[0]
                                        for m, labels in zip(masks, (short, long))]).data
    assert (gapped.xgap, gapped.ygap) == (1, 1) and not plain.xgap and not plain.ygap  # its cells under 5 px
    loss = views.loss_figure({"causal": np.ones(127)}, ["t"] * 128)
    assert len(loss.layout.xaxis.tickvals) <= views.MAX_TICKS and loss.data[0].mode == "lines"
    assert views.loss_figure({"causal": np.ones(9)}, ["t"] * 10).data[0].mode == "lines+markers"


def test_a_gallery_rows_titles_stand_between_the_rows_not_over_the_row_above():
    labels = ["t"] * 8
    masks = [(f"causal sliding window {k}", build_mask("causal", 8)) for k in range(8)]
    figure = views.mask_gallery(views.gallery_panels(masks, labels, labels))
    lines = max(a["text"].count("<br>") + 1 for a in figure.layout["annotations"])
    assert lines == 3
    above, below = figure.layout["yaxis"]["domain"], figure.layout["yaxis5"]["domain"]  # panels 1 and 5: a column
    plot_px = figure.layout["height"] - 80
    assert (above[0] - below[1]) * plot_px >= 15 * lines  # the lower row's titles fit under the upper row


def test_each_gallery_row_makes_room_for_its_own_titles_only():
    labels = ["t"] * 8
    masks = [("none", build_mask("none", 8))] * 4 + [("causal sliding window w=3", build_mask("causal", 8))] * 4
    figure = views.mask_gallery(views.gallery_panels(masks, labels, labels))
    lines = [a["text"].count("<br>") + 1 for a in figure.layout["annotations"]]
    assert lines[0] == 1 and lines[4] >= 3
    plot_px = figure.layout["height"] - 80
    tops = [figure.layout[name]["domain"][1] for name in ("yaxis", "yaxis5")]
    # the first row gives up one line's room, not the three lines of the row under it
    grid_top = grid_axes(2, 4, 0, 0, gap=0.04)[2]["domain"][1]
    assert (grid_top - tops[0]) * plot_px == pytest.approx(15)
    above = figure.layout["yaxis"]["domain"][0]
    assert (above - tops[1]) * plot_px >= 15 * lines[4]  # the lower row's titles still fit under the upper row
