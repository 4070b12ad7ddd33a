"""Predict, then reveal: the hall's bounds, secrets and hostile answers (named examples), and the model's answers."""

import pytest

from lab.policy import InputError

from lab import questions
from lab.questions import Hall, QuestionError


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def hall():
    return Hall(Clock())


def test_at_least_eight_questions_in_the_seeds_chapter_order():
    order = ["tokens", "attention", "masks", "sampling", "classifier", "translator", "forward", "llm"]
    chapters = [q.chapter for q in questions.QUESTIONS.values()]
    assert len(chapters) >= 8
    assert [order.index(c) for c in chapters] == sorted(order.index(c) for c in chapters)


def test_every_question_has_a_real_answer_computed_from_the_models():
    for q in (q for q in questions.QUESTIONS.values() if q.chapter != "llm"):  # the real LLMs: the next test
        real, choices = q.answer(), q.choices()
        if q.kind == "number":
            assert isinstance(real, int) and real > 0
        else:
            assert 0 <= real < len(choices) and len(set(choices)) == len(choices) >= 2, q.id
    assert questions.QUESTIONS["logit_count"].answer() == questions._lm_config()["vocab_size"]


def test_the_real_llms_questions_are_answered_by_the_models_themselves(llm_dir):
    from lab import llms

    llm_questions = [q for q in questions.QUESTIONS.values() if q.chapter == "llm"]
    assert len(llm_questions) >= 4
    with pytest.raises(InputError, match="tools.llms"):  # not made yet: the command that makes them
        questions.QUESTIONS["kv_heads"].answer()
    for llm in llms.LLMS.values():
        llms.make(llm, llm_dir)
    for q in llm_questions:
        real, choices = q.answer(), q.choices()
        assert 0 <= real < len(choices) if q.kind == "choice" else isinstance(real, int) and real >= 0, q.id
    assert questions.QUESTIONS["kv_heads"].answer() == 2 and questions.QUESTIONS["local_window"].answer() == 5


def test_a_question_is_asked_answered_and_revealed_with_each_own_answer_marked(hall):
    opened = hall.open("review_positive")
    assert hall.answer(opened.code, "ann", "0") == "0: yes"
    hall.answer(opened.code.lower(), "bob", "no")  # a code typed in lower case, a choice by its text
    assert hall.count(opened.code, opened.secret) == 2
    assert hall.seen_by(opened.code, "ann").result is None  # before the reveal: only her own answer
    assert hall.seen_by(opened.code, "ann").own == "0: yes"
    result = hall.reveal(opened.code, opened.secret)
    assert result.histogram == {"0: yes": 1, "1: no": 1} and result.n == 2
    assert result.real == "0: yes"  # the shipped classifier reads the review as positive
    assert hall.seen_by(opened.code, "bob").result == result and hall.seen_by(opened.code, "bob").own == "1: no"


def test_a_student_cannot_count_reveal_or_close_without_the_lecturers_secret(hall):
    opened = hall.open("causal_sees")
    for act in (hall.count, hall.reveal, hall.close):
        for forged in ("", None, opened.secret[:-1] + "x", opened.code):
            with pytest.raises(QuestionError, match="Only the page that opened"):
                act(opened.code, forged)
    assert hall.seen_by(opened.code, "ann").result is None


def test_forged_code_is_refused_and_changes_nothing(hall):
    opened = hall.open("causal_sees")
    hall.answer(opened.code, "ann", "5")
    for forged in ("ZZZZZ", "", None, "A" * 10_000, "<script>"):
        with pytest.raises(QuestionError, match="No open question has the code"):
            hall.answer(forged, "bob", "5")
    assert hall.count(opened.code, opened.secret) == 1


def test_answers_after_the_reveal_are_refused_and_earlier_ones_kept(hall):
    opened = hall.open("causal_sees")
    hall.answer(opened.code, "ann", "4")
    hall.reveal(opened.code, opened.secret)
    with pytest.raises(QuestionError, match="answers are closed"):
        hall.answer(opened.code, "ann", "5")
    with pytest.raises(QuestionError, match="answers are closed"):
        hall.answer(opened.code, "late", "5")
    assert hall.reveal(opened.code, opened.secret).histogram == {"4": 1, "5": 0}  # 5: the model's answer


def test_a_student_who_changes_their_answer_counts_once_with_the_last_answer(hall):
    opened = hall.open("causal_sees")
    hall.answer(opened.code, "ann", "3")
    hall.answer(opened.code, "ann", "5")
    hall.answer(opened.code, "bob", "5")
    assert hall.count(opened.code, opened.secret) == 2
    assert hall.reveal(opened.code, opened.secret).histogram == {"5": 2}


def test_ten_thousand_answers_from_one_client_keep_one_answer_and_lose_nobody_elses(hall):
    opened = hall.open("causal_sees")
    hall.answer(opened.code, "bob", "2")
    refused = 0
    for i in range(10_000):
        try:
            hall.answer(opened.code, "mallory", str(i % 7))
        except QuestionError as e:
            assert "changed your answer" in str(e)
            refused += 1
    assert refused > 8_000  # after MAX_CHANGES changes, every change is refused (sending the same answer is not one)
    assert hall.count(opened.code, opened.secret) == 2
    assert hall.reveal(opened.code, opened.secret).histogram["2"] >= 1


def test_a_full_question_refuses_newcomers_but_keeps_every_answer_and_lets_them_change(hall, monkeypatch):
    monkeypatch.setattr(questions, "MAX_ANSWERS", 3)
    opened = hall.open("causal_sees")
    for name in ("a", "b", "c"):
        hall.answer(opened.code, name, "1")
    with pytest.raises(QuestionError, match="the most it keeps"):
        hall.answer(opened.code, "d", "1")
    hall.answer(opened.code, "a", "2")
    assert hall.reveal(opened.code, opened.secret).histogram == {"1": 2, "2": 1, "5": 0}


@pytest.mark.parametrize("text", ["five", "", "1e400", "nan", "inf", "5 tokens", "٥x", "1" * 41])
def test_non_numeric_text_for_a_number_is_refused_and_keeps_the_previous_answer(hall, text):
    opened = hall.open("causal_sees")
    hall.answer(opened.code, "ann", "5")
    with pytest.raises(QuestionError, match="not a number|at most 40 characters"):
        hall.answer(opened.code, "ann", text)
    assert hall.seen_by(opened.code, "ann").own == "5"


def test_a_choice_that_is_not_offered_is_refused(hall):
    opened = hall.open("next_token")
    for bad in ("7", "-1", "banana", "1.5"):
        with pytest.raises(QuestionError, match="not one of the choices"):
            hall.answer(opened.code, "ann", bad)


def test_a_question_left_open_expires_and_its_answers_vanish(hall):
    opened = hall.open("causal_sees")
    hall.answer(opened.code, "ann", "5")
    hall._clock.now += questions.OPEN_FOR_S + 1  # the lecturer left
    with pytest.raises(QuestionError, match="No open question"):
        hall.answer(opened.code, "bob", "5")
    assert len(hall) == 0


def test_closing_removes_the_answers(hall):
    opened = hall.open("causal_sees")
    hall.answer(opened.code, "ann", "5")
    hall.close(opened.code, opened.secret)
    with pytest.raises(QuestionError, match="No open question"):
        hall.seen_by(opened.code, "ann")


def test_open_questions_are_bounded(hall, monkeypatch):
    monkeypatch.setattr(questions, "MAX_OPEN", 2)
    hall.open("causal_sees"), hall.open("causal_sees")
    with pytest.raises(QuestionError, match="close one first"):
        hall.open("causal_sees")


def test_a_number_histogram_keeps_the_most_common_values_and_counts_the_rest(hall):
    opened = hall.open("logit_count")
    for i in range(questions.MAX_BINS + 5):
        hall.answer(opened.code, f"s{i}", str(i))
    hall.answer(opened.code, "extra", "3")
    histogram = hall.reveal(opened.code, opened.secret).histogram
    # the top values, the model's answer (4096, given by nobody) and the rest together, named in each language
    assert len(histogram) == questions.MAX_BINS + 2 and histogram["3"] == 2 and histogram["4096"] == 0
    assert list(histogram)[-2:] == ["4096", questions.OTHER_VALUES]
    assert sum(histogram.values()) == questions.MAX_BINS + 6
