"""The Concepts use cases."""

import pytest
import torch

import lab
from i18n import render
from lab import concepts, policy


def test_concepts_use_case_checks_numbers_before_computing():
    with pytest.raises(policy.InputError, match="d must be a number"):
        concepts.scaling(float("nan"), 16, 0)
    points, chosen = concepts.scaling(64, 16, 0)
    assert chosen.d == 64 and len(points) > 1


def test_the_weighted_average_is_softmax_of_dot_products_then_a_weighted_sum():
    plain = concepts.weighted_average("1 0\n0 1\n1 1", False, "", "", "", False)
    x = torch.tensor([[1.0, 0], [0, 1], [1, 1]])
    torch.testing.assert_close(plain.attn, torch.softmax(x @ x.T, -1))
    torch.testing.assert_close(plain.y, plain.attn @ x)
    w_q, w_k, w_v = "1 0\n0 2", "0 1\n1 0", "1 1\n0 1"
    projected = concepts.weighted_average("1 0\n0 1\n1 1", True, w_q, w_k, w_v, True)
    q, k, v = (x @ torch.tensor(m) for m in ([[1.0, 0], [0, 2]], [[0.0, 1], [1, 0]], [[1.0, 1], [0, 1]]))
    torch.testing.assert_close(projected.attn, torch.softmax(q @ k.T / 2**0.5, -1))
    torch.testing.assert_close(projected.y, projected.attn @ v)
    with pytest.raises(policy.InputError, match="W_q needs 2 rows"):
        concepts.weighted_average("1 0\n0 1", True, "1 0 0", w_k, w_v, False)
    with pytest.raises(policy.InputError, match="at most 8 short rows"):
        concepts.weighted_average("1 " * 2000, False, "", "", "", False)


def test_word_order_is_invisible_without_positions_and_visible_with_them():
    summary, variants, labels, names = concepts.order("the film was not good at all", 0)
    assert "the shipped `sentiment` classifier" in summary and names == ["negative", "positive"]
    none, learned = variants
    assert (none.name, learned.name) == ("no positions", "with positions")
    assert none.mismatch.max() < 1e-4 and torch.allclose(none.probs, none.probs_shuffled, atol=1e-5)
    assert learned.mismatch.max() > 0.1 and not torch.allclose(learned.probs, learned.probs_shuffled, atol=1e-5)
    shuffled = summary.split("**")[1].split()
    assert [label.strip() for label in labels] == shuffled  # one token per word here, in the shuffled order
    with pytest.raises(policy.InputError, match="2 to 40 words"):
        concepts.order("alone", 0)



def test_a_chinese_sentence_is_shuffled_character_by_character_by_the_chinese_classifier():
    # it was counted as one "word" (no spaces) and refused: "Type a sentence of 2 to 40 words; got 1"
    summary, variants, labels, _ = concepts.order("这只动物没有过马路，因为它太累了。", 0)
    assert "the shipped `sentiment-zh` classifier" in summary
    shuffled = summary.split("**")[1]
    assert sorted(shuffled) == sorted("这只动物没有过马路，因为它太累了。") and " " not in shuffled
    assert "".join(labels) == shuffled  # a token per character here, in the shuffled order
    none, learned = variants
    assert none.mismatch.max() < 1e-4 and learned.mismatch.max() > 0.1

def test_positions_and_parameter_counts_come_from_the_shipped_models():
    import transformer_core as tc

    (sinusoidal, similarity), (title, learned, _), note = concepts.positions(16, 8)
    # the model named as a person names it, in the page's language (it read "shakespeare-lm")
    assert note == "" and title.startswith("learned positions of Shakespeare LM, trained from scratch (first 16 of")
    assert render(title, "zh-CN").startswith("莎士比亚语言模型（从零训练）的")
    torch.testing.assert_close(sinusoidal, tc.sinusoidal_encoding(16, 8))
    torch.testing.assert_close(similarity, sinusoidal @ sinusoidal.T)
    torch.testing.assert_close(learned, lab.store.model("shakespeare-lm").embed.pos.weight[:16].detach().cpu())
    counts, tables, problems = concepts.parameters(64)
    assert len({c.total for c in counts}) == 1 and problems == []  # more heads, the same parameters
    assert sorted(tables) == concepts.shipped_models() == sorted(lab.store.checkpoints(include_cheats=True).values())
    for name in ("shakespeare-lm", "translate-copy"):
        assert sum(row.params for row in tables[name]) == sum(p.numel() for p in lab.store.model(name).parameters())


def test_the_trace_follows_a_row_and_position_inside_the_batch_only():
    run, row, position = concepts.trace("1 2 3\n4 3 2", "2 3\n1 4", 0.1, 0, 1, 1)
    assert (row, position) == (1, 1) and run.targets.shape == (2, 2) and run.label_smoothing == 0.1
    with pytest.raises(policy.InputError, match="position to follow must be a number from 0 to 1"):
        concepts.trace("1 2 3\n4 3 2", "2 3\n1 4", 0.1, 0, 1, 2)
    with pytest.raises(policy.InputError, match="label smoothing must be a number from 0 to 0.5"):
        concepts.trace("1 2 3\n4 3 2", "2 3\n1 4", 0.9, 0)
