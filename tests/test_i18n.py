"""The message catalogues: every id in both languages, nothing empty, the same placeholders, the glossary's words."""

import re
import string
from collections import Counter

import pytest

import i18n
from i18n import Joined, Message, catalogue, normalise, render, t

EN, ZH = catalogue("en"), catalogue("zh-CN")
CJK = re.compile(r"[\u3400-\u9fff]")
# entries that are the same in both languages: names, symbols and the terms the Chinese texts keep in Latin letters
NEUTRAL = {"common.warning", "concepts.h.p", "concepts.name.scaled", "figure.head_short",
           "figure.layer_short", "concepts.follow_logits", "masking.describe", "masking.describe.plain", "generate.min_p", "generate.top_k", "setting.top_k",
           "sampling.stage.min-p", "sampling.stage.top-k", "sampling.stage.top-p", "tokens.kind.WordPiece"}


def fields(text: str) -> Counter:
    """The str.format placeholders of a message, with their format specs: {"n:,": 1, "name:": 2}."""
    return Counter(f"{name}:{spec}" for _, name, spec, _ in string.Formatter().parse(text) if name is not None)


def plotly_parts(text: str) -> Counter:
    """Plotly's hovertemplate variables (%{y}, %{z:.3f}; written %{{...}} in the catalogue)."""
    return Counter(re.findall(r"%\{\{(.*?)\}\}", text))


def tags(text: str) -> Counter:
    return Counter(re.findall(r"</?[a-z]+>", text))


def dummy(text: str) -> dict:
    """Values for every placeholder of `text`: numbers where a format spec asks for one."""
    return {name: (1234.5 if spec else "x") for _, name, spec, _ in string.Formatter().parse(text) if name}


def test_both_languages_hold_the_same_message_ids():
    assert set(EN) == set(ZH), (sorted(set(EN) - set(ZH)), sorted(set(ZH) - set(EN)))


@pytest.mark.parametrize("key", sorted(EN))
def test_every_message_is_non_empty_and_keeps_placeholders_markup_and_plotly_variables(key):
    en, zh = EN[key], ZH[key]
    assert en.strip() and zh.strip()
    assert fields(en) == fields(zh), key
    assert plotly_parts(en) == plotly_parts(zh), key
    assert tags(en) == tags(zh), key
    for text in (en, zh):
        text.format(**dummy(text))  # formats: no stray brace, no spec that needs another type


def test_every_chinese_message_is_chinese_unless_language_neutral():
    untranslated = sorted(k for k, v in ZH.items() if not CJK.search(v) and k not in NEUTRAL
                          and re.search(r"[A-Za-z]{3,}", re.sub(r"%\{\{.*?\}\}|<[^>]*>|\{[^}]*\}", "", v)))
    assert not untranslated
    assert all(ZH[k] != EN[k] or k in NEUTRAL for k in ZH if not CJK.search(ZH[k]))


def test_chinese_uses_the_glossary_words_and_chinese_punctuation():
    for key, text in ZH.items():
        assert "标记" not in text and "令牌" not in text, f"{key}: token is 词元 (glossary)"
        assert not re.search(r"[\u3400-\u9fff][,;?!]|[,;?!][\u3400-\u9fff]", text), f"{key}: use ，；？！ in Chinese"
    assert ZH["tab.tokens"] == "词元" and "词元 (token)" in ZH["tokens.explainer"]  # first use gives both


@pytest.mark.parametrize("tag, lang", [("zh", "zh-CN"), ("zh-CN", "zh-CN"), ("zh-Hans", "zh-CN"), ("zh_SG", "zh-CN"),
                                       ("zh-TW", "zh-CN"), ("ZH-hant-HK", "zh-CN"), ("en", "en"), ("en-GB", "en"),
                                       ("fr", "en"), ("zhx", "en"), ("", "en"), (None, "en")])
def test_browser_and_link_languages_map_to_the_two_we_have(tag, lang):
    assert normalise(tag) == lang
    assert lang in i18n.LANGUAGES


def test_t_formats_in_either_language_and_refuses_unknown_ids():
    assert t("attention.head_title", "en", layer=2, head=0) == "Layer 2, head 0"
    assert t("attention.head_title", "zh", layer=2, head=0) == "第 2 层，第 0 个头"
    assert t("figure.head_hover", "zh-CN").count("%{") == 3  # Plotly's variables survive formatting
    with pytest.raises(KeyError):
        t("no.such.message", "zh-CN")


def test_a_message_is_english_as_a_string_and_chinese_when_rendered():
    name = Message("setting.layer")
    m = Message("policy.clamped", name=name, low=0, high=5, used=5)
    assert m == "Layer can be 0 to 5; used 5." and isinstance(m, str)
    assert render(m, "zh-CN") == "层的范围是 0 到 5；已使用 5。"
    joined = Joined([m, "", Message("policy.no_tokens")])
    assert joined == "Layer can be 0 to 5; used 5. The text has no tokens: type a sentence."
    assert render(joined, "zh-CN").startswith("层的范围") and "没有词元" in render(joined, "zh-CN")
    assert render("ROMEO:", "zh-CN") == "ROMEO:"  # text no catalogue holds (a model's output) stays as it is


def test_counts_go_through_the_catalogue():
    assert i18n.plural(1, "token") == "1 token" and i18n.plural(2000, "token") == "2,000 tokens"
    assert i18n.plural(2000, "token", "zh-CN") == "2,000 个词元"


def test_messages_survive_copies_and_pickles():
    import copy
    import pickle

    m = Message("policy.clamped", name=Message("setting.layer"), low=0, high=5, used=5)
    joined = Joined([m, Message("policy.no_tokens")], "\n\n")
    for value in (m, joined):
        for clone in (copy.deepcopy(value), pickle.loads(pickle.dumps(value))):
            assert clone == value and render(clone, "zh-CN") == render(value, "zh-CN")


def _literal_hover_words() -> list[str]:
    """Hover templates written as string literals in the figure builders that hold words: each would stay
    English on the Chinese page (hover text is not on the page until the pointer is, so the browser test
    cannot see it)."""
    import ast
    from pathlib import Path

    found = []
    for path in sorted((Path(__file__).resolve().parent.parent / "views").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.keyword) and node.arg == "hovertemplate" and isinstance(node.value, ast.Constant):
                words = re.sub(r"%\{[^}]*\}|<[^>]*>", " ", str(node.value.value))
                if re.search(r"[A-Za-z]{2,}", words):
                    found.append(f"{path.name}:{node.value.lineno}: {node.value.value}")
    return found


def test_no_figure_builder_writes_a_hover_in_one_language():
    assert _literal_hover_words() == []


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_bold_markdown_renders_in_either_language(lang):
    """CommonMark ends bold only where `**` is not between punctuation and a letter: "**它显示什么：**在" shows
    its asterisks (a colon before them, a character after), "**它显示什么**：在" is bold."""
    from markdown_it import MarkdownIt

    md = MarkdownIt()
    shown = {key: md.render(text) for key, text in catalogue(lang).items() if "**" in text}
    assert [key for key, html in shown.items() if "**" in html] == []
