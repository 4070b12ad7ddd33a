"""What a head does, as use cases on the shipped checkpoints: find, switch off, read the layers, roles."""

import numpy as np
import pytest
import torch

import lab
from lab import heads
from lab.policy import InputError
from transformer_core import device_of

ANIMAL = "The animal didn't cross the street because it was too tired"
LINE = "ROMEO: But soft, what light through yonder window breaks?"


def test_find_head_re_slices_the_cached_attention_run_without_running_the_model(monkeypatch):
    run = lab.attention_run("sentiment-pretrained", ANIMAL)
    monkeypatch.setattr(lab.attention, "_compute", lambda *a: pytest.fail("the model ran again"))
    found = heads.find_head("sentiment-pretrained (classifier)", ANIMAL, "it", "animal")
    assert found.run is run and found.keys == [run.k_labels.index("animal")]
    np.testing.assert_allclose(found.weights, run.attn[:, :, found.query, found.keys].sum(-1))
    top, weight = found.ranked[0]
    assert weight == pytest.approx(found.weights.max()) and found.weights[top.layer, top.head] == weight


def test_the_pretrained_encoder_links_it_to_animal_through_one_last_layer_head():
    """The lecture step's finding: the ranking, not a written index, names the head."""
    found = heads.find_head("sentiment-pretrained", ANIMAL, "it", "animal")
    (top, weight), (_, second) = found.ranked[:2]
    assert (top.layer, top.head) == (5, 11) and weight > 0.8 > 0.1 > found.mean and weight > second + 0.2
    assert "L5 H11" in found.summary and "0.83" in found.summary


def test_tokens_are_named_by_word_pieces_or_position_and_a_missing_one_is_refused():
    labels = ["[CLS]", "ani", "##mal", "it", "Ġwas"]
    assert heads.positions(labels, "animal") == [1, 2]  # a word cut in pieces: every piece
    assert heads.positions(labels, "IT") == [3] and heads.positions(labels, "was") == [4]
    assert heads.positions(labels, " 2 ") == [2]
    # as a heatmap's axis names a token (a click on a cell fills the pickers so); a label of another token is not
    assert heads.positions(labels, "3: it") == [3] and heads.positions(labels, "2:##mal") == [2]
    assert heads.positions(labels, "4:") == [4] and heads.positions(["a", "3:30", "b"], "3:30") == [1]
    for bad in ("zebra", "9", "", None, "3: was", "9: it"):
        with pytest.raises(InputError):
            heads.positions(labels, bad)
    pasted = "a pasted paragraph " * 300  # 5,700 characters: the message quotes its start, not all of it
    with pytest.raises(InputError, match="a pasted paragraph a pasted") as refused:
        heads.positions(labels, pasted)
    assert len(str(refused.value)) < 400 and "…" in str(refused.value)


def test_heads_are_read_as_written_and_a_head_the_model_lacks_is_refused():
    assert [str(h) for h in heads.parse_heads("L5 H11, cross L1h0;l0 h2", ["encoder"])] == \
        ["cross L1 H0", "encoder L0 H2", "encoder L5 H11"]
    with pytest.raises(InputError, match="L5 H11"):
        heads.parse_heads("head five", ["encoder"])
    with pytest.raises(InputError):
        heads.switch_off("shakespeare-lm", LINE, "L9 H0")
    with pytest.raises(InputError):
        heads.switch_off("shakespeare-lm", LINE, "  ")
    with pytest.raises(InputError):
        heads.switch_off("shakespeare-lm", LINE, "L0 H0", "half")


def test_switching_off_the_head_that_matters_most_costs_what_the_importance_map_says():
    found = heads.importance("shakespeare-lm", LINE)
    name, damage = found.ranked[0]
    assert damage > 0.05 and found.damage["decoder"].shape == (6, 6)
    run = heads.switch_off("shakespeare-lm", LINE, name)
    assert run.before.losses.mean() == pytest.approx(found.baseline, abs=1e-4)
    assert run.after.losses.mean() - run.before.losses.mean() == pytest.approx(damage, abs=1e-4)
    assert len(run.before.top) == heads.TOP_K and run.before.top[0][1] >= run.before.top[-1][1]


def test_each_kind_of_model_says_what_changed_when_heads_are_off():
    classifier = heads.switch_off("sentiment-pretrained", ANIMAL, "L0 H0, L0 H1, L0 H2, L0 H3", "mean")
    assert sum(classifier.before.probs.values()) == pytest.approx(1)
    assert classifier.before.probs != classifier.after.probs
    importance = heads.importance("translate-reverse", "123456789")
    worst = importance.ranked[0][0]
    assert worst.split()[0] in ("encoder", "decoder", "cross")  # a translator's heads say their group
    translator = heads.switch_off("translate-reverse", "123456789", worst)
    assert translator.before.output == "987654321" and translator.after.logp < translator.before.logp - 1


def test_the_logit_lens_last_layer_is_the_models_own_prediction():
    run = heads.lens("shakespeare-lm", LINE)
    model, tokenizer = lab.store.load("shakespeare-lm")
    ids = torch.tensor([[t.id for t in tokenizer.tokens(LINE)]], device=device_of(model))
    with torch.no_grad():
        predicted = model(ids)[0].argmax(-1)
    assert run.guesses[-1] == [tokenizer.decode([int(i)]) for i in predicted]
    assert (run.final_rank[-1] == 0).all() and run.top_probs.shape == (7, len(run.labels))
    with pytest.raises(InputError, match="language model"):
        heads.lens("sentiment", "A fine film.")


def test_roles_say_plainly_that_the_small_lm_has_no_induction_head():
    lm = heads.roles("shakespeare-lm")
    assert not [label for label in lm.labels if label[1] == "induction"]
    assert "no induction head" in lm.summary and lm.losses.shape == (2 * lm.n - 1,)
    encoder = heads.roles("sentiment-pretrained")
    assert ("L0 H2", "previous-token") in [(h, r) for h, r, _ in encoder.labels]
    assert encoder.losses is None


def test_opening_the_switch_off_view_reads_the_text_once_and_names_the_top_head(monkeypatch):
    reads = []
    real = heads._read
    monkeypatch.setattr(heads, "_read", lambda *a: reads.append(a) or real(*a))
    view = heads.open_switch_off("shakespeare-lm", LINE, "", "zero")
    assert len(reads) == 1  # one trip through the core: the map, the top head switched off and the names
    assert view.heads == view.importance.ranked[0][0] == view.run.heads[0]
    assert view.names == heads.head_names("shakespeare-lm") and view.heads in view.names
    named = heads.open_switch_off("shakespeare-lm", LINE, "L0 H1, L2 H3", "mean")
    assert named.run.heads == ["L0 H1", "L2 H3"] and named.run.mode == "mean"


SEED_ZH = "这只动物没有过马路，因为它太累了。"


def test_a_word_inside_a_merged_piece_is_found_in_its_piece_and_said():
    """Issue 47: XLM-R's pieces merge 因为它 into one token; Find-head takes 它 and says which piece holds it."""
    assert heads.positions(["<s>", "▁这", "动物", ",", "因为它", "太", "</s>"], "它") == [4]
    found = heads.find_head("multilingual-e5", SEED_ZH, "它", "动物")
    assert found.run.q_labels[found.query] == "因为它" and [found.run.k_labels[k] for k in found.keys] == ["动物"]
    assert "“它” is inside the piece “因为它” (position 9)" in found.summary and "the ranking is for “因为它”" in found.summary
    whole = heads.find_head("multilingual-e5", SEED_ZH, "因为它", "动物")  # the piece itself: nothing to say
    assert "inside the piece" not in whole.summary and whole.ranked == found.ranked
    assert "merged" not in heads.find_head("multilingual-e5", SEED_ZH, "9", "动物").summary


def test_the_multilingual_encoder_links_it_to_animal_in_english():
    """The head the issue's probe found (layer 8, head 8, 0-based: 0.51 of "it" on "animal")."""
    found = heads.find_head("multilingual-e5 (pre-trained multilingual encoder)", ANIMAL, "it", "animal")
    top, weight = found.ranked[0]
    assert (top.layer, top.head) == (8, 8) and weight > 0.45 > 0.1 > found.mean


def test_switching_the_found_head_off_keeps_its_own_weight_and_moves_later_heads():
    """Issue 60: "does it stop linking to animal?" A head switched off keeps its pattern (only its output is
    removed), every earlier layer's weights stay, and the later layers, reading a stream without it, move."""
    run = heads.switch_off("sentiment-pretrained", ANIMAL, "L4 H11", "zero", "it", "animal")
    d = run.downstream
    found = heads.find_head("sentiment-pretrained", ANIMAL, "it", "animal")
    np.testing.assert_allclose(d.before, found.weights, atol=1e-5)  # every head on: the ranking's own weights
    np.testing.assert_allclose(d.after[:5], d.before[:5], atol=1e-5)  # layers 0-4, the switched-off head's own too
    assert np.abs(d.after[5] - d.before[5]).max() > 0.02  # the last layer reads a stream without it (L5 H11: 0.83 -> 0.79)
    assert d.off == [(4, 11)] and d.query == "it" and d.key == "animal"
    assert "removes its output, not its pattern" in run.notice and "L4 H11" in run.notice
    assert heads.switch_off("sentiment-pretrained", ANIMAL, "L4 H11").downstream is None  # no link named


def test_opening_switch_off_after_finding_a_head_switches_that_head_off():
    """The step after "which head links it to animal?" switches off the head it named, not another one."""
    view = heads.open_switch_off("sentiment-pretrained", ANIMAL, "", "zero", "it", "animal")
    assert view.heads == "L5 H11" == heads.find_head("sentiment-pretrained", ANIMAL, "it", "animal").names[0]
    assert view.run.downstream is not None and view.run.downstream.off == [(5, 11)]


def test_find_head_names_the_key_value_head_a_grouped_query_head_reads(modern_store):
    text = "The cat sat on the mat because it was tired."
    found = heads.find_head("tiny-llama", text, "it", "cat")  # 4 query heads over 2 key/value heads
    top = found.ranked[0][0]
    assert f"it reads key/value head {top.head // 2}, as H{top.head ^ 1} do" in found.summary
    gemma = heads.find_head("tiny-gemma", text, "it", "cat")  # 8 over 1; layer 0 sees a window of 5
    assert "reads key/value head 0" in gemma.summary
    local = heads.find_head("tiny-gemma", text, "it", "cat", "decoder")
    assert (local.ranked[0][0].layer == 0) == ("sliding-window layer" in local.summary)


def test_the_lens_says_from_which_layer_the_answer_stays_the_top_guess():
    """Issue 57: "at which layer the answer appears" ("The capital of France is" -> " Paris" in SmolLM2's last
    layer); here on the shipped LM, against the ranks the lens drew."""
    run = heads.lens("shakespeare-lm", LINE)
    ranks = run.final_rank[:, -1]
    first = max(i for i in range(len(ranks)) if i == 0 or ranks[i - 1] != 0)  # the top guess from here on
    assert (ranks[first:] == 0).all() and (first == 0 or ranks[first - 1] != 0)
    where = "the embedding" if first == 0 else f"layer {first - 1} on"
    assert where in run.notice and r"answer “\\n”" in run.notice  # the line ends: "\n", escaped for Markdown


def test_a_head_the_model_lacks_is_refused_in_the_readers_words():
    with pytest.raises(InputError) as refused:
        heads.switch_off("shakespeare-lm", LINE, "L0 H1, L9 H0")
    from i18n import render

    message = refused.value.args[0]
    assert "no head 'L9 H0'" in render(message, "en") and "L0 H0 to L5 H5" in render(message, "en")
    assert "模型没有头" in render(message, "zh-CN") and "has no" not in render(message, "zh-CN")
