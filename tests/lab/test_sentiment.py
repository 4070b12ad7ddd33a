"""The sentiment use case: a verdict and the tokens that drove it."""

import pytest

import lab
from lab import policy, sentiment


def test_sentiment_use_case_reads_the_same_text_the_same_way_and_links_to_its_attention():
    run = sentiment.classify("A moving, beautifully acted film.", "sentiment")
    assert set(run.probs) == {"negative", "positive"} and len(run.labels) == len(run.shares)
    assert "model=sentiment+%28classifier%29" in sentiment.attention_link(run)
    with pytest.raises(policy.InputError):
        sentiment.classify("   ")


# ---------------------------------------------------------------- sentiment

SPECIAL = {"[CLS]", "[SEP]"}


def strongest(run, sign: int, k: int = 3) -> set[str]:
    """The k word tokens (specials left out) pushing hardest toward positive (sign 1) or negative (-1)."""
    scored = [(sign * float(g), label.strip())
              for label, g in zip(run.labels, run.shares) if label not in SPECIAL]
    return {word for _, word in sorted(scored, reverse=True)[:k]}


@pytest.mark.parametrize("text, verdict, sign, words", [
    ("A dull, boring and badly written mess.", "negative", -1, {"dull", "boring", "badly", "mess"}),
    ("A wonderful, moving and beautifully acted film.", "positive", 1, {"wonderful", "moving", "beautifully"})])
def test_both_classifiers_give_a_verdict_and_the_tokens_that_drove_it(text, verdict, sign, words):
    runs = [run for _, run in sentiment.compare(text)]
    assert [r.name for r in runs] == ["sentiment", "sentiment-pretrained"]  # picker order
    for run in runs:
        assert max(run.probs, key=run.probs.get) == verdict and sum(run.probs.values()) == pytest.approx(1)
        assert run.labels == [t.text for t in lab.store.tokenizer(run.name).tokens(text)]
        assert len(run.shares) == len(run.rollout) == len(run.labels) == run.attn.shape[-1]
        assert strongest(run, sign) & words, (run.name, run.labels, run.shares)
        assert run.read_text == text and run.notice == ""
    assert sentiment.classify(text, "English movie reviews, pre-trained + fine-tuned (22.6M)") is runs[1]  # label or name: one run
    assert "model=sentiment-pretrained+%28classifier%29" in sentiment.attention_link(runs[1])


def test_sentiment_says_what_it_cut_and_when_there_are_no_words():
    # one sentence (no end, under 500 characters) is read whole, and cut at the model's 128 tokens
    long = sentiment.classify(" ".join(["good,"] * 80), "sentiment")
    assert long.document is None
    assert "160 tokens; the model reads at most 128" in long.notice and len(long.labels) == 128
    assert long.read_text == " ".join(["good,"] * 64)  # the part the link hands to the Attention tab
    emoji = sentiment.classify("👍🎉!!!", "sentiment-pretrained")
    assert "no letters or digits" in emoji.notice
    with pytest.raises(policy.InputError, match="No classifier 'sentiment-huge'"):
        sentiment.classify("fine", "sentiment-huge")


def test_only_installed_classifiers_are_offered_and_compared(tmp_path):
    (tmp_path / "sentiment").symlink_to(lab.store.DEFAULT_MODEL_DIR / "sentiment", target_is_directory=True)
    lab.store.set_model_dir(tmp_path)
    try:
        assert sentiment.classifiers() == {"English movie reviews, trained from scratch (5.8M)": "sentiment"}
        (only,) = sentiment.compare("Not bad at all.")
        assert only[1].name == "sentiment"
        with pytest.raises(policy.InputError, match="cannot read this text"):  # no Chinese pair installed
            sentiment.compare("一点也不好。")
        with pytest.raises(policy.InputError, match="No classifier"):
            sentiment.classify("Not bad at all.", "sentiment-pretrained")
        (tmp_path / "sentiment").unlink()
        with pytest.raises(policy.InputError, match="No sentiment classifier in"):
            sentiment.classify("Not bad at all.")
        assert sentiment.compare("Not bad at all.") == []
    finally:
        lab.store.set_model_dir(lab.store.DEFAULT_MODEL_DIR)


@pytest.mark.parametrize("text", ["\u200b", "\u0301", "\ufffd", "\x00"])
def test_comparing_a_text_with_no_readable_token_is_a_clear_message_not_a_crash(text):
    """Issue 33: /classify_compare raised EmptyTextError out of the pre-trained classifier on these."""
    with pytest.raises(policy.InputError, match="reads no token|cannot represent"):
        sentiment.compare(text)


def test_an_english_only_classifier_says_in_one_line_that_it_cannot_read_chinese():
    """Issue 33 item 8: `[CLS] 我 [UNK]x4 部 [UNK]x2 [SEP]` gave a confident verdict."""
    with pytest.raises(policy.InputError, match="cannot read this text") as error:
        sentiment.classify("我很喜欢这部电影", "sentiment-pretrained")
    assert "\n" not in str(error.value)
    assert sentiment.classify("I loved this film", "sentiment-pretrained").probs  # English still reads


# ---------------------------------------------------------------- a whole review, by sentences (issue 39)

SHORT_TEXTS = ["A moving, beautifully acted film.", "This movie is not good.", "Not bad at all, I enjoyed every minute.",
               "The acting was great but the plot was a mess.", "👍🎉!!!", " ".join(["good,"] * 80)]


@pytest.mark.parametrize("name", ["sentiment", "sentiment-pretrained"])
def test_short_texts_get_the_same_verdicts_as_before(name):
    """A text of one sentence, or of 300 characters or fewer, is read whole: explain's verdict, as before."""
    from transformer_core import explain

    model, tokenizer = lab.store.load(name)
    for text in SHORT_TEXTS:
        run = sentiment.classify(text, name)
        assert run.document is None and run.sentence is None
        assert run.probs == explain(model, tokenizer, text).probs, text


@pytest.mark.parametrize("name", ["sentiment", "sentiment-pretrained"])
def test_a_long_review_is_read_by_sentences_and_shows_the_weightiest_or_the_picked_sentence(name):
    run = sentiment.classify(sentiment.REVIEW, name)
    document = run.document
    assert len(document.sentences) == 5 and len(document.running) == 5
    assert run.probs == document.probs and document.probs["positive"] == pytest.approx(document.running[-1])
    assert document.method.startswith("Read sentence by sentence") and run.notice == ""
    weights = [abs(s.log_odds) for s in document.sentences]
    assert run.sentence == weights.index(max(weights))
    assert run.read_text == document.sentences[run.sentence].text  # the evidence is of that sentence
    picked = sentiment.classify(sentiment.REVIEW, name, 2)
    assert picked.sentence == 1 and picked.read_text.startswith("The first hour is slow")
    assert picked.probs == run.probs and picked.document is run.document  # one reading of the review
    assert sentiment.classify(sentiment.REVIEW, name, 99).sentence == 4  # clamped to the last sentence
    with pytest.raises(policy.InputError, match="Sentence must be a whole number"):
        sentiment.classify(sentiment.REVIEW, name, "third")


def test_the_pretrained_classifier_hears_the_review_turn():
    """The lecture step's review: negative first, positive from the storm on; the verdict follows the turn."""
    run = sentiment.classify(sentiment.REVIEW, "sentiment-pretrained")
    labels = [s.label for s in run.document.sentences]
    assert labels[:2] == ["negative", "negative"] and labels[-2:] == ["positive", "positive"]
    assert run.document.running[1] < 0.5 < run.document.running[-1]


# Hostile input, by name: each is cut with a notice that says so, and answers (never hangs a worker).
NO_SENTENCE_ENDS = "the film goes on and on without a stop " * 120  # 4,800 characters, not one end mark
ONE_ENORMOUS_SENTENCE = "great,and,moving," * 1_200  # 20,400 characters, no end, no space: cut hard into pieces
THOUSANDS_OF_SENTENCES = "Great film. " * 3_000  # 36,000 characters, 3,000 sentences


@pytest.mark.parametrize("text, says", [
    (NO_SENTENCE_ENDS, ["read in pieces of at most 500"]),
    (ONE_ENORMOUS_SENTENCE, ["only the first 12,000 are used", "read in pieces of at most 500"]),
    (THOUSANDS_OF_SENTENCES, ["only the first 12,000 are used", "only the first 200 are read"]),
], ids=["no_sentence_ends", "one_enormous_sentence", "thousands_of_sentences"])
def test_hostile_long_texts_are_cut_with_a_visible_notice(text, says):
    run = sentiment.classify(text, "sentiment-pretrained")
    assert run.document is not None and len(run.document.sentences) <= 200
    assert all(len(s.text) <= 500 for s in run.document.sentences)
    for words in says:
        assert words in run.notice, run.notice


def test_the_chinese_classifiers_are_offered_and_read_chinese_and_compared_as_twins():
    offered = sentiment.classifiers()
    assert {"sentiment-zh", "sentiment-zh-pretrained"} <= set(offered.values())
    assert "Chinese reviews, pre-trained + fine-tuned (1.5M)" in map(str, offered)
    positive = sentiment.classify("非常好的一本书，值得一读，推荐！", "sentiment-zh-pretrained")
    negative = sentiment.classify("质量太差了，非常失望。", "sentiment-zh-pretrained")
    assert positive.probs["positive"] > 0.5 > negative.probs["positive"]
    assert list(sentiment.compared().values()) == ["sentiment", "sentiment-pretrained"]
    assert list(sentiment.compared("Not bad at all, 真的").values()) == ["sentiment", "sentiment-pretrained"]


def test_compare_on_chinese_text_sets_the_head_that_saw_chinese_labels_beside_the_one_that_saw_english_only():
    """Issue 47 item 6: does pre-training carry a sentiment head across languages?"""
    pair = sentiment.compare("质量太差了，非常失望。")
    assert [run.name for _, run in pair] == ["sentiment-everyday", "sentiment-crosslingual"]
    assert [str(label) for label, _ in pair] == [str(label) for label in sentiment.compared("中文").keys()]
    assert all(run.probs["positive"] < 0.5 for _, run in pair) and all(run.notice == "" for _, run in pair)
    assert all(run.verdict == "positive" for _, run in sentiment.compare("这本书很好看，我会推荐给朋友。"))


def test_the_chinese_default_reads_the_everyday_sentences_the_classroom_walk_misread():
    """Issue 60, finding 1: with no classifier chosen, "这部电影太棒了！" was 负面 80 % and "还行吧，不算太差。" a coin
    flip; the Chinese default is now the head also trained on everyday sentences (its card), English's unchanged."""
    for text in ("这部电影太棒了！", "还行吧，不算太差。", "这个价格不贵。"):
        run = sentiment.classify(text)
        assert run.name == "sentiment-everyday" and run.verdict == "positive", (text, run.probs)
    assert sentiment.classify("这部电影太无聊了。").verdict == "negative"
    assert sentiment.classify("A moving film, beautifully shot.").name == "sentiment-crosslingual"


def test_the_pretrained_multilingual_encoder_is_offered_for_its_heads_but_never_for_verdicts():
    assert "multilingual-e5" not in sentiment.classifiers().values()  # its classifier head is untrained
    assert lab.models.choices()["multilingual-e5 (pre-trained multilingual encoder)"] == "multilingual-e5"
    with pytest.raises(policy.InputError, match="No classifier"):
        sentiment.classify("这本书很好看。", "multilingual-e5")


def test_a_text_with_no_classifier_chosen_goes_to_the_reader_that_measured_best_on_its_languages_test(monkeypatch):
    """The rule is the registry's figures (lab/models.TEST_ACCURACY, from the cards), not a name in the tab."""
    figures = lab.models.TEST_ACCURACY
    best = max((n for n in sentiment.classifiers().values() if lab.models.checkpoint(n).reads("zh")),
               key=lambda n: figures.get(n, {}).get("zh", 0))
    assert sentiment.classify("这本书很好看。").name == best
    monkeypatch.setitem(figures, "sentiment-crosslingual", {"zh": 0.99})  # were it measured best, it would read
    assert sentiment.classify("这部电影太棒了！").name == "sentiment-crosslingual"
    monkeypatch.setitem(figures, "sentiment", {"en": 0.99})
    assert sentiment.classify("A moving film, beautifully shot.").name == "sentiment"


LONG_ZH = ("这本书我等了很久才买到，包装很好，送货也很快。刚开始读的时候觉得有点慢，人物太多，记不住名字。"
           "读到一半以后故事越来越精彩，停不下来。作者的文笔很细腻，很多细节都写得很真实。"
           "总的来说是一本值得推荐的好书，我已经推荐给朋友了。唯一的缺点是纸张有点薄，价格也不便宜。")


def test_a_request_tokenizes_each_text_once_and_runs_one_pass_per_reading(monkeypatch):
    """Issue 46: a Chinese review was tokenized three times per request and its shown sentence read twice
    with the gradient. Now: a short text, one tokenization and one pass; a review, the whole text once (to
    measure it) and each sentence once, one pass over the sentences and one for the shown sentence; another
    sentence of the same review, its tokens and the review's verdict kept, one pass of one sentence."""
    model, tokenizer = lab.store.load("sentiment-zh")
    seen, rows = [], []
    for method in ("tokens", "encode"):
        real = getattr(tokenizer, method)
        monkeypatch.setattr(tokenizer, method, lambda text, real=real: seen.append(text) or real(text))
    hook = model.register_forward_hook(lambda module, args, out: rows.append(args[0].shape[0]))
    try:
        short = "这本书写得很好，值得一读，推荐！"
        sentiment._runs.clear()
        sentiment.classify(short, "sentiment-zh")
        assert seen == [short] and rows == [1]
        seen.clear(), rows.clear()
        sentiment._documents.clear()
        run = sentiment.classify(LONG_ZH, "sentiment-zh")
        sentences = [s.text for s in run.document.sentences]
        assert len(sentences) == 6 and sorted(seen) == sorted([LONG_ZH, *sentences])
        assert sum(rows[:-1]) == len(sentences) and rows[-1] == 1
        seen.clear(), rows.clear()
        other = sentiment.classify(LONG_ZH, "sentiment-zh", 1 if run.sentence else 2)
        assert other.document is run.document and seen == [LONG_ZH] and rows == [1]
    finally:
        hook.remove()


def test_a_character_the_chinese_bpe_splits_into_bytes_is_labelled_and_said():
    # the Chinese classifiers read a byte-level BPE: a character it never saw is its UTF-8 bytes
    run = sentiment.classify("好评，龘", "sentiment-zh")
    assert run.labels[-2:] == ["龘 (3 bytes)", "龘 (3 bytes)"] and not any("\\x" in label for label in run.labels)
    assert "into bytes" in str(run.notice)
