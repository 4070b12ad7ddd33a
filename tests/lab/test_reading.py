"""The one reading path: one registry whose configs say what each checkpoint reads, routing by the text's
language, the input policy once, and a model that cannot read a text saying so (issues 46 and 48)."""

import json
import os

import pytest

import lab
from lab import generate, heads, masking, models, reading, sentiment, store, tokens, translate
from lab.cache import clear_all
from lab.policy import InputError
from transformer_core.analysis import documents

TRADITIONAL = "床前明月光，疑是地上霜。舉頭望明月，低頭思故鄉。"
SIMPLIFIED = "床前明月光，疑是地上霜。举头望明月，低头思故乡。"
CHINESE_REVIEW = "这本书写得很好，值得一读，推荐！"
# a Chinese review of 300 characters: ~200 tokens of the Chinese classifiers, which read 128 positions
LONG_CHINESE_REVIEW = ("我本来以为这本书会很无聊，因为前面几章写得实在太慢了，人物也没有什么特点。"
                       "可是读到中间，故事突然变得紧张起来，每一页都让人想继续往下看。"
                       "作者对小镇生活的描写非常细腻，很多细节让我想起了自己的童年。"
                       "主人公和父亲之间的感情写得特别真实，有几段我看得眼泪都流下来了。"
                       "不过结尾有点仓促，有些问题没有交代清楚，让人觉得有点可惜。"
                       "印刷和纸张的质量都很好，包装也很用心，物流速度也很快。"
                       "总的来说，这是我今年读过的最好的一本小说，非常值得推荐给朋友们。"
                       "如果你喜欢安静而温暖的故事，一定不要错过这本书。"
                       "我已经又买了两本，准备送给家人，希望他们也会喜欢。"
                       "以后这位作者出的新书我都会买来看的。")


def test_every_shipped_checkpoint_declares_what_it_reads_in_its_own_config():
    for name in store.checkpoints(include_cheats=True).values():
        config = json.loads((store.DEFAULT_MODEL_DIR / name / "config.json").read_text(encoding="utf-8"))
        assert set(config["languages"]) <= set(models.LANGUAGES), name
    chinese = {c.name for c in models.registry(include_cheats=True) if c.reads("zh")}
    multilingual = {"multilingual-e5", "sentiment-multilingual", "sentiment-everyday", "sentiment-crosslingual"}
    assert chinese == {"tang-poems-char", "sentiment-zh", "sentiment-zh-pretrained", *multilingual}
    # XLM-R's pieces hold traditional characters as they are: only the models of our own Chinese data convert them
    assert all((models.checkpoint(name).script == "simplified") == (name not in multilingual) for name in chinese)
    model, _ = store.load("sentiment-zh")  # the frozen config ignores what it reads: it is the registry's
    assert not hasattr(model.config, "languages")


def _drop(root, name: str, like: str, **reads) -> None:
    """A new checkpoint in model folder `root`: the weights and tokenizer of `like`, a config of its own."""
    folder = root / name
    folder.mkdir()
    for file in ("model.safetensors", "tokenizer.json"):
        os.symlink(store.DEFAULT_MODEL_DIR / like / file, folder / file)
    config = json.loads((store.DEFAULT_MODEL_DIR / like / "config.json").read_text(encoding="utf-8"))
    config.pop("script", None)
    (folder / "config.json").write_text(json.dumps({**config, **reads}), encoding="utf-8")


@pytest.fixture
def model_dir(tmp_path):
    (tmp_path / "sentiment").symlink_to(store.DEFAULT_MODEL_DIR / "sentiment", target_is_directory=True)
    (tmp_path / "shakespeare-lm").symlink_to(store.DEFAULT_MODEL_DIR / "shakespeare-lm", target_is_directory=True)
    store.set_model_dir(tmp_path)
    yield tmp_path
    store.set_model_dir(store.DEFAULT_MODEL_DIR)


def test_a_checkpoint_dropped_in_the_model_folder_is_offered_and_routed_by_the_languages_its_config_declares(
        model_dir):
    with pytest.raises(InputError, match="cannot read this text"):  # only an English classifier yet
        sentiment.classify(CHINESE_REVIEW)
    _drop(model_dir, "bilingual-reviews", "sentiment-zh", languages=["en", "zh"], script="simplified")
    _drop(model_dir, "poems", "tang-poems-char", languages=["zh"], script="simplified")
    assert sentiment.classifiers()["bilingual-reviews (classifier)"] == "bilingual-reviews"
    assert models.choices()["bilingual-reviews (classifier)"] == "bilingual-reviews"  # Attention's picker
    assert generate.choices()["poems (language model)"] == "poems"
    assert "poems (language model)" in lab.attention.models_offered()
    # routed: a Chinese text to the models that read Chinese, an English one where it always went
    chinese = sentiment.classify(CHINESE_REVIEW)
    assert chinese.name == "bilingual-reviews" and sentiment.label_of(chinese.name) == "bilingual-reviews (classifier)"
    assert sentiment.classify("A moving film.").name == "sentiment"
    assert sentiment.classify("A moving, beautifully acted film.", "bilingual-reviews").probs  # both: reads English
    assert list(sentiment.compared(CHINESE_REVIEW).values()) == ["bilingual-reviews"]
    assert masking.lm_for("床前明月光") == "poems" and masking.lm_for("To be") == "shakespeare-lm"
    run = lab.attention_run("poems", TRADITIONAL)  # its script is read as declared: converted, with a notice
    assert "".join(run.q_labels) == SIMPLIFIED and "converted to simplified" in run.notice
    _drop(model_dir, "my-reverser", "translate-reverse", task="reverse")  # a translator says its task
    assert translate.checkpoint_of("reverse") == "my-reverser"
    assert translate.translation("reverse", "1234").output == "4321"


def test_a_text_with_no_classifier_chosen_is_read_by_the_best_measured_reader_of_its_language():
    run = sentiment.classify(CHINESE_REVIEW)
    assert run.name == "sentiment-everyday" and run.verdict == "positive" and run.notice == ""
    assert sentiment.classify(CHINESE_REVIEW, "") is not None  # the picker's "by the text's language"
    english = {name: models.TEST_ACCURACY[name]["en"] for name in sentiment.classifiers().values()
               if "en" in models.TEST_ACCURACY.get(name, {})}
    assert sentiment.classify("A moving, beautifully acted film.").name == max(english, key=english.get)


def test_a_classifier_chosen_by_hand_that_cannot_read_the_text_says_so_and_proposes_those_that_can():
    with pytest.raises(InputError, match="cannot read this text") as error:
        sentiment.classify(CHINESE_REVIEW, "sentiment-pretrained")
    said = str(error.value)
    assert "Pick one that reads Chinese" in said and "Chinese reviews, trained from scratch (1.5M)" in said
    assert "\n" not in said


@pytest.mark.parametrize("text", ["质量 very good 👍", "good quality, 很好"])
def test_a_chinese_classifier_given_mostly_english_says_it_cannot_read_it(text):
    """Issue 48 row 10: "质量 very good 👍" got 负面 72-83% with no notice: 7 of its 8 word tokens are Latin."""
    with pytest.raises(InputError, match="cannot read this text"):
        sentiment.classify(text, "sentiment-zh")
    n_foreign, n = reading.foreign("sentiment-zh", store.tokenizer("sentiment-zh"), "质量 very good 👍",
                                   store.tokenizer("sentiment-zh").tokens("质量 very good 👍"))
    assert (n_foreign, n) == (7, 8)  # measured in the model's own tokens; the emoji's bytes count for neither
    partly = sentiment.classify("质量很好，物流也快，包装也不错，ok", "sentiment-zh")  # mostly Chinese: read, and said
    assert "reads Chinese" in partly.notice and partly.probs


INVISIBLE_ONLY = {"zero-width and BOM": "\u200b\u200c\u200d\ufeff", "word joiners": "\u2060\u2061",
                  "controls": "\x00\x07", "lone accents": "\u0301\u0308", "direction marks": "\u202e\u202c"}


@pytest.mark.parametrize("text", INVISIBLE_ONLY.values(), ids=INVISIBLE_ONLY.keys())
def test_a_text_of_nothing_visible_is_said_in_one_line_not_read(text):
    """multilingual-e5's SentencePiece reads a zero-width space as a word start: Sentiment gave 负面 52 % on it
    (its only note: "no letters or digits") and Attention drew its heatmap."""
    for read in (lambda: sentiment.classify(text), lambda: lab.attention_run("multilingual-e5", text),
                 lambda: lab.attention_run("shakespeare-lm", text)):
        with pytest.raises(InputError, match="reads no token of this text") as error:
            read()
        assert "\n" not in str(error.value)
    # a visible character among them is read: an emoji, a letter behind a BOM
    assert sentiment.classify(text + "😀").probs and sentiment.classify("\ufeffgood film").probs


def test_models_that_cannot_read_the_text_say_so_where_they_show_it_anyway():
    """Issue 48 row 10: the English WordPiece in Attention with most tokens [UNK], Shakespeare's LM on a poem."""
    run = lab.attention_run("sentiment-pretrained", "我很喜欢这部电影，演员也演得很好")
    assert "cannot read this text" in run.notice and "English" in run.notice
    assert "Pick one that reads Chinese: tang-poems-char (language model), multilingual-e5 (pre-trained multilingual " \
           "encoder), sentiment-crosslingual (classifier)" in run.notice
    model, tokenizer, _ = generate.load(generate.SHIPPED)
    request = generate.check(generate.SHIPPED, tokenizer, model.config.max_len, "床前明月光，疑是地上霜。", "greedy",
                             1.0, 0, 1.0, 0.0, 1.0, 5, 0)
    assert any("cannot read this text" in n and "Tang poems" in n for n in request.notices), request.notices
    with pytest.raises(InputError, match="cannot represent"):  # the Tang LM knows no Latin letter, no emoji
        generate.check(generate.TANG, store.tokenizer("tang-poems-char"), 128, "hello 😀", "greedy", 1.0, 0, 1.0,
                       0.0, 1.0, 5, 0)
    assert lab.attention_run("shakespeare-lm", "To be, or not to be.").notice == ""


def test_the_heads_section_reads_a_text_as_the_attention_tab_above_it():
    """Issue 46: lab/heads.py's own reading skipped read_as, so find-head and the heatmap read different texts."""
    above = lab.attention_run("tang-poems-char", TRADITIONAL)
    below = heads.switch_off("tang-poems-char", TRADITIONAL, "L0 H0")
    assert below.labels == above.q_labels and "".join(below.labels) == SIMPLIFIED
    assert "converted to simplified" in below.notice
    said = heads.switch_off("sentiment-pretrained", "我很喜欢这部电影，演员也演得很好", "L0 H0").notice
    assert "cannot read this text" in said


def test_the_tokens_tab_reads_traditional_characters_as_the_simplified_chinese_models_do():
    """Issue 48 row 16: tang-poems-char showed 11 of 14 characters as [UNK]; Generate converts them."""
    text, tokenized, notice = tokens.tokenize(TRADITIONAL)
    tang = next(k for k in tokenized if "tang-poems-char" in k.label)
    assert text == TRADITIONAL and tang.text == SIMPLIFIED and not tang.problem
    unknown = store.tokenizer("tang-poems-char").token_to_id("[UNK]")
    assert unknown not in [s.id for s in tang.spans]
    assert "converted to simplified" in notice and "tang-poems-char" in notice
    shakespeare = next(k for k in tokenized if "shakespeare-lm" in k.label)
    assert shakespeare.text == TRADITIONAL  # a byte-level English BPE reads it as typed


def test_translate_attention_and_the_heads_section_share_one_translation(monkeypatch):
    calls = []
    real = translate.translate
    counted = lambda *args: calls.append(args[2]) or real(*args)  # noqa: E731
    monkeypatch.setattr(translate, "translate", counted)
    monkeypatch.setattr(heads, "translate", counted)
    clear_all()
    for group in ("encoder", "decoder", "cross"):
        lab.attention_run("translate-reverse", "12345", group)
    translate.translation("reverse", "12345")
    heads.importance("translate-reverse", "12345")
    assert calls == ["12345"]  # one translation of the text, with every head on
    heads.switch_off("translate-reverse", "12345", "cross L0 H0")
    assert calls == ["12345"] * 2  # and one more with the head off: what switching it off changes


def test_a_long_chinese_review_is_read_sentence_by_sentence_not_cut():
    """Issue 48 row 11: 300 characters are ~200 of the classifier's tokens; it was cut at 128."""
    assert len(LONG_CHINESE_REVIEW) <= documents.LONG_TEXT_CHARS  # "long" by characters it was not
    run = sentiment.classify(LONG_CHINESE_REVIEW, "sentiment-zh")
    assert run.document is not None and len(run.document.sentences) == 10
    assert "the model reads at most" not in run.notice and run.read_text in LONG_CHINESE_REVIEW
    short = sentiment.classify("质量太差了。非常失望。", "sentiment-zh")  # two sentences, a dozen tokens: whole
    assert short.document is None


def test_a_review_is_split_into_sentences_once_and_its_sentences_numbered_from_1_everywhere(monkeypatch):
    splits = []
    real = documents.split_sentences

    def counted(text):
        splits.append(text)
        return real(text)

    monkeypatch.setattr(documents, "split_sentences", counted)
    monkeypatch.setattr(sentiment, "split_sentences", counted)
    clear_all()
    run = sentiment.classify(sentiment.REVIEW, "sentiment", 2)
    assert splits == [sentiment.REVIEW]  # once, by the use case; read_document reads the split it is given
    assert run.number == 2 and run.document.sentences[run.sentence].text == run.read_text
    assert sentiment.classify("A moving film.", "sentiment").number is None  # a short text has no sentences


def test_a_checkpoint_written_again_keeps_what_it_reads_and_a_new_one_can_say_it(tmp_path):
    from transformer_core import load_model, save_checkpoint

    model = store.model("tang-poems-char")
    folder = tmp_path / "poems"
    save_checkpoint(model, folder, reads={"languages": ["zh"], "script": "simplified"})
    save_checkpoint(model, folder)  # retrained in place: save_pretrained writes a fresh config.json
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert config["languages"] == ["zh"] and config["script"] == "simplified" and config["arch"] == "DecoderLM"
    assert load_model(folder).config == model.config  # the model's own config ignores what it reads


def test_attention_while_generating_reads_the_prompt_as_the_attention_tab_does():
    run = lab.while_generating_run("tang-poems-char", TRADITIONAL, 2)
    assert "".join(run.labels[:run.n_prompt]) == SIMPLIFIED and "converted to simplified" in run.notice
