"""The one input policy: how much text, which numbers, what the person is told."""

import pytest

import lab
from lab import policy, sentiment


def test_the_policy_cuts_and_clamps_with_notices_and_refuses_what_it_cannot_read():
    text, notice = policy.truncate("a" * 6000)
    assert len(text) == policy.MAX_CHARS and "6,000 characters" in notice
    notices = []
    assert policy.clamp(9, 0, 3, "Head", notices) == 3 and notices == ["Head can be 0 to 3; used 3."]
    assert policy.clamp("2", 0, 3, "Head") == 2
    with pytest.raises(policy.InputError, match="whole number"):
        policy.clamp("two", 0, 3, "Head")


def test_the_policy_repairs_lone_surrogates_and_says_how_many():
    text, notice = policy.truncate("a\ud800b\udfffc")
    assert text == "a\ufffdb\ufffdc" and text.encode("utf-8")  # encodable now
    assert "2 lone surrogate(s)" in notice
    assert policy.truncate("clean text") == ("clean text", "")
    text, notice = policy.truncate("\ud800" + "x" * 5000)  # repaired and cut: both said
    assert len(text) == policy.MAX_CHARS and "1 lone surrogate(s)" in notice and "5,001 characters" in notice
    run = lab.attention_run("shakespeare-lm", "Hi \udc80 there")  # a use case reads the repaired text
    assert "1 lone surrogate(s)" in run.notice
    repaired = "Hi \ufffd there"
    assert run.q_labels == policy.labelled(repaired, lab.store.tokenizer("shakespeare-lm").tokens(repaired))[0]


def test_the_policy_clamps_every_kind_of_number_and_says_what_it_used():
    notices = []
    assert policy.clamp(None, 1, 9, "Width", notices) == 1
    assert policy.clamp("", 1, 9, "Width", notices) == 1
    assert policy.clamp(float("inf"), 1, 9, "Width", notices) == 9
    assert policy.clamp(-float("inf"), 1, 9, "Width", notices) == 1
    assert policy.clamp(2.6, 1, 9, "Width", notices) == 3  # a fraction is rounded, and that is said too
    assert notices == ["Width was empty; used 1.", "Width was empty; used 1.", "Width can be 1 to 9; used 9.",
                       "Width can be 1 to 9; used 1.", "Width can be 1 to 9; used 3."]
    quiet = []
    assert policy.clamp("4", 1, 9, "Width", quiet) == 4 and policy.clamp(5.0, 1, 9, "Width", quiet) == 5
    assert quiet == []  # nothing changed, nothing said
    with pytest.raises(policy.InputError, match="Width must be a whole number from 1 to 9"):
        policy.clamp(float("nan"), 1, 9, "Width")


def test_the_policy_keeps_the_first_or_last_tokens_and_refuses_text_the_tokenizer_cannot_represent():
    bpe = lab.store.tokenizer("shakespeare-lm")
    ids = bpe.encode("one two three four five six")
    first, last = (policy.fit_tokens(bpe, "one two three four five six", 3, keep=k) for k in ("first", "last"))
    assert first.ids == ids[:3] and "the first 3 are used" in first.notice
    assert last.ids == ids[-3:] and "the last 3 are used" in last.notice
    assert last.labels == [bpe.decode([i]) for i in ids[-3:]]
    assert policy.fit_tokens(bpe, "one two", 3).notice == ""
    with pytest.raises(policy.InputError, match="type at least 2"):
        policy.fit_tokens(bpe, "one", 5, min_tokens=2)
    digits = lab.store.tokenizer("translate-copy")  # an alphabet of digits
    with pytest.raises(policy.InputError, match="cannot represent any of this text"):
        policy.fit_tokens(digits, "hello", 10)
    assert policy.fit_tokens(digits, "h3llo", 10).ids  # one known token is enough to draw


def test_a_long_prompt_keeps_its_end_through_both_cuts_and_one_notice_says_so():
    """Issue 33 item 6: characters and tokens both keep the end of a prompt, and the notices agree."""
    tokenizer = lab.store.tokenizer("shakespeare-lm")
    prompt = "word " * 1205 + "THE END OF MY PROMPT"  # 6,045 characters: longer than MAX_CHARS
    tokens = policy.prompt_tokens(tokenizer, prompt, 64)
    assert tokenizer.decode(tokens.ids).endswith("THE END OF MY PROMPT")
    assert "only the last 5,000 are used" in tokens.notice and "the last 64 are used" in tokens.notice
    assert "first" not in tokens.notice


def test_a_wordpiece_model_says_it_cannot_read_a_text_of_unknown_or_invisible_characters():
    """Issue 33 item 8: [CLS] and [SEP] around a row of [UNK]s no longer pass for a readable text."""
    tokenizer = lab.store.tokenizer("sentiment-pretrained")
    assert [s.text for s in tokenizer.tokens("很喜欢")] == ["[CLS]", "[UNK]", "[UNK]", "[UNK]", "[SEP]"]
    with pytest.raises(policy.InputError, match="cannot represent any of this text"):
        policy.fit_tokens(tokenizer, "很喜欢", 64)
    with pytest.raises(policy.InputError, match="6 of its 8 tokens would be"):
        policy.check_readable(tokenizer, tokenizer.tokens("我很喜欢这部电影"), max_unknown=0.5)
    for invisible in ("\u200b", "\u0301"):
        with pytest.raises(policy.InputError, match="reads no token"):
            policy.fit_tokens(tokenizer, invisible, 64)


SEED_ZH = "这只动物没有过马路，因为它太累了。"


def test_byte_fragments_are_labelled_with_their_character_and_said_in_a_notice():
    run = lab.attention_run("shakespeare-lm", "它 is tired")
    assert run.q_labels[:3] == ["它 (3 bytes)"] * 3 and run.q_labels[3] == " is"
    assert "splits 1 character(s) into bytes" in str(run.notice)
    from i18n import render
    assert render(run.q_labels[0], "zh-CN") == "它 (3 字节)"
    assert lab.attention_run("tang-poems-char", SEED_ZH).notice == ""  # one token per character: nothing split


def test_english_only_classifiers_refuse_chinese_in_one_line():
    for name in ("sentiment", "sentiment-pretrained"):
        with pytest.raises(policy.InputError, match="cannot read this text"):
            sentiment.classify(SEED_ZH, name)
    assert sentiment.classify("The film was wonderful 😀", "sentiment").probs  # one emoji is no reason to refuse
