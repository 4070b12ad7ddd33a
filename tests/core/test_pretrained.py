"""The pre-trained + fine-tuned sentiment checkpoint: its training command, float16 storage, loading like any other."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file

from transformer_core import EncoderClassifier, EncoderClassifierConfig, load_model, save_checkpoint
from transformer_core.training import data
from transformer_core.training import train_pretrained
from transformer_core.weights.bert import load_bert
from transformer_core.analysis.sentiment import EmptyTextError, explain
from transformer_core.tokenization import TextTokenizer

from test_distill import _tiny_bert


def test_float16_checkpoint_loads_into_float32_with_rounded_weights_and_leaves_the_model_alone(tmp_path):
    torch.manual_seed(0)
    model = EncoderClassifier(EncoderClassifierConfig(vocab_size=40, d_model=16, n_head=2, n_layer=1, d_ff=32,
                                                      max_len=8)).eval()
    save_checkpoint(model, tmp_path / "half", dtype=torch.float16)
    save_checkpoint(model, tmp_path / "full")
    loaded = load_model(tmp_path / "half")
    assert all(p.dtype == torch.float32 for p in [*model.parameters(), *loaded.parameters()])
    for name, weight in model.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], weight.half().float())
    halved = (tmp_path / "half" / "model.safetensors").stat().st_size
    assert halved < 0.6 * (tmp_path / "full" / "model.safetensors").stat().st_size


def _reviews(split: str) -> list[data.Review]:
    """A small labelled set the tiny BERT's vocabulary covers (ids fix the split, as in the real data)."""
    good, bad = ["great", "wonderful", "loved"], ["awful", "boring", "hated"]
    labels = [(i // 10 + i) % 2 for i in range(60)]  # both labels in every split
    reviews = [data.Review(i, 2.0 * y - 1, f"I {(good if y else bad)[i % 3]} it", y) for i, y in enumerate(labels)]
    return [r for r in reviews if {0: "test", 1: "validation"}.get(r.id % 10, "train") == split]


def _train(tmp_path, monkeypatch, *flags):
    monkeypatch.setattr(data, "minilm", lambda: _tiny_bert(tmp_path / "minilm"))
    monkeypatch.setattr(data, "movie_reviews", _reviews)
    out = tmp_path / "out"
    train_pretrained.main(["--out", str(out), "--steps", "4", "--batch-size", "8", "--eval-every", "2",
                           "--lr", "1e-3", *flags])
    return out


def test_training_command_fine_tunes_the_pretrained_encoder_into_a_checkpoint_the_app_can_load(tmp_path, monkeypatch):
    seen = []
    finetune = train_pretrained.finetune
    monkeypatch.setattr(train_pretrained, "finetune", lambda model, args, examples, *rest:
                        seen.extend(examples["train"][0]) or finetune(model, args, examples, *rest))
    out = _train(tmp_path, monkeypatch)
    assert all(ids[0] == 2 and ids[-1] == 3 for ids in seen)  # trained on [CLS] ... [SEP], as it is served
    model, tokenizer = load_model(out), TextTokenizer.load(out)
    assert model.config.d_model == 16 and model.config.vocab_size == 15  # the imported encoder, not a new one
    verdict = explain(model, tokenizer, "I loved it")
    assert [s.text for s in verdict.tokens] == ["[CLS]", "i", "loved", "it", "[SEP]"]  # as in pre-training; no [PAD]
    assert verdict.attn.shape == (1, 2, 5, 5)
    with pytest.raises(EmptyTextError):  # [CLS] and [SEP] alone are no text to classify
        explain(model, tokenizer, "  ")
    history = json.loads((out / "history.json").read_text())["finetune"]
    assert [c["step"] for c in history] == [2, 4]
    card = (out / "README.md").read_text()
    assert "Apache-2.0" in card and "Command: `python -m transformer_core.training.train_pretrained" in card
    assert "Stored in float16" in card  # a tiny model's accuracy does not move when rounded
    stored = {v.dtype for v in load_file(out / "model.safetensors").values()}
    assert stored == {torch.float16}


def test_weights_stay_float32_when_float16_would_move_validation_accuracy(tmp_path, monkeypatch):
    monkeypatch.setattr(train_pretrained, "float16_accuracy", lambda *a: -1.0)
    out = _train(tmp_path, monkeypatch)
    assert "Stored in float32" in (out / "README.md").read_text()
    stored = {v.dtype for v in load_file(out / "model.safetensors").values()}
    assert stored == {torch.float32}


def test_float16_accuracy_measures_rounded_weights_and_restores_the_originals(tmp_path):
    model, _ = load_bert(_tiny_bert(tmp_path))
    model.eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        model.head.bias.copy_(torch.tensor([0.0, 1e-4]))  # float16 rounds 1e-4 + 1 to 1: the tie goes to class 0
        model.head.weight.zero_()
        model.head.bias.add_(torch.tensor([1.0, 1.0]))
    ids, labels = [[5, 6], [7]], [1, 1]
    assert train_pretrained.float16_accuracy(model, ids, labels, pad_id=0) == 0.0
    assert model.head.bias[1] != model.head.bias[0]  # the float32 weights are back
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items() if not k.startswith("head"))


@pytest.mark.parametrize("flags, message", [(["--steps", "0"], "at least 1"), (["--lr", "0"], "positive"),
                                            (["--seed", "-1"], "from 0 to 2**63 - 1")])
def test_training_command_refuses_bad_settings_with_a_message(tmp_path, flags, message, capsys):
    with pytest.raises(SystemExit):
        train_pretrained.main(["--out", str(tmp_path / "out"), *flags])
    assert message in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_a_half_linear_reads_a_token_or_two_in_float16_and_a_prompts_rows_in_float32(monkeypatch):
    """Decoding (one row) multiplies in float16, half the bytes to read; a prompt's rows multiply in float32,
    where a CPU's float16 product is several times slower: the rows' outputs are then float32's, to the bit."""
    from transformer_core.weights import float16
    from transformer_core.weights.float16 import HALF_ROWS, HalfLinear

    g = torch.Generator().manual_seed(0)
    weight, bias = torch.randn(24, 16, generator=g), torch.randn(24, generator=g)
    linear = HalfLinear(weight, bias)
    x = torch.randn(HALF_ROWS + 3, 16, generator=g) * 1.001  # inputs float16 rounds
    full = torch.nn.functional.linear(x, linear.weight.float(), linear.bias.float())
    assert torch.equal(linear(x), full)
    monkeypatch.setattr(float16, "FLOAT32_CHUNK", 5 * 16)  # the weights read as float32 five rows at a time
    assert torch.allclose(linear(x), full, atol=1e-6) and linear(x).shape == full.shape
    monkeypatch.setattr(float16, "SPLIT_FROM", 0)  # and the outputs' two halves on two threads (11 + 10 + 3 rows)
    assert torch.allclose(linear(x), full, atol=1e-6) and linear(x).shape == full.shape
    one = linear(x[:1])
    assert torch.equal(one, torch.nn.functional.linear(x[:1].half(), linear.weight, linear.bias).float())
    assert not torch.equal(one, full[:1]) and torch.allclose(one, full[:1], atol=0.05)


def test_a_half_linear_whose_float16_product_overflows_multiplies_in_float32_instead():
    """Gemma's gated hidden units can make a token's product pass float16's largest value (65,504): that output
    is float32's, finite, not inf."""
    from transformer_core.weights.float16 import HalfLinear

    weight = torch.tensor([[1.0, 2.0], [30000.0, 30000.0], [-1.0, 0.5]])
    linear = HalfLinear(weight)
    x = torch.tensor([[1.5, 1.0]])  # row 2 gives 75,000
    assert torch.equal(linear(x), torch.tensor([[3.5, 75000.0, -1.0]]))
    assert torch.equal(linear(torch.tensor([[1.0, 1.0]])), torch.tensor([[3.0, 60000.0, -0.5]]))  # float16's own
