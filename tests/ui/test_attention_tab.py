"""Attention tab: figures show exactly the trace's weights, rollout is a proper flow, handlers never crash."""

import base64
import io

import gradio as gr
import numpy as np
import pytest
import torch
from PIL import Image

from transformer_core import (
    DecoderLM,
    DecoderLMConfig,
    EncoderClassifier,
    EncoderClassifierConfig,
    EncoderDecoder,
    EncoderDecoderConfig,
    generate,
    save_checkpoint,
)
from transformer_core.analysis.readouts import attention_rollout, attention_while_generating
from transformer_core.decoding.seq2seq import Translation, char_tokenizer
from transformer_core.tokenization import TextTokenizer
from lab import attention as use
from lab import store, translate
from lab.policy import MAX_DRAWN_TOKENS
from figures import figures, grid_blocks
from ui import attention as tab
from views import attention as views

BPE = "assets/shakespeare-bpe/tokenizer.json"
SMALL = dict(d_model=32, n_head=4, n_layer=3, d_ff=64, max_len=160, dropout=0.0)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """One tiny random checkpoint of each kind, plus a folder that is not a checkpoint."""
    root = tmp_path_factory.mktemp("models")
    torch.manual_seed(0)
    bpe = TextTokenizer.load(BPE)
    save_checkpoint(DecoderLM(DecoderLMConfig(vocab_size=bpe.vocab_size, **SMALL)).eval(), root / "lm", bpe)
    save_checkpoint(EncoderClassifier(EncoderClassifierConfig(vocab_size=bpe.vocab_size, **SMALL)).eval(),
                    root / "sentiment", bpe)
    chars = char_tokenizer("abcdefghijklmnopqrstuvwxyz ")
    save_checkpoint(EncoderDecoder(EncoderDecoderConfig(src_vocab_size=chars.vocab_size,
                                                        tgt_vocab_size=chars.vocab_size,
                                                        **{**SMALL, "max_len": 24})).eval(),
                    root / "translate-test", chars)
    (root / "some-tokenizer").mkdir()
    store.set_model_dir(root)
    yield root
    store.set_model_dir(store.DEFAULT_MODEL_DIR)


def label_of(name):
    return next(label for label, folder in tab.checkpoints().items() if folder == name)


def test_only_real_checkpoints_are_offered(model_dir):
    assert sorted(store.checkpoints().values()) == ["lm", "sentiment", "translate-test"]
    assert list(tab.checkpoints().values())[-1] == "gpt2"  # offered too, downloaded on first use


def test_grid_is_one_heatmap_whose_blocks_are_each_heads_weights_to_three_decimals():
    attn = torch.softmax(torch.randn(3, 4, 5, 5), -1)
    labels = ["a", "b", "a", "c", "d"]
    fig = views.layer_head_grid(attn, labels, labels)
    (trace,) = fig.data
    blocks = grid_blocks(trace.z, 3, 4)  # (3, 4, 5, 5), the blank rows and columns between them dropped
    np.testing.assert_allclose(blocks, attn.numpy(), atol=5e-4)
    assert np.isnan(np.asarray(trace.z)[5]).all() and np.isnan(np.asarray(trace.z)[:, 5]).all()  # the gaps
    assert list(trace.x[:5]) == ["H0 0:a", "H0 1:b", "H0 2:a", "H0 3:c", "H0 4:d"]  # repeated 'a' stays apart
    assert list(trace.y[6:11]) == ["L1 0:a", "L1 1:b", "L1 2:a", "L1 3:c", "L1 4:d"]
    assert len(set(trace.x)) == len(trace.x) and "%{z:.3f}" in trace.hovertemplate


def test_a_grid_too_large_to_hover_is_an_image_whose_pixels_are_each_heads_weights_in_colour_steps():
    torch.manual_seed(0)
    attn = torch.softmax(3 * torch.randn(3, 4, 128, 128), -1)
    fig = views.layer_head_grid(attn, ["t"] * 128, ["t"] * 128)
    (image, _), layout = fig.data, fig.layout
    png = base64.b64decode(image.source.split(",", 1)[1])
    decoded = Image.open(io.BytesIO(png))
    pixels = np.array(decoded)
    assert decoded.mode == "P" and decoded.getpalette()[:len(views.PALETTE)] == views.PALETTE
    assert pixels.shape == (3 * 130 - 2, 4 * 130 - 2) and (pixels[128:130] == views.WHITE).all()  # 2-pixel gaps
    padded = np.pad(pixels, ((0, 2), (0, 2)), constant_values=views.WHITE)  # a gap after the last block too
    blocks = padded.reshape(3, 130, 4, 130)[:, :128, :, :128].transpose(0, 2, 1, 3)  # (3, 4, 128, 128)
    steps = np.sqrt(attn.numpy().astype(np.float64)) * (views.IMAGE_LEVELS - 1)
    assert np.abs(blocks - steps).max() <= 0.5 + 1e-6  # each weight's nearest step on the square-root scale
    assert layout.xaxis.ticktext == ["H0", "H1", "H2", "H3"] and layout.yaxis.ticktext == ["L0", "L1", "L2"]
    # packed run-length: smaller than zlib's default search (here 32 kB against 36 kB), which takes 4-10x the time
    default, same = io.BytesIO(), Image.fromarray(pixels, mode="P")
    same.putpalette(views.PALETTE)
    same.save(default, format="PNG", compress_level=6)
    assert len(png) < len(default.getvalue())


def test_a_grid_image_over_its_pixel_budget_keeps_each_2x2_blocks_largest_weight_and_says_so():
    # 12 x 12 heads of 128 tokens (the multilingual encoder's grid): 2.4 M pixels whole, over IMAGE_PIXELS
    torch.manual_seed(0)
    attn = torch.softmax(torch.randn(12, 12, 128, 128), -1)
    attn[5, 7] = torch.eye(128)  # a head that reads only its own token: a one-pixel diagonal
    fig = views.layer_head_grid(attn, ["t"] * 128, ["t"] * 128)
    pixels = np.array(Image.open(io.BytesIO(base64.b64decode(fig.data[0].source.split(",", 1)[1]))))
    assert pixels.shape == (12 * 66 - 2, 12 * 66 - 2)
    blocks = np.pad(pixels, ((0, 2), (0, 2))).reshape(12, 66, 12, 66)[:, :64, :, :64].transpose(0, 2, 1, 3)
    largest = attn.reshape(12, 12, 64, 2, 64, 2).amax(dim=(3, 5)).numpy().astype(np.float64)
    assert np.abs(blocks - np.sqrt(largest) * (views.IMAGE_LEVELS - 1)).max() <= 0.5 + 1e-6
    assert (np.diag(blocks[5, 7]) == views.IMAGE_LEVELS - 1).all()  # the diagonal keeps its full weight
    assert "largest of 2×2 weights" in fig.layout.title["text"]
    # 6 x 6 heads of 128 tokens (the Shakespeare LM's) stay whole, one pixel a weight
    whole = views.layer_head_grid(attn[:6, :6], ["t"] * 128, ["t"] * 128)
    assert np.array(Image.open(io.BytesIO(base64.b64decode(whole.data[0].source.split(",", 1)[1])))).shape == (778, 778)
    assert "largest" not in whole.layout.title["text"]


def test_selected_head_has_token_labels_on_both_axes():
    attn = torch.softmax(torch.randn(2, 4), -1)
    fig = views.head_heatmap(attn, ["q0", "q1"], ["k0", "k1", "k2", "k3"], "L0 H0")
    np.testing.assert_allclose(fig.data[0].z, attn.numpy(), atol=5e-4)  # to the 3 decimals the hover shows
    assert list(fig.layout.xaxis.ticktext) == ["k0", "k1", "k2", "k3"]
    assert list(fig.layout.yaxis.ticktext) == ["q0", "q1"]
    assert "→" in fig.data[0].hovertemplate


def test_query_rows_show_one_query_in_every_layer_and_head():
    attn = torch.softmax(torch.randn(3, 4, 6, 6), -1)
    fig = views.query_rows_heatmap(attn[:, :, 2], list("abcdef"), "query 2")
    np.testing.assert_allclose(fig.data[0].z, attn[:, :, 2].reshape(12, 6).numpy(), atol=5e-4)
    assert list(fig.data[0].y)[:2] == ["L0 H0", "L0 H1"]


def test_rollout_rows_sum_to_one_and_follow_the_formula():
    attn = torch.softmax(torch.randn(4, 3, 7, 7), -1).masked_fill(~torch.ones(7, 7).tril().bool(), 0)
    attn = attn / attn.sum(-1, keepdim=True)
    rollout = attention_rollout(attn)
    torch.testing.assert_close(rollout.sum(-1), torch.ones(4, 7))
    first = attn[0].mean(0) + torch.eye(7)
    torch.testing.assert_close(rollout[0], first / first.sum(-1, keepdim=True))
    assert torch.all(rollout[-1].triu(1) == 0)  # causal attention never rolls information backwards


def test_attention_while_generating_matches_one_full_pass(model_dir):
    model = store.model("lm")
    prompt = TextTokenizer.load(BPE).encode("To be, or not to be")
    gen = attention_while_generating(model, prompt, 6)
    assert gen.generated == generate(model, prompt, 6)
    _, trace = model.run_with_trace(torch.tensor([gen.ids[:-1]]))
    full = trace.attention("decoder")[:, 0]  # (n_layer, n_head, T, T)
    for s, row in enumerate(gen.rows):
        query = len(prompt) - 1 + s  # the position whose logits chose token s
        torch.testing.assert_close(row, full[:, :, query, : query + 1], atol=1e-5, rtol=1e-4)


def test_language_model_handler_draws_every_figure_and_says_how_many_tokens(model_dir):
    notice, grid, head, average, rows, rollout, query = figures(tab.attention(label_of("lm"),
                                                                      "To be, or not to be " * 40, "decoder", 1, 2, 3))
    assert f"the first {MAX_DRAWN_TOKENS} are used" in notice
    run = use.attention_run("lm", "To be, or not to be " * 40, "decoder")
    assert run.attn.shape == (SMALL["n_layer"], SMALL["n_head"], MAX_DRAWN_TOKENS, MAX_DRAWN_TOKENS)
    # 128 tokens: the thumbnails travel as one image; the selected head stays a heatmap with the weights
    assert grid.data[0].type == "image"
    np.testing.assert_allclose(np.asarray(head.data[0].z), run.attn[1, 2], atol=5e-4)
    np.testing.assert_allclose(np.asarray(rollout.data[0].z), run.rollout, atol=5e-4)
    assert query == gr.update(maximum=MAX_DRAWN_TOKENS - 1)  # the value fits: only the end is sent


def test_the_query_slider_spans_the_runs_queries_in_the_same_answer(model_dir):
    """The answer sizes the query slider to the text drawn: it ends at the last query, a position past the text's
    end moves there (as the figures' notice says), one that fits stays; a translator's queries are its decoder's."""
    text = "To be, or not to be"
    *_, query = tab.attention(label_of("lm"), text, "decoder", 0, 0, 99)
    n = use.attention_run("lm", text, "decoder").attn.shape[2]
    assert 3 < n < MAX_DRAWN_TOKENS
    assert query == gr.update(maximum=n - 1, value=n - 1)
    *_, query = tab.attention(label_of("lm"), text, "decoder", 0, 0, 2)
    assert query == gr.update(maximum=n - 1)  # a position that fits stays: only the end is sent
    *_, query = tab.attention(label_of("lm"), text, "decoder", 0, 0, None)  # an API client's null: the first drawn
    assert query == gr.update(maximum=n - 1, value=0)
    *_, query = tab.attention(label_of("translate-test"), "abc", "cross", 0, 0, 50)
    n = use.attention_run("translate-test", "abc", "cross").attn.shape[2]
    assert query["maximum"] == max(1, n - 1)


def test_classifier_handler_shows_bidirectional_self_attention(model_dir):
    _, grid, *_ = figures(tab.attention(label_of("sentiment"), "A fine film, really.", "encoder", 0, 0, 0))
    z = grid_blocks(grid.data[0].z, SMALL["n_layer"], SMALL["n_head"])[0, 0]
    assert np.all(z[np.triu_indices(len(z), 1)] > 0)  # no mask: queries read later tokens too


@pytest.mark.parametrize("group", ["encoder", "decoder", "cross"])
def test_translator_handler_shows_each_attention(model_dir, group):
    notice, grid, *_, rollout, _ = figures(tab.attention(label_of("translate-test"), "hello", group, 0, 0, 0))
    z = grid_blocks(grid.data[0].z, SMALL["n_layer"], SMALL["n_head"])[0, 0]
    target = len(notice.split("**")[1]) + 1  # <s> + the written characters
    expected = {"encoder": (6, 6), "decoder": (target, target), "cross": (target, 6)}[group]  # 'hello' + </s>
    assert z.shape == expected
    keys = list(grid.data[0].x)  # labels are HTML-escaped for plotly
    if group == "decoder":
        assert keys[0] == "H0 0:&lt;s&gt;"
    else:
        assert keys[0] == "H0 0:h" and keys[-1] == "H3 5:&lt;/s&gt;"
    assert bool(rollout.layout.annotations) == (group == "cross")  # rollout only explains self-attention


def test_generation_handler_draws_the_staircase(model_dir):
    text, staircase, step, slider = figures(tab.attention_generate(label_of("lm"), "To be, or not", 5, 0, 1, 2))
    assert "Continuation" in text
    assert slider == gr.update(maximum=4)  # the step slider spans the 5 tokens generated
    *_, slider = tab.attention_generate(label_of("lm"), "To be, or not", 5, 0, 1, 9)
    assert slider == gr.update(maximum=4, value=4)  # a step past them moves to the last
    z = np.asarray(staircase.data[0].z, dtype=float)
    assert z.shape[0] == 5 and np.isnan(z[0, -1]) and not np.isnan(z[-1, -1])
    np.testing.assert_allclose(np.nansum(z, axis=1), 1.0, atol=5e-4 * z.shape[1])  # each weight to 3 decimals


@pytest.mark.parametrize("call", [
    lambda: tab.attention(label_of("lm"), "   ", "decoder", 0, 0, 0),
    lambda: tab.attention("no such model", "hello", "decoder", 0, 0, 0),
    lambda: tab.attention(label_of("translate-test"), "HELLO!", "cross", 0, 0, 0),
    lambda: tab.attention_generate(label_of("sentiment"), "hello", 5, 0, 0, 0),
])
def test_bad_input_gives_a_message_not_a_traceback(model_dir, call):
    with pytest.raises(gr.Error):
        call()


def test_an_attention_the_model_lacks_falls_back_with_a_notice(model_dir):
    notice, grid, *_ = figures(tab.attention(label_of("lm"), "To be, or not", "cross", 0, 0, 0))
    assert "has no cross-attention" in notice and "decoder masked self-attention" in notice
    assert grid_blocks(grid.data[0].z, SMALL["n_layer"], SMALL["n_head"]).shape[:2] == (SMALL["n_layer"], SMALL["n_head"])


def test_token_labels_are_shown_as_text_not_html():
    fig = views.head_heatmap(torch.eye(2), ["<s>", "a&b"], ["<s>", "</s>"])
    assert list(fig.layout.xaxis.ticktext) == ["&lt;s&gt;", "&lt;/s&gt;"]
    assert list(fig.data[0].y) == ["0:&lt;s&gt;", "1:a&amp;b"]


def test_a_translation_longer_than_the_decoder_reads_is_cut_with_a_notice(model_dir, monkeypatch):
    endless = Translation(ids=[store.tokenizer("translate-test").token_to_id("a")] * 50, beam=None)
    monkeypatch.setattr(translate, "translate", lambda *args: endless)  # the run Translate and heads share
    notice, grid, *_ = figures(tab.attention(label_of("translate-test"), "hello", "decoder", 0, 0, 0))
    assert "has 50 tokens; the first 23 are shown" in notice  # max_len 24 = <s> + 23
    assert grid_blocks(grid.data[0].z, SMALL["n_layer"], SMALL["n_head"]).shape[2:] == (24, 24)


@pytest.mark.parametrize("n_row", [2, 40])  # the heatmap grid and the image grid (a large model's)
def test_a_grid_title_of_three_lines_is_drawn_from_the_top_with_room_for_each_line(n_row):
    """Gemma's grid title has three lines (sizes, shared key/value heads, sliding-window layers): centred in the
    margin, as plotly draws a title, its last line ran into the column names."""
    from views.attention import layer_head_grid

    attn = np.full((n_row, 4, 3, 3), 1 / 3, dtype=np.float32)
    one = layer_head_grid(attn, list("abc"), list("abc"), "sizes")
    three = layer_head_grid(attn, list("abc"), list("abc"), "sizes<br>shared heads<br>window layers")
    assert three.layout.margin.t - one.layout.margin.t == 44
    assert (three.layout.title.yref, three.layout.title.yanchor, three.layout.title.y) == ("container", "top", 1)


@pytest.mark.parametrize("tokens", [4, 128])  # a hoverable heatmap, and a grid too large for one: an image
def test_a_grouped_query_heads_name_has_its_key_value_head_under_it_and_its_hover_names_both_on_a_line(tokens):
    attn = torch.softmax(torch.randn(2, 4, tokens, tokens, generator=torch.Generator().manual_seed(0)), -1).numpy()
    labels = [f"t{i}" for i in range(tokens)]
    run = use.AttentionRun("llm", "decoder", attn, labels, labels, "", None, group_size=2)
    grid = views.figures(run, 0, 0, 0)[0]
    if tokens == 4:
        names = [a["text"] for a in grid.layout["annotations"] if a.get("textangle") != 90]
        assert "H1 kv0 0:t0" in list(grid.data[0]["x"])
    else:
        names = list(grid.layout["xaxis"]["ticktext"])
        assert grid.layout["xaxis"]["tickangle"] == 0  # never turned: two turned lines read as neither
    assert names == ["H0<br>kv0", "H1<br>kv0", "H2<br>kv1", "H3<br>kv1"]


def test_picking_a_model_shows_an_attention_it_has(model_dir):
    """Issue 60, finding 11: after an encoder was picked, Attention kept "decoder masked self-attention", and every
    answer began with a notice that the model has none."""
    assert tab.group_for(label_of("sentiment"), "decoder") == "encoder"
    assert tab.group_for(label_of("lm"), "encoder") == "decoder"
    skipped = gr.skip()
    assert tab.group_for(label_of("lm"), "decoder") == skipped  # the one shown stays
    assert tab.group_for(label_of("translate-test"), "cross") == skipped
    assert tab.group_for("no such model", "decoder") == skipped  # said when it is run
