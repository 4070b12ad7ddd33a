"""The Generate tab's use cases: a prompt checked, sampled, stepped and beam-searched."""

import threading
import time

import pytest

import lab
from lab import policy
from lab.cache import clear_all


@pytest.fixture
def shipped_lm():
    from lab import generate as generation

    model, tokenizer, notice = generation.load(generation.SHIPPED)
    assert notice == ""
    return generation, model, tokenizer


def ask(generation, tokenizer, prompt="ROMEO:", mode="sample", max_new=6, seed=7, top_k=0, width=4, **knobs):
    """check() with the knobs this file varies; the rest at ordinary values."""
    knobs = {"temperature": 0.9, "top_p": 0.95, "min_p": 0.0, "repetition_penalty": 1.0, **knobs}
    return generation.check(generation.SHIPPED, tokenizer, lab.store.model("shakespeare-lm").config.max_len, prompt,
                            mode, knobs["temperature"], top_k, knobs["top_p"], knobs["min_p"],
                            knobs["repetition_penalty"], max_new, seed, width=width)


def test_generation_check_clamps_every_knob_and_says_so(shipped_lm):
    generation, model, tokenizer = shipped_lm
    request = ask(generation, tokenizer, max_new=500, seed=2**40, top_k=-3, width=99)
    assert (request.max_new_tokens, request.width, request.config.top_k, request.config.seed) == (
        200, 8, 0, 2**32 - 1)
    assert request.notices == ("New tokens can be 1 to 200; used 200.", "Beam width can be 1 to 8; used 8.",
                               "Top-k can be 0 to 1000000; used 0.", "Seed can be 0 to 4294967295; used 4294967295.")
    beam = ask(generation, tokenizer, mode="beam", max_new=500)
    assert beam.max_new_tokens == 40 and "New tokens (beam search) can be 1 to 40; used 40." in beam.notices
    long = ask(generation, tokenizer, prompt="word " * 400, mode="beam", max_new=40)
    room = model.config.max_len - 40  # beam search keeps prompt and new tokens in the context
    assert len(long.prompt_ids) == room and long.prompt_ids == tuple(tokenizer.encode("word " * 400)[-room:])
    assert f"only its last {room} tokens are used" in long.notices[-1]
    empty = ask(generation, tokenizer, prompt="", mode="greedy", temperature=5)
    assert empty.prompt_text == "\n" and empty.config.temperature == 0.0 and empty.notices == (
        "The prompt is empty, so the text starts from a new line.",)
    for bad, message in (({"mode": "nucleus"}, "Decoding must be one of"), ({"top_p": 0.0}, "slider back"),
                         ({"temperature": "hot"}, "slider back")):
        with pytest.raises(policy.InputError, match=message):
            ask(generation, tokenizer, **bad)


def test_a_seeded_generation_equals_itself_and_concurrent_equal_requests_share_one_run(shipped_lm, monkeypatch):
    generation, model, tokenizer = shipped_lm
    request = ask(generation, tokenizer, max_new=8)
    streamed = list(generation.generation(model, tokenizer, request))
    assert len(streamed) == 8 and len(streamed[-1].ids) == len(request.prompt_ids) + 8
    clear_all()  # computed again, not served: the seed alone makes it the same text
    assert generation.sampled(model, tokenizer, request).ids == streamed[-1].ids
    assert generation.sampled(model, tokenizer, ask(generation, tokenizer, max_new=8, seed=8)).ids != streamed[-1].ids

    clear_all()
    calls, sample_steps = [], generation.sample_steps

    def slow_steps(*args):
        calls.append(1)
        for session in sample_steps(*args):
            time.sleep(0.05)  # long enough for every request to arrive while it runs
            yield session

    monkeypatch.setattr(generation, "sample_steps", slow_steps)
    results = []
    threads = [threading.Thread(target=lambda: results.append(generation.sampled(model, tokenizer, request)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(calls) == 1 and len(results) == 4
    assert all(r.ids == streamed[-1].ids for r in results)
    assert len({id(r) for r in results}) == 4  # each caller its own copy to extend


def test_step_continues_a_copy_of_the_session_and_ends_where_generation_ends(shipped_lm):
    generation, model, tokenizer = shipped_lm
    request = ask(generation, tokenizer, max_new=5, repetition_penalty=1.2)
    session, seen = None, []
    for _ in range(5):
        before = None if session is None else (list(session.ids), len(session.records), session.rng_state.clone())
        extended = generation.step(model, tokenizer, request, session)
        if session is not None:  # the caller's session is as it was
            assert (session.ids, len(session.records)) == before[:2] and session.rng_state.equal(before[2])
            assert extended.ids[:-1] == session.ids
        seen.append(extended)
        session = extended
    assert [len(s.records) for s in seen] == [1, 2, 3, 4, 5]
    assert session.ids == generation.sampled(model, tokenizer, request).ids  # the same random stream
    other = ask(generation, tokenizer, max_new=5, seed=99)
    restarted = generation.step(model, tokenizer, other, session)  # a changed setting starts over
    assert len(restarted.records) == 1 and restarted.ids[: restarted.n_prompt] == list(other.prompt_ids)


def test_beam_search_of_width_one_is_greedy_and_wider_beams_rank_their_hypotheses(shipped_lm):
    generation, model, tokenizer = shipped_lm
    greedy = generation.sampled(model, tokenizer, ask(generation, tokenizer, mode="greedy", max_new=6))
    one = generation.beam(model, ask(generation, tokenizer, mode="beam", max_new=6, width=1))
    assert one.best.tokens == greedy.ids[greedy.n_prompt:]
    wide = generation.beam(model, ask(generation, tokenizer, mode="beam", max_new=6, width=4))
    assert len(wide.steps) == 6 and 1 < len(wide.hypotheses) <= 4
    scores = [h.score for h in wide.hypotheses]
    assert scores == sorted(scores, reverse=True) and wide.best.logprob >= one.best.logprob - 1e-6


def test_attention_while_generating_keeps_one_row_per_new_token_of_the_greedy_text(shipped_lm):
    generation, model, tokenizer = shipped_lm
    run = lab.while_generating_run("shakespeare-lm", "ROMEO:", 99)
    assert "New tokens can be 1 to 40; used 40." in run.notice and len(run.rows) == 40
    assert [r.shape[-1] for r in run.rows] == [run.n_prompt + s for s in range(40)]
    greedy = generation.sampled(model, tokenizer, ask(generation, tokenizer, mode="greedy", max_new=40))
    assert run.continuation == tokenizer.decode(greedy.ids[greedy.n_prompt:])  # one greedy text, two use cases
    with pytest.raises(policy.InputError, match="needs a language model"):
        lab.while_generating_run("sentiment", "A fine film", 5)


LONG_PROMPT = "word " * 1205 + "THE END OF MY PROMPT"  # 6,045 characters, more than the policy's 5,000


@pytest.mark.parametrize("mode", ["sample", "beam"])
def test_a_long_prompt_keeps_its_end_and_the_notices_agree(shipped_lm, mode):
    """Issue 33 item 6: the text was cut to its first 5,000 characters, then its last tokens kept."""
    generation, model, tokenizer = shipped_lm
    request = ask(generation, tokenizer, prompt=LONG_PROMPT, mode=mode)
    assert tokenizer.decode(list(request.prompt_ids)).endswith("THE END OF MY PROMPT")
    assert request.prompt_text.endswith("THE END OF MY PROMPT")
    assert "only the last 5,000 are used" in request.notices[0] and "first" not in " ".join(request.notices)


def test_the_length_penalty_says_it_changes_nothing_for_a_model_without_an_end_token(shipped_lm):
    """Issue 33 item 7: penalties 0, 1 and 2 give identical beams; the tab now says why."""
    generation, model, tokenizer = shipped_lm

    def beam(penalty):
        return generation.check(generation.SHIPPED, tokenizer, model.config.max_len, "KING:", "beam", 1.0, 0, 1.0,
                                0.0, 1.0, 6, 0, 3, penalty)

    results = [generation.beam(model, beam(p)) for p in (0.0, 1.0, 2.0)]
    assert len({tuple(r.best.tokens) for r in results}) == 1
    assert generation.NO_END_TOKEN in beam(2.0).notices and generation.NO_END_TOKEN not in beam(1.0).notices


def test_step_keeps_going_when_only_new_tokens_change_and_says_so_when_it_starts_over(shipped_lm):
    """Issue 33 item 10: Step silently restarted from the prompt when New tokens or beam settings changed."""
    generation, model, tokenizer = shipped_lm
    session = generation.step(model, tokenizer, ask(generation, tokenizer, max_new=5), None)
    session = generation.step(model, tokenizer, ask(generation, tokenizer, max_new=5), session)
    more = generation.step(model, tokenizer, ask(generation, tokenizer, max_new=50, width=2), session)
    assert len(more.records) == 3 and more.notice == ""
    restarted = generation.step(model, tokenizer, ask(generation, tokenizer, max_new=5, seed=99), more)
    assert len(restarted.records) == 1 and "Step started a new text from the prompt" in restarted.notice


def test_the_poetry_lm_is_offered_and_writes_chinese_from_a_classic_first_line():
    from lab import generate as generation

    assert generation.MODELS[generation.TANG] == "tang-poems-char"
    model, tokenizer, notice = generation.load(generation.TANG)
    assert notice == ""
    request = generation.check(generation.TANG, tokenizer, model.config.max_len, "\n\n舉頭望明月，低頭思故鄉。\n",
                               "sample", 0.8, 0, 1.0, 0.0, 1.0, 24, 0)
    assert any("converted to simplified" in n for n in request.notices)  # the model saw simplified characters
    session = generation.sampled(model, tokenizer, request)
    new = tokenizer.decode(session.ids[len(request.prompt_ids):])
    assert sum("\u4e00" <= c <= "\u9fff" for c in new) >= 12, new


def test_a_poem_of_the_poetry_lm_stops_at_its_blank_line():
    from lab import generate as generation

    model, tokenizer, _ = generation.load(generation.TANG)
    request = generation.check(generation.TANG, tokenizer, model.config.max_len, "\n\n床前明月光，疑是地上霜。\n",
                               "sample", 0.8, 0, 1.0, 0.0, 1.0, 120, 0)
    new = tokenizer.decode(generation.sampled(model, tokenizer, request).ids[len(request.prompt_ids):])
    assert new.endswith("\n\n") and "\n\n" not in new[:-2] and len(new) < 120, repr(new)
