"""Texts of different lengths through one padded pass read back as if each had run alone (lab/cache.Batcher's premise)."""

from pathlib import Path

import pytest
import torch

from transformer_core import attention_of_each, explain_each, load_model, log_odds_shares
from transformer_core.analysis.readouts import attention_rollout
from transformer_core.tokenization import TextTokenizer

ASSETS = Path(__file__).resolve().parents[2] / "assets"
TEXTS = ["Not bad at all.",  # lengths differ, so every text but the longest is padded
         "The acting was wonderful, but the plot was a mess from start to end.",
         "A dull film, and far too long for what it has to say about anything."]


def shipped(name):
    folder = ASSETS / name
    if not (folder / "model.safetensors").is_file():
        pytest.skip(f"{name} is not in assets/")
    return load_model(folder).eval(), TextTokenizer.load(folder)


def lone_attention(model, ids: list[int], group: str, **kwargs) -> torch.Tensor:
    _, trace = model.run_with_trace(torch.tensor([ids]), **kwargs)
    return trace.attention(group)[:, 0]


@pytest.mark.parametrize("name, group", [("shakespeare-lm", "decoder"), ("sentiment", "encoder")])
def test_each_text_of_a_padded_pass_gets_the_attention_it_gets_alone(name, group):
    model, tokenizer = shipped(name)
    sequences = [tokenizer.encode(t) for t in TEXTS]
    assert len({len(s) for s in sequences}) == len(TEXTS)
    together = attention_of_each(model, sequences, pad_id=0)
    for ids, attn in zip(sequences, together):
        assert attn.shape[-1] == len(ids)
        torch.testing.assert_close(attn, lone_attention(model, ids, group), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", ["sentiment", "sentiment-pretrained"])
def test_each_verdict_of_a_padded_pass_is_the_lone_texts_verdict(name):
    model, tokenizer = shipped(name)
    verdicts = explain_each(model, tokenizer, TEXTS)
    for text, verdict in zip(TEXTS, verdicts):
        idx = torch.tensor([[s.id for s in tokenizer.tokens(text)]])  # alone: no padding, no lengths
        with torch.no_grad():
            probs = torch.softmax(model(idx)[0], -1)
        attn = lone_attention(model, idx[0].tolist(), "encoder")
        torch.testing.assert_close(torch.tensor(list(verdict.probs.values())), probs, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(verdict.attn, attn, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(verdict.rollout, attention_rollout(attn)[-1].mean(0), atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(verdict.shares, log_odds_shares(model, idx)[1][0], atol=1e-4, rtol=1e-3)
        assert max(verdict.probs, key=verdict.probs.get) == ("negative", "positive")[int(probs.argmax())]
