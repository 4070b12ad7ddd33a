"""Which model a request means, and how a model trained on simplified Chinese reads traditional text."""

import lab
from lab import models, sentiment

TRADITIONAL = "床前明月光，疑是地上霜。舉頭望明月，低頭思故鄉。"
SIMPLIFIED = "床前明月光，疑是地上霜。举头望明月，低头思故乡。"


def test_a_simplified_chinese_model_reads_traditional_characters_converted_with_a_notice():
    text, said = models.read_as("tang-poems-char", TRADITIONAL)
    assert text == SIMPLIFIED and "4 traditional character(s) were converted" in str(said)
    assert models.read_as("tang-poems-char", SIMPLIFIED) == (SIMPLIFIED, "")
    assert models.read_as("shakespeare-lm", TRADITIONAL) == (TRADITIONAL, "")  # a byte-level model reads them as typed


def test_every_use_case_of_a_chinese_model_converts_traditional_text():
    run = lab.attention_run("tang-poems-char", TRADITIONAL)
    assert "".join(run.q_labels) == SIMPLIFIED and "converted to simplified" in str(run.notice)
    verdict = sentiment.classify("非常好的一本書，值得一讀，推薦！", "sentiment-zh-pretrained")
    assert "".join(verdict.labels).find("一本书") >= 0 and "converted to simplified" in str(verdict.notice)


def test_serving_code_imports_to_simplified_from_outside_training():
    assert models.to_simplified.__module__ == "transformer_core.chinese"
