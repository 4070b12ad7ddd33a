"""Attention runs: one traced pass, kept and re-sliced."""

import numpy as np
import pytest

import lab
from lab import policy, translate


def test_an_attention_run_is_computed_once_and_re_sliced(monkeypatch):
    run = lab.attention_run("shakespeare-lm", "To be, or not to be")
    calls = []
    monkeypatch.setattr(lab.attention, "_compute", lambda *a: calls.append(a))
    again = lab.attention_run("shakespeare-lm (language model)", "To be, or not to be")  # label or name
    assert again is run and calls == []
    notices = []
    layer, head, weights = run.head(99, -3, notices)
    assert (layer, head) == (run.shape[0] - 1, 0) and len(notices) == 2
    np.testing.assert_allclose(weights.sum(-1), 1, rtol=1e-5)


def test_attention_labels_are_the_tokens_and_each_model_attends_as_its_kind_allows():
    text = "The acting was wonderful."
    lm = lab.attention_run("shakespeare-lm", text)
    assert lm.q_labels == lm.k_labels == [t.text for t in lab.store.tokenizer("shakespeare-lm").tokens(text)]
    n = len(lm.q_labels)
    assert lm.group == "decoder" and lm.shape[2:] == (n, n) and lm.notice == ""
    future = np.triu(np.ones((n, n), dtype=bool), 1)
    assert np.all(lm.attn[..., future] == 0)  # a language model never reads ahead
    np.testing.assert_allclose(lm.attn.sum(-1), 1, rtol=1e-5)
    np.testing.assert_allclose(lm.rollout.sum(-1), 1, rtol=1e-5)

    classifier = lab.attention_run("sentiment (classifier)", text)
    assert classifier.group == "encoder" and classifier.q_labels == [
        t.text for t in lab.store.tokenizer("sentiment").tokens(text)]
    assert classifier.attn[..., np.triu(np.ones(classifier.shape[2:], dtype=bool), 1)].max() > 0.01  # both ways

    fallback = lab.attention_run("shakespeare-lm", text, "cross")
    assert "has no cross-attention" in fallback.notice and fallback.group == "decoder"
    np.testing.assert_array_equal(fallback.attn, lm.attn)
    with pytest.raises(policy.InputError, match="Type some text"):
        lab.attention_run("shakespeare-lm", "   ")


def test_every_offered_checkpoint_reads_its_own_example_text():
    offered = lab.models.choices()
    assert list(offered.values())[-1] == "gpt2" and len(offered) == len(lab.store.checkpoints()) + 1
    for label, name in list(offered.items())[:-1]:
        text = lab.attention.example_text(name)
        run = lab.attention_run(label, text)
        assert run.name == name and run.shape[2] > 1
        if lab.store.arch(name) == "EncoderDecoder":  # a translator gets a source of its own task
            assert run.notice.startswith("Translation: **")
            assert "".join(run.k_labels[:-1]).replace(" ", "") == text.replace(" ", "")
        else:
            assert run.notice == ""
    assert lab.attention.example_text("translate-copy-sinusoidal") == lab.attention.TRANSLATOR_EXAMPLES["copy"]
    assert lab.attention.example_text("translate-pig-latin") == lab.attention.TRANSLATOR_EXAMPLES["pig_latin"]


def test_attention_slices_clamp_the_query_and_leave_the_kept_run_alone(monkeypatch):
    run = lab.attention_run("shakespeare-lm", "To be, or not to be")
    n_layer, n_head, n = run.shape[:3]
    notices = []
    layer, head, weights = run.head(1, 2, notices)
    assert (layer, head) == (1, 2) and notices == []
    np.testing.assert_array_equal(weights, run.attn[1, 2])
    query, rows = run.query(999, notices)
    assert query == n - 1 and notices == [f"Query token can be 0 to {n - 1}; used {n - 1}."]
    np.testing.assert_array_equal(rows, run.attn[:, :, n - 1])
    with pytest.raises(policy.InputError, match="Layer must be a whole number"):
        run.head("top", 0)

    # a request whose text is cut shares the kept run, and its notice does not stick to that run
    monkeypatch.setattr(lab.attention, "MAX_DRAWN_TOKENS", 8)  # keeps the 5,000-character run small
    long = lab.attention_run("shakespeare-lm", "ab " * 2000 + "tail")
    assert "6,004 characters" in long.notice and "the first" in long.notice
    calls = []
    monkeypatch.setattr(lab.attention, "_compute", lambda *a: calls.append(a))
    exact = lab.attention_run("shakespeare-lm", ("ab " * 2000)[: policy.MAX_CHARS])  # what the long one read
    assert calls == [] and exact.attn is long.attn
    assert "characters" not in exact.notice  # only the kept run's own token notice


def test_translation_and_attention_read_a_spaced_digit_source_the_same_way():
    spaced = "1 2 3 4 5 6 7 8 9"
    run = translate.translation("reverse", spaced)
    assert (run.source, run.output, run.notice) == ("123456789", "987654321", "")
    for group in ("encoder", "decoder", "cross"):
        drawn = lab.attention_run("translate-reverse", spaced, group)
        np.testing.assert_array_equal(drawn.attn, run.attn[group])  # one reading: the same weights
        assert "Translation: **987654321**" in drawn.notice
    cross = lab.attention_run("translate-reverse (translator)", spaced, "cross")
    assert cross.k_labels == [*"123456789", "</s>"] and cross.q_labels == ["<s>", *"987654321"]
    assert cross.rollout is None  # no rollout through cross-attention
    with pytest.raises(policy.InputError, match="'x'"):
        lab.attention_run("translate-reverse", "1 2 x")


def test_the_sharpest_layer_is_where_each_task_shows_its_lesson():
    copy = translate.translation("copy", "31415926")
    reverse = translate.translation("reverse", "31415926")
    assert (copy.output, reverse.output) == ("31415926", "62951413")
    # the shipped models put their lesson in different layers: the choice must follow the weights
    assert (copy.sharpest_layer(), reverse.sharpest_layer()) == (0, 1)
    n = len(copy.source)
    diagonal = copy.attn["cross"][copy.sharpest_layer()].mean(0)[:n, :n].argmax(-1)
    anti = reverse.attn["cross"][reverse.sharpest_layer()].mean(0)[:n, :n].argmax(-1)
    np.testing.assert_array_equal(diagonal, np.arange(n))
    np.testing.assert_array_equal(anti, np.arange(n)[::-1])
    for auto in (translate.AUTO_LAYER, "-1", " -1 "):
        assert reverse.layer(auto) == 1
    notices = []
    assert reverse.layer(5, notices) == 1 and notices == ["Layer can be 0 to 1; used 1."]
    assert reverse.layer("0") == 0


def test_attention_while_generating_reads_the_end_of_a_long_prompt():
    """Issue 33 item 6: the prompt was cut to its first 5,000 characters before its last tokens were kept."""
    run = lab.while_generating_run("shakespeare-lm", "word " * 1205 + "THE END OF MY PROMPT", 3)
    assert "".join(run.labels[: run.n_prompt]).endswith("THE END OF MY PROMPT")
    assert "only the last 5,000 are used" in run.notice and "first" not in run.notice
