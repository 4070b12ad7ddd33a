"""The shipped Chinese checkpoints and the Chinese BPE: they load offline, fit their budgets and are not degenerate.

Each test is skipped, with the reason, while its asset folder is missing (they are trained by
`train_lm --corpus tang`, `train_sentiment --corpus reviews-zh` and `train_tokenizer --corpus peoples-daily`).
"""

import random
from pathlib import Path

import pytest
import torch

from transformer_core import generate, load_model, mean_loss
from transformer_core.analysis.sentiment import LABELS, predict_proba, special_ids
from transformer_core.decoding.sampling import Sampler, SamplingConfig
from transformer_core.tokenization import UNKNOWN, TextTokenizer

ASSETS = Path(__file__).resolve().parent.parent.parent / "assets"
MAX_LM_BYTES = 25 * 1024 * 1024


def _asset(name: str, file: str = "model.safetensors") -> Path:
    folder = ASSETS / name
    if not (folder / file).is_file():
        pytest.skip(f"assets/{name}/{file} is not built yet")
    return folder


def _is_chinese(char: str) -> bool:
    return "\u4e00" <= char <= "\u9fff"


def test_tang_lm_fits_its_budget_and_reads_one_character_per_token():
    folder = _asset("tang-poems-char")
    assert (folder / "model.safetensors").stat().st_size <= MAX_LM_BYTES
    tokenizer = TextTokenizer.load(folder)
    assert tokenizer.kind == "characters"
    assert [s.text for s in tokenizer.tokens("床前明月光")] == list("床前明月光")
    assert [s.text for s in tokenizer.tokens("A")] == [UNKNOWN]  # a Latin letter is no poem character


def test_tang_lm_finds_a_real_line_likelier_than_its_characters_shuffled():
    folder = _asset("tang-poems-char")
    model, tokenizer = load_model(folder).eval(), TextTokenizer.load(folder)
    line = "\n\n春眠不觉晓，处处闻啼鸟。\n夜来风雨声，花落知多少。"
    chars = list(line[2:])
    random.Random(0).shuffle(chars)
    shuffled = "\n\n" + "".join(chars)
    with torch.no_grad():
        assert mean_loss(model, tokenizer.encode(line)) < mean_loss(model, tokenizer.encode(shuffled)) - 1.0


def test_tang_lm_writes_seeded_chinese_lines():
    folder = _asset("tang-poems-char")
    model, tokenizer = load_model(folder).eval(), TextTokenizer.load(folder)
    prompt = tokenizer.encode("\n\n白日依山尽，黄河入海流。\n")

    def sample(seed):
        with torch.no_grad():
            return tokenizer.decode(generate(model, prompt, 24, choose=Sampler(SamplingConfig(0.8, seed=seed))))

    text = sample(3)
    assert text == sample(3)
    assert sum(map(_is_chinese, text)) >= 16 and any(mark in text for mark in "，。")


@pytest.mark.parametrize("name", ["sentiment-zh", "sentiment-zh-pretrained"])
def test_chinese_classifier_reads_plain_reviews_right(name):
    folder = _asset(name)
    model, tokenizer = load_model(folder).eval(), TextTokenizer.load(folder)
    pad_id, _ = special_ids(tokenizer)
    texts = {"质量很好，非常满意，推荐购买！": "positive", "太差了，用了一天就坏了，很失望。": "negative"}
    ids = [tokenizer.encode(t)[: model.config.max_len] for t in texts]
    labels = [LABELS[i] for i in predict_proba(model, ids, pad_id).argmax(-1).tolist()]
    assert labels == list(texts.values())


def test_chinese_bpe_builds_characters_from_bytes_then_words():
    folder = _asset("chinese-bpe", "tokenizer.json")
    tokenizer = TextTokenizer.load(folder)
    sentence = "这只动物没有过马路，因为它太累了。"
    assert tokenizer.kind == "byte-level BPE"
    assert len(tokenizer.tokens_after_merges(sentence, 0)) == len(sentence.encode("utf-8"))  # bytes first
    words = [s.text for s in tokenizer.tokens(sentence)]
    assert "没有" in words and "因为" in words and len(words) < len(sentence)
