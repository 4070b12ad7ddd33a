"""A whole review read sentence by sentence: the splitter, the one batched pass, the combined verdict."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from transformer_core import load_model
from transformer_core.analysis.documents import (COMBINE, LONG_TEXT_CHARS, MAX_SENTENCE_CHARS, MAX_SENTENCES, SURE,
                                                 read_document, reads_by_sentences, sentence_log_odds,
                                                 split_sentences)
from transformer_core.analysis.sentiment import EmptyTextError, explain
from transformer_core.tokenization import TextTokenizer

ASSETS = Path(__file__).resolve().parents[2] / "assets"
REVIEW = (
    "I went in expecting very little. Dr. Hale, played by a famous actor, runs a lighthouse on a small island. "
    "His daughter arrives with a letter from the mainland, e.g. news of a sale. The first hour is dull, "
    "slow and badly edited... It wastes a fine cast. Then the storm comes. The last act is wonderful: "
    "tense, moving and beautifully shot. I loved every minute of it, and the ending is perfect."
)


def sentences(text: str) -> list[str]:
    return split_sentences(text).texts(text)


@pytest.fixture(scope="module", params=["sentiment", "sentiment-pretrained"])
def classifier(request):
    return load_model(ASSETS / request.param).eval(), TextTokenizer.load(ASSETS / request.param)


def test_abbreviations_decimals_and_initials_do_not_end_sentences():
    text = "Mr. Smith met Dr. Jones, e.g. at 3.5 p.m. sharp. J. R. R. Tolkien wrote it. The end."
    assert sentences(text) == ["Mr. Smith met Dr. Jones, e.g. at 3.5 p.m. sharp.", "J. R. R. Tolkien wrote it.",
                                "The end."]


def test_a_sentence_ends_after_its_closing_quote_or_bracket():
    text = 'She said "Go home." He left (at last.) Then (really!) he came back. Wow! what a film?! Yes.'
    assert sentences(text) == ['She said "Go home."', "He left (at last.)", "Then (really!) he came back.",
                               "Wow!", "what a film?!", "Yes."]


def test_an_ellipsis_ends_a_sentence_only_before_a_new_one():
    text = "It was fine... until it wasn't. The plot drags… Then it ends. Wait... What?"
    assert sentences(text) == ["It was fine... until it wasn't.", "The plot drags…", "Then it ends.",
                               "Wait...", "What?"]


def test_chinese_sentence_ends_need_no_space_and_keep_their_closing_quotes():
    text = "这部电影很好。演员很棒！你看过吗？“真的吗？”他问。结局……令人失望"
    assert sentences(text) == ["这部电影很好。", "演员很棒！", "你看过吗？", "“真的吗？”", "他问。", "结局……", "令人失望"]


def test_spans_point_into_the_text_in_order_and_a_wordless_piece_joins_the_sentence_before():
    text = "  Awful ending!!! Great film. :)\n\nNew paragraph without a period\nstill the same"
    split = split_sentences(text)
    assert split.texts(text) == ["Awful ending!!!", "Great film. :)", "New paragraph without a period\nstill the same"]
    ends = [e for span in split.spans for e in span]
    assert ends == sorted(ends) and split.notices == ()


def test_a_text_with_no_sentence_ends_is_read_in_pieces_with_a_notice():
    text = "and then the hero walks on " * 200  # 5,400 characters, not one sentence end
    split = split_sentences(text)
    assert len(split.spans) > 1 and all(b - a <= MAX_SENTENCE_CHARS for a, b in split.spans)
    assert [n.id for n in split.notices] == ["document.sentence_in_pieces"]
    assert "read in pieces" in split.notices[0].text and split.notices[0].params["n"] == 1
    assert " ".join(split.texts(text)) == text.strip()  # nothing lost, cut only at spaces


def test_one_enormous_word_is_cut_hard():
    split = split_sentences("x" * 10_000)
    assert [b - a for a, b in split.spans] == [MAX_SENTENCE_CHARS] * 20


def test_thousands_of_sentences_are_cut_with_a_notice_and_a_megabyte_does_not_hang():
    split = split_sentences("It was good. " * 5000)
    assert len(split.spans) == MAX_SENTENCES
    (cut,) = split.notices
    assert cut.id == "document.sentences_cut" and cut.params == {"total": 5000, "read": MAX_SENTENCES}
    assert "5,000 sentences" in cut.text
    for hostile in ("Mr. a. " * 150_000, ". " * 500_000, "!" * 1_000_000, "。" * 1_000_000):
        assert 1 <= len(split_sentences(hostile).spans) <= MAX_SENTENCES  # linear: seconds, not hours


def test_batched_sentences_get_the_same_log_odds_as_each_alone(classifier):
    model, tokenizer = classifier
    texts = ["Bad.", "A wonderful, moving and beautifully acted film with a great cast.",
             "The plot is thin, but the actors make it worth watching on a rainy afternoon at home."]
    batched, _ = sentence_log_odds(model, tokenizer, texts)
    alone = torch.cat([sentence_log_odds(model, tokenizer, [t])[0] for t in texts])
    assert torch.allclose(batched, alone, atol=1e-4)
    assert batched.std() > 0.5  # the sentences are told apart: the model is not degenerate


def test_short_texts_keep_todays_verdict(classifier):
    model, tokenizer = classifier
    short = ["A dull, boring and badly written mess.", "One of the best movies of the year: funny, warm and smart.",
             "Funny. Warm. Smart. " * 14,  # 280 characters, many sentences: still read whole
             "!!! :)"]  # no words: today's verdict (a guess, the app says) all the same
    for text in short:
        assert not reads_by_sentences(text)
        read = read_document(model, tokenizer, text)
        today = explain(model, tokenizer, text).probs
        assert not read.by_sentences and len(read.sentences) == 1 and read.method_id == "document.read_whole"
        assert read.label == max(today, key=today.get)
        assert read.probs == pytest.approx(today, abs=1e-5)


def test_a_long_review_is_read_by_sentences_and_the_running_verdict_ends_at_the_verdict(classifier):
    model, tokenizer = classifier
    assert len(REVIEW) > LONG_TEXT_CHARS and reads_by_sentences(REVIEW)
    read = read_document(model, tokenizer, REVIEW)
    assert read.by_sentences and len(read.sentences) == 8
    assert [s.text for s in read.sentences] == [REVIEW[s.start:s.end] for s in read.sentences]
    z = torch.tensor([s.log_odds for s in read.sentences])
    past = (z.abs() - SURE).clamp_min(0)  # each sentence's log-odds weighted by how far it is past sure
    weighted = (past * z).sum() / past.sum() if past.sum() > 0 else (z.abs() * z).sum() / z.abs().sum()
    assert read.running[-1] == pytest.approx(read.probs["positive"]) == pytest.approx(torch.sigmoid(
        weighted).item(), abs=1e-6)
    assert read.method_id == "document.sure_sentences" and read.method_params == {"n": 8}
    assert read.method == ("Read sentence by sentence: the verdict is the 8 sentences' log-odds, "
                           "each weighted by how far it is past 95% sure.")
    mean = read_document(model, tokenizer, REVIEW, method="mean_log_odds")
    assert mean.probs["positive"] == pytest.approx(torch.sigmoid(z.mean()).item(), abs=1e-6)


def test_the_running_verdict_shows_where_a_review_turns():
    model, tokenizer = load_model(ASSETS / "sentiment-pretrained").eval(), TextTokenizer.load(ASSETS / "sentiment-pretrained")
    read = read_document(model, tokenizer, REVIEW)
    labels = [s.label for s in read.sentences]
    assert labels[3] == "negative" and labels[-1] == "positive"
    assert min(read.running[:6]) < 0.5 < read.running[-1]  # negative after the dull first hour, positive at the end


def test_sentences_short_of_sure_count_nothing_once_one_sentence_is_sure():
    sure, weighted = COMBINE["sure_sentences"][0], COMBINE["confidence_weighted"][0]
    summary = [SURE - 0.5] * 6  # plot summary the model reads as fairly positive
    z = torch.tensor([*summary, -(SURE + 1)])  # then one sure complaint
    running = sure(z)
    assert torch.allclose(running[:6], weighted(z)[:6])  # before a sure sentence: confidence-weighted
    assert weighted(z)[-1] > 0 > running[-1] == pytest.approx(-(SURE + 1))  # after: only the complaint counts


def test_every_combination_method_gives_a_running_verdict_per_sentence(classifier):
    model, tokenizer = classifier
    finals = {}
    for method in COMBINE:
        read = read_document(model, tokenizer, REVIEW, method=method)
        assert len(read.running) == len(read.sentences) and all(0 <= p <= 1 for p in read.running)
        assert read.method_id == f"document.{method}"
        finals[method] = read.probs["positive"]
    assert len(set(finals.values())) == len(COMBINE)  # each method is its own rule


def test_bad_input_is_a_typed_error(classifier):
    model, tokenizer = classifier
    with pytest.raises(EmptyTextError):
        read_document(model, tokenizer, " \n ")
    with pytest.raises(ValueError, match="unknown method"):
        read_document(model, tokenizer, REVIEW, method="median")
