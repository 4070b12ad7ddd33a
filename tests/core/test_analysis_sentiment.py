"""Sentiment in the engine: the shipped classifier, saliency, the training pieces and the IMDb loader
(the tab is tested in tests/ui/test_sentiment_tab.py)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from transformer_core import load_model
from transformer_core.training import data, hub_data, train_sentiment
from transformer_core.analysis.sentiment import (LABELS, EmptyTextError, accuracy, correct, explain, pad_batch, predict_proba,
                                        special_ids)
from transformer_core.tokenization import TextTokenizer
from transformer_core.training.sentiment import IGNORE, classification_batches, mask_tokens
from transformer_core.training.train_sentiment import init_word_vectors, main as train_main

SHIPPED = Path(__file__).resolve().parents[2] / "assets" / "sentiment"
CLEAR = {
    "A wonderful, moving and beautifully acted film.": "positive",
    "One of the best movies of the year: funny, warm and smart.": "positive",
    "A dull, boring and badly written mess.": "negative",
    "The worst film I have seen in years; a waste of time.": "negative",
}


@pytest.fixture(scope="module")
def shipped():
    return load_model(SHIPPED), TextTokenizer.load(SHIPPED)


def test_shipped_checkpoint_gets_clear_sentences_right_every_time(shipped):
    model, tokenizer = shipped
    for text, label in CLEAR.items():
        first, again = explain(model, tokenizer, text), explain(model, tokenizer, text)
        assert max(first.probs, key=first.probs.get) == label, (text, first.probs)
        assert first.probs == again.probs


def test_probabilities_sum_to_one(shipped):
    model, tokenizer = shipped
    pad_id, _ = special_ids(tokenizer)
    probs = predict_proba(model, [tokenizer.encode(t) for t in [*CLEAR, "ok", "?!"]], pad_id)
    assert probs.shape == (6, len(LABELS))
    torch.testing.assert_close(probs.sum(-1), torch.ones(6))
    assert sum(explain(model, tokenizer, "fine, I guess").probs.values()) == pytest.approx(1.0)


def test_correct_and_accuracy_score_each_text_against_its_label(shipped):
    model, tokenizer = shipped
    pad_id, _ = special_ids(tokenizer)
    ids = [tokenizer.encode(t) for t in CLEAR]
    labels = [LABELS.index(label) for label in CLEAR.values()]
    flipped = [1 - y for y in labels]
    assert correct(model, ids, labels, pad_id).tolist() == [True] * len(CLEAR)
    assert correct(model, ids, flipped, pad_id).tolist() == [False] * len(CLEAR)
    assert accuracy(model, ids, labels, pad_id) == 1.0
    assert accuracy(model, ids, labels[:2] + flipped[2:], pad_id) == 0.5


def test_padding_does_not_change_a_prediction(shipped):
    model, tokenizer = shipped
    pad_id, _ = special_ids(tokenizer)
    short, long = tokenizer.encode("great"), tokenizer.encode("A long and rather tedious sentence about nothing.")
    alone, padded = predict_proba(model, [short], pad_id), predict_proba(model, [short, long], pad_id)[:1]
    torch.testing.assert_close(alone, padded, atol=1e-5, rtol=0)


def test_saliency_has_one_score_per_token_and_follows_the_text(shipped):
    model, tokenizer = shipped
    a, b = explain(model, tokenizer, "a great film"), explain(model, tokenizer, "a terrible film")
    for verdict in (a, b):
        assert len(verdict.shares) == len(verdict.rollout) == len(verdict.tokens)
        assert verdict.rollout.sum() == pytest.approx(1.0, abs=1e-4)  # shares of the pooled vector
    assert not torch.allclose(a.shares, b.shares)
    assert not torch.allclose(a.rollout, b.rollout)


def test_empty_text_is_refused_with_a_typed_error(shipped):
    with pytest.raises(EmptyTextError):
        explain(*shipped, "")


def test_review_splits_are_disjoint_and_fixed_by_id(corpus):
    splits = {s: {r.id for r in corpus(data.movie_reviews, s)} for s in data.SPLITS}
    assert all(i % 10 == 0 for i in splits["test"]) and all(i % 10 == 1 for i in splits["validation"])
    assert not splits["train"] & splits["test"] and not splits["train"] & splits["validation"]


def test_bert_masking_hides_about_15_percent_and_targets_only_those():
    x = torch.randint(5, 100, (64, 64))
    corrupted, targets = mask_tokens(x, mask_id=3, vocab_size=100, g=torch.Generator().manual_seed(0))
    chosen = targets != IGNORE
    assert 0.12 < chosen.float().mean() < 0.18
    assert torch.equal(targets[chosen], x[chosen])
    assert torch.equal(corrupted[~chosen], x[~chosen])  # nothing outside the chosen positions moves
    assert (corrupted[chosen] == 3).float().mean() > 0.7


def test_pad_batch_right_pads_and_reports_lengths():
    ids, lengths = pad_batch([[5, 6, 7], [8]], pad_id=1)
    assert ids.tolist() == [[5, 6, 7], [8, 1, 1]] and lengths.tolist() == [3, 1]


def test_rating_targets_follow_the_human_ratings_and_reach_the_batches():
    ratings = [-3.0, -0.2, 0.2, 3.0]
    examples = {split: ([[5, 6], [7], [8, 9, 10], [11]], [0, 0, 1, 1], ratings) for split in data.SPLITS}
    get_batch = classification_batches(examples, 64, pad_id=1, mask_id=3, token_dropout=0.0, device="cpu",
                                       rating_temperature=0.5)
    x, lengths, targets = get_batch("validation", torch.Generator().manual_seed(0))
    assert targets.shape == (64, 2) and torch.allclose(targets.sum(1), torch.ones(64))
    p_positive = {tuple(row[:n].tolist()): p for row, n, p in zip(x, lengths.tolist(), targets[:, 1].tolist())}
    assert p_positive[(11,)] > 0.99 and 0.5 < p_positive[(8, 9, 10)] < 0.7  # a +0.2 snippet is barely positive
    assert p_positive[(5, 6)] < 0.01 and 0.3 < p_positive[(7,)] < 0.5
    hard = classification_batches(examples, 8, 1, 3, 0.0, "cpu")("train", torch.Generator().manual_seed(0))[2]
    assert hard.dtype == torch.long and set(hard.tolist()) <= {0, 1}  # temperature 0: the labels themselves


def _write_imdb(folder: Path, train: list[tuple[str, int]], test: list[tuple[str, int]]) -> Path:
    (folder / "plain_text").mkdir(parents=True)
    for part, rows in (("train", train), ("test", test)):
        table = pa.table({"text": [t for t, _ in rows], "label": pa.array([y for _, y in rows], pa.int64())})
        pq.write_table(table, folder / "plain_text" / f"{part}-00000-of-00001.parquet")
    return folder


def test_imdb_loader_reads_parquet_and_keeps_test_apart(tmp_path):
    train = [(f"train review {i} {'great' if i % 2 else 'awful'}", i % 2) for i in range(25)]
    test = [("a fine test film", 1), ("a bad test film", 0)]
    folder = _write_imdb(tmp_path, train, test)
    got = {s: hub_data.imdb_reviews(s, str(folder)) for s in data.SPLITS}
    assert [(r.text, r.label) for r in got["test"]] == test
    assert [r.id for r in got["validation"]] == [1, 11, 21]
    assert len(got["train"]) == 22 and not {r.text for r in got["train"]} & {r.text for r in got["validation"]}
    assert {r.rating for r in got["train"]} == {1.0, -1.0} and all((r.rating > 0) == r.label for r in got["train"])


def test_imdb_loader_says_which_file_is_missing(tmp_path):
    with pytest.raises(data.DataError, match="plain_text/test"):
        hub_data.imdb_reviews("test", str(tmp_path))


def test_training_command_trains_on_imdb_and_writes_a_loadable_checkpoint(tmp_path, monkeypatch):
    runs = []  # per training run: the model's dropout, its embedding table before and after

    def spy(model, *args, **kwargs):
        before = model.embed.tok.weight.detach().clone()
        history = real_train(model, *args, **kwargs)
        runs.append((model.config.dropout, before, model.embed.tok.weight.detach().clone()))
        return history

    real_train = train_sentiment.train
    monkeypatch.setattr(train_sentiment, "train", spy)
    words = ["great", "wonderful", "loved"], ["awful", "boring", "hated"]
    train = [(f"I {words[i % 2 == 0][i % 3]} it", int(i % 2 == 1)) for i in range(40)]
    folder = _write_imdb(tmp_path / "imdb", train, train[:10])
    out = tmp_path / "out"
    train_main(["--out", str(out), "--tokenizer", str(SHIPPED / "tokenizer.json"), "--corpus", "imdb",
                "--imdb-repo", str(folder), "--d-model", "16", "--n-layer", "1", "--n-head", "2", "--max-len", "16",
                "--pretrain-steps", "4", "--pretrain-context", "8", "--steps", "5", "--batch-size", "8",
                "--eval-every", "3", "--word-vectors", "2", "--pretrain-dropout", "0.05"])
    model = load_model(out)
    checks = json.loads((out / "history.json").read_text())["finetune"]
    assert [c["step"] for c in checks] == [3, 5]  # every 3 steps and the last one
    assert model.config.n_layer == 1 and (out / "README.md").read_text().count("Command:") == 1
    assert (out / "tokenizer.json").is_file()
    assert "PPMI + SVD word vectors" in (out / "README.md").read_text()
    # pre-training ran at its own dropout; the checkpoint keeps the fine-tuning one
    assert "dropout 0.05;" in (out / "README.md").read_text() and model.config.dropout == 0.2
    (pre_dropout, pre_before, pre_after), (ft_dropout, ft_before, _) = runs
    assert (pre_dropout, ft_dropout) == (0.05, 0.2)
    # the twin's pre-trained weights came back: fine-tuning starts where pre-training ended
    assert not torch.equal(pre_before, pre_after) and torch.equal(ft_before, pre_after)


def test_training_command_refuses_a_bad_word_vector_window_with_a_message(tmp_path):
    with pytest.raises(SystemExit, match="window >= 1"):
        train_main(["--out", str(tmp_path / "out"), "--tokenizer", str(SHIPPED / "tokenizer.json"),
                    "--word-vectors", "-2", "--pretrain-steps", "0", "--steps", "1"])
    assert not (tmp_path / "out").exists()


def test_word_vector_init_fills_the_embedding_table_from_unlabelled_text(tiny_checkpoint):
    model, tokenizer = load_model(tiny_checkpoint / "sentiment"), TextTokenizer.load(SHIPPED)
    texts = ["a good film", "a bad film", "a good plot", "a bad plot"]
    load = lambda split: [data.Review(id=i, rating=1.0, text=t, label=1) for i, t in enumerate(texts)]
    args = SimpleNamespace(corpus="imdb", word_vectors=1, word_vectors_std=0.05, seed=0)
    init_word_vectors(model, args, load, tokenizer)
    table = model.embed.tok.weight
    used = sorted({i for t in texts for i in tokenizer.encode(t)})
    assert (table[used].abs().sum(-1) > 0).all() and table[tokenizer.vocab_size - 1].abs().sum() == 0
