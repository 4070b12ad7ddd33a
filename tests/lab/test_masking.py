"""The Masking tab's use cases: masks, a model read under them, the cheating demo."""

import numpy as np
import pytest

import lab
from lab import policy


# ---------------------------------------------------------------- masking

TEXT = "To be, or not to be, that is the question"


def test_a_window_wider_than_the_text_is_narrowed_with_a_notice_everywhere_it_is_drawn():
    n = len(lab.store.tokenizer(lab.masking.LM).encode("To be or"))
    run = lab.masking_run("To be or", "To", "dilated_window", 16, 16, "0", True)
    assert f"Window width can be 1 to {n - 1}; used {n - 1}." in run.notice
    assert f"Dilation can be 1 to {n - 1}; used {n - 1}." in run.notice
    assert run.runs == ["causal (as trained)", f"dilated window w={n - 1}, dilation={n - 1}, causal"]
    titles = [title for title, _ in run.gallery]
    assert f"sliding window w={n - 1}" in titles and f"dilated window w={n - 1}, d={n - 1}" in titles
    quiet = lab.masking_run(TEXT, "To be", "sliding_window", 3, 2, "0", True)
    assert quiet.notice == ""  # in range: nothing to say


@pytest.mark.parametrize("kind", lab.masking.EFFECT_KINDS)
def test_each_mask_hides_exactly_what_it_says_and_changes_the_reading_accordingly(kind):
    from transformer_core import build_mask

    run = lab.masking_run(TEXT, "To be", kind, 2, 2, "0", True)
    n = len(run.labels)
    trained, chosen = run.runs
    allowed = build_mask(kind, n, w=2, dilation=2, global_tokens=[0], causal=True).allowed.numpy()
    assert np.all(run.attn[chosen][..., ~allowed] == 0)  # nothing where the mask hides
    np.testing.assert_allclose(run.attn[chosen].sum(-1), 1, rtol=1e-5)
    assert run.losses[chosen].shape == (n - 1,) and run.top_probs[chosen].shape == (n, lab.masking.TOP_K)
    if kind == "causal":  # the mask it was trained with: the very same reading
        np.testing.assert_array_equal(run.attn[chosen], run.attn[trained])
        np.testing.assert_array_equal(run.losses[chosen], run.losses[trained])
    else:
        assert not np.allclose(run.losses[chosen], run.losses[trained])
    if kind == "none":  # the only one of these that lets a token read ahead
        assert run.attn[chosen][..., np.triu(np.ones((n, n), dtype=bool), 1)].max() > 0.01


def test_the_gallery_and_bad_mask_settings():
    run = lab.masking_run(TEXT, "To be", "causal", 3, 2, "0, 4", False)
    n, n_b = len(run.labels), len(run.labels_b)
    masks = dict(run.gallery)
    assert len(run.gallery) == 7 and masks["padding"].allowed.shape == (2, n, n)
    assert masks["padding"].allowed[1, :, n_b:].sum() == 0  # the second text's padding is never read
    assert masks["global [0, 4] + window w=3"].allowed[:, 4].all()  # everyone reads a global token
    with pytest.raises(policy.InputError, match="Mask must be one of"):
        lab.masking_run(TEXT, "To be", "diagonal", 3, 2, "0", True)
    with pytest.raises(policy.InputError, match="positions like"):
        lab.masking_run(TEXT, "To be", "global_window", 3, 2, "zero", True)
    for empty in ("", None):
        with pytest.raises(policy.InputError, match="second text of the padding batch is empty"):
            lab.masking_run(TEXT, empty, "causal", 3, 2, "0", True)


def test_the_cheating_demo_shows_a_copier_that_cannot_predict():
    results, histories, notice = lab.cheating("To be, or not to be, that is", 0)
    assert notice == "New tokens can be 1 to 60; used 1."
    honest, copier = results
    assert (honest.title, copier.title) == tuple(lab.masking.CHEATERS)
    assert set(histories) == set(lab.masking.CHEATERS) and copier.final_train_loss == histories[copier.title][-1][
        "train_loss"]
    # trained with no mask it "learned" by reading the answer: tiny training loss, hopeless honest loss
    assert copier.final_train_loss < honest.final_train_loss and copier.honest_loss > honest.honest_loss
    assert all(len(r.continuation) > 0 for r in results)


def test_the_cheating_demo_reads_the_end_of_a_long_prompt(monkeypatch):
    """Issue 33 item 6: both cheaters continued after the middle of a 6,000-character prompt."""
    read = []
    real = lab.masking.greedy_with_mask
    monkeypatch.setattr(lab.masking, "greedy_with_mask", lambda model, ids, *a: read.append(ids) or real(model, ids, *a))
    _, _, notice = lab.cheating("word " * 1205 + "THE END OF MY PROMPT", 2)
    tokenizer = lab.store.tokenizer("cheat-causal")
    assert len(read) == 2 and all(tokenizer.decode(ids).endswith("THE END OF MY PROMPT") for ids in read)
    assert "only the last 5,000 are used" in notice and "first" not in notice


def test_chinese_text_is_read_by_the_poetry_lm_one_character_a_token_and_traditional_converted():
    run = lab.masking_run("床前明月光，疑是地上霜。舉頭望明月", "床前", "sliding_window", 4, 2, "0", True)
    assert run.labels == list("床前明月光，疑是地上霜。举头望明月")  # a character each, not bytes
    assert "Tang-poetry LM" in str(run.notice) and "converted to simplified" in str(run.notice)
    assert lab.masking.lm_for("To be, or not to be") == "shakespeare-lm"


def test_a_second_text_the_model_cannot_read_gives_way_to_the_first_half_of_the_text():
    # the tab's second text is English; a Chinese text goes to the Tang-poetry LM, which reads no Latin letter, and
    # the whole tab stopped on an error about a text the person never typed
    run = lab.masking_run("床前明月光，疑是地上霜。", "To be, or not", "none", 3, 2, "0", True)
    assert run.labels_b == list("床前明月光，")  # the batch pads the first half of the person's text
    assert "tang-poems-char cannot read the padding batch's second text" in str(run.notice)
