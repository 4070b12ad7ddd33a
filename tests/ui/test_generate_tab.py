"""The Generate tab's handlers on a small stand-in model: streaming, Step mode, beam search,
the temperature panel, bad input and the GPT-2 picker offline and from a local copy."""

from __future__ import annotations

import json

import gradio as gr
import huggingface_hub
import pytest
import random_models

import transformer_core as tc
from transformer_core.tokenization import TextTokenizer
from lab import generate as use
from lab import store
from figures import figures
from ui import generate as tab
from lab.generate import GEMMA, MODELS, SHIPPED, SMOLLM2, TANG

BPE = "assets/shakespeare-bpe/tokenizer.json"
CONTEXT = 48
SETTINGS = dict(mode="sample", temperature=0.9, top_k=30, top_p=0.95, min_p=0.0, repetition_penalty=1.1,
                max_new_tokens=12, seed=3, width=3, length_penalty=1.0)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A tiny random DecoderLM with the real BPE, saved where the tab looks for the shipped LM."""
    folder = tmp_path_factory.mktemp("assets")
    tokenizer = TextTokenizer.load(BPE)
    model = random_models.lm(tokenizer.vocab_size, d_model=32, n_head=2, n_layer=1, d_ff=64, max_len=CONTEXT)
    tc.save_checkpoint(model, folder / "shakespeare-lm", tokenizer, "test model")
    return folder


@pytest.fixture(autouse=True)
def shipped(model_dir, monkeypatch):
    store.set_model_dir(model_dir)
    monkeypatch.setattr(tab, "STREAM_EVERY_S", 0)  # every token sent (the interval: its own test)
    yield
    store.set_model_dir(store.DEFAULT_MODEL_DIR)


def run(prompt="ROMEO:", model=tab.SHIPPED, **overrides):
    """Every update the main endpoint streams, for the given settings."""
    settings = {**SETTINGS, **overrides}
    return [figures(update) for update in tab.generate(model, prompt, *settings.values())]


def text_of(highlighted) -> str:
    return "".join(piece for piece, _ in highlighted)


class Clock:
    """A monotonic clock that moves `step` seconds each time it is read."""

    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def monotonic(self) -> float:
        self.now += self.step
        return self.now


def test_a_stream_sends_its_first_token_at_once_then_at_most_one_update_per_interval_then_the_whole_text(
        monkeypatch):
    monkeypatch.setattr(tab, "STREAM_EVERY_S", 0.1)
    monkeypatch.setattr(tab, "time", Clock(0.03))  # a read between tokens: ~30 tokens a second
    updates = run("JULIET:", max_new_tokens=12)
    streamed = [len(u[1]) for u in updates[:-1]]
    assert streamed[0] == 2  # the prompt and the first token, sent at once
    assert streamed == sorted(set(streamed)) and 2 < len(streamed) < 12  # fewer updates than tokens, each longer
    assert 2 <= min(b - a for a, b in zip(streamed, streamed[1:]))  # each update brings a few tokens
    session, tokenizer = updates[-1][6], store.tokenizer("shakespeare-lm")
    assert len(session.ids) == len(tokenizer.encode("JULIET:")) + 12  # the whole text at the end
    assert text_of(updates[-1][1]) == tokenizer.decode(session.ids)


def test_generation_streams_one_update_per_token_and_ends_with_the_core_result():
    updates = run()
    assert len(updates) == SETTINGS["max_new_tokens"] + 1
    lengths = [len(u[1]) for u in updates[:-1]]
    assert lengths == list(range(2, SETTINGS["max_new_tokens"] + 2))  # prompt + one more token each time
    notice, highlighted, slider, bars, _, _, session = updates[-1]
    model, tokenizer = store.model("shakespeare-lm"), store.tokenizer("shakespeare-lm")
    config = tc.SamplingConfig(temperature=0.9, top_k=30, top_p=0.95, repetition_penalty=1.1, seed=3)
    prompt = tokenizer.encode("ROMEO:")
    expected = tc.generate(model, prompt, SETTINGS["max_new_tokens"], choose=tc.Sampler(config))
    assert session.ids == prompt + expected
    assert text_of(highlighted) == tokenizer.decode(prompt + expected)
    assert [p for _, p in highlighted[1:]] == [round(r.chosen_prob, 3) for r in session.records]
    assert slider.maximum == SETTINGS["max_new_tokens"] - 1 and slider.value == slider.maximum
    assert "Step 11" in bars.layout.title.text


def test_the_same_seed_gives_the_same_text():
    assert run()[-1][1] == run()[-1][1]
    assert run()[-1][1] != run(seed=4, temperature=2.0)[-1][1]


def test_step_mode_builds_the_same_text_one_token_at_a_time():
    settings = {**SETTINGS, "max_new_tokens": 6}
    session = None
    for _ in range(6):
        *_, session = tab.step(session, tab.SHIPPED, "ROMEO:", *settings.values())
    assert session.ids == run(max_new_tokens=6)[-1][-1].ids
    # changing a setting starts a new text instead of continuing this one
    *_, fresh = tab.step(session, tab.SHIPPED, "ROMEO:", *{**settings, "seed": 9}.values())
    assert len(fresh.records) == 1


def test_generate_and_step_write_the_same_text_once_the_context_is_full():
    long = "To be, or not to be, that is the question. " * 20  # more tokens than the context holds
    settings = {**SETTINGS, "max_new_tokens": 30}
    session = None
    for _ in range(30):
        *_, session = tab.step(session, tab.SHIPPED, long, *settings.values())
    assert session.n_prompt == CONTEXT
    assert session.ids == run(prompt=long, max_new_tokens=30)[-1][-1].ids


def test_inspecting_a_step_draws_that_steps_candidates_with_the_chosen_token_marked():
    session = run()[-1][-1]
    fig = tab.inspect(session, tab.SHIPPED, 4)
    record = session.records[4]
    assert fig.layout.title.text.startswith("Step 4")
    first_stage = fig.data[0]
    assert len(first_stage.y) == len(record.candidates)
    chosen_row = record.candidates.index(record.chosen)
    assert fig.data[-1].marker.color[chosen_row] == "#f97316"
    # the repetition penalty is on, so its column is drawn: one bar trace per stage
    assert len(fig.data) == len(tc.decoding.sampling.STAGES)


def test_greedy_mode_ignores_the_temperature_slider():
    greedy = run(mode="greedy", temperature=1.7)[-1][-1]
    assert all(r.probs["temperature"][r.candidates.index(r.chosen)] == 1.0 for r in greedy.records)


def test_beam_mode_draws_the_tree_next_to_a_sampled_text():
    *_, last = run(mode="beam", max_new_tokens=8, width=3)
    notice, highlighted, _, _, tree, compare, _ = last
    model, tokenizer = store.model("shakespeare-lm"), store.tokenizer("shakespeare-lm")
    best = tc.beam_search_lm(model, tokenizer.encode("ROMEO:"), 3, 8).best
    assert text_of(highlighted) == "ROMEO:" + "".join(tokenizer.decode([t]) for t in best.tokens)
    assert len(highlighted) == 9 and all(0 <= p <= 1 for _, p in highlighted[1:])
    statuses = {trace.name for trace in tree.data if trace.name}
    assert {"kept", "pruned"} <= statuses
    assert text_of(compare).startswith("ROMEO:") and len(compare) == 9
    assert "Beam search (width 3)" in notice


def test_temperature_panel_gets_more_varied_as_temperature_rises(monkeypatch):
    monkeypatch.setattr(tab, "CONTRAST_NEW_TOKENS", 20)
    notice, cold, warm, hot = tab.contrast(tab.SHIPPED, "ROMEO:", 0)
    assert notice == ""
    mean_prob = [sum(p for _, p in text[1:]) / (len(text) - 1) for text in (cold, warm, hot)]
    assert mean_prob[0] > mean_prob[2]  # cold picks likelier tokens than hot


# ---------------------------------------------------------------- bad input


def test_empty_prompt_starts_from_a_new_line():
    notice, highlighted, *_ = run(prompt="")[-1]
    assert highlighted[0] == ("↵\n", None) and "new line" in notice  # a newline is drawn, then breaks the line


def test_a_prompt_longer_than_the_context_keeps_its_last_tokens_and_says_so():
    long = "To be, or not to be, that is the question. " * 20
    notice, _, _, _, _, _, session = run(prompt=long)[-1]
    assert session.n_prompt == CONTEXT and f"only its last {CONTEXT} tokens" in notice
    beam_notice = run(prompt=long, mode="beam", max_new_tokens=8)[-1][0]
    assert f"only its last {CONTEXT - 8} tokens" in beam_notice


def test_too_many_new_tokens_are_clamped_with_a_notice(monkeypatch):
    monkeypatch.setattr(use, "MAX_NEW_TOKENS", 15)  # the rule, not the app's limit of 200, is under test
    notice, *_, session = run(max_new_tokens=10_000)[-1]
    assert len(session.records) == 15 and "can be 1 to 15" in notice


@pytest.mark.parametrize("bad, message", [
    (dict(temperature=-0.5), "temperature"), (dict(top_k="some"), "Top-k"), (dict(top_p=0.0), "top_p"),
    (dict(top_p=1.5), "top_p"), (dict(mode="nucleus"), "Decoding"), (dict(max_new_tokens="many"), "New tokens"),
])
def test_bad_settings_give_a_clear_message_not_a_traceback(bad, message):
    with pytest.raises(gr.Error, match=message):
        run(**bad)


def test_step_refuses_beam_search_plainly():
    with pytest.raises(gr.Error, match="Step works with sample and greedy"):
        tab.step(None, tab.SHIPPED, "ROMEO:", *{**SETTINGS, "mode": "beam"}.values())


# ---------------------------------------------------------------- the GPT-2 picker


def test_a_negative_top_k_is_clamped_with_a_notice():
    notice, *_, session = run(top_k=-3, max_new_tokens=3)[-1]
    assert "Top-k can be 0 to" in notice and session.key[2].top_k == 0


def test_a_repeated_generation_gets_the_finished_text_at_once_and_another_seed_is_computed(monkeypatch):
    first = run(max_new_tokens=5)
    calls, sample_steps = [], use.sample_steps
    monkeypatch.setattr(use, "sample_steps", lambda *a: calls.append(a) or sample_steps(*a))
    again = run(max_new_tokens=5)
    # one update, the finished one: a lecture hall is not sent every token again, person by person
    assert calls == [] and len(first) > 5 and [u[1] for u in again] == [first[-1][1]]
    run(max_new_tokens=5, seed=11)  # another seed is another text: computed, not served
    assert len(calls) == 1


def test_lab_shares_one_generation_among_equal_requests_and_hands_out_copies(monkeypatch):
    model, tokenizer, _ = use.load(use.SHIPPED)
    request = use.check(use.SHIPPED, tokenizer, model.config.max_len, "ROMEO:", "sample", 0.9, 0, 1.0, 0.0, 1.0, 6, 3)
    streamed = list(use.generation(model, tokenizer, request))
    assert [len(s.records) for s in streamed] == [6] * 6  # one session, growing: yielded after each token
    calls, sample_steps = [], use.sample_steps
    monkeypatch.setattr(use, "sample_steps", lambda *a: calls.append(a) or sample_steps(*a))
    (cached,) = use.generation(model, tokenizer, request)  # the end at once, no stream
    assert calls == [] and cached.ids == streamed[-1].ids
    cached.ids.append(0)  # a caller extending its copy (Step) ...
    (again,) = use.generation(model, tokenizer, request)
    assert again.ids == streamed[-1].ids  # ... leaves the cached one as it was


def test_gpt2_offline_says_it_needs_the_hub_and_stays_on_the_shipped_model(monkeypatch):
    monkeypatch.setattr(store, "_gpt2_loaded", None)
    monkeypatch.setattr(store, "hub_reachable", lambda timeout=3.0: False)

    def offline(repo_id, local_files_only=False, **kwargs):
        assert local_files_only, "offline, only the local cache may be asked"
        raise huggingface_hub.errors.LocalEntryNotFoundError("not in the local cache")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    notice, highlighted, *_ = run(model=use.GPT2)[-1]
    assert "can reach neither the Hub nor a copy" in notice and "shipped Shakespeare model" in notice
    assert "Error" not in notice  # the Hub library's exception is for the server's log, not the student
    assert text_of(highlighted).startswith("ROMEO:")


def test_gpt2_from_a_downloaded_copy_runs_in_our_decoder(monkeypatch, tmp_path):
    transformers = pytest.importorskip("transformers")
    tokenizer = TextTokenizer.load(BPE)  # stands in for GPT-2's own tokenizer.json
    hf = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_embd=32, n_head=2, n_layer=1, n_positions=64,
                                                              vocab_size=tokenizer.vocab_size))
    hf.save_pretrained(tmp_path)
    tokenizer.save(tmp_path / "tokenizer.json")
    monkeypatch.setattr(store, "_gpt2_loaded", None)
    monkeypatch.setattr(store, "hub_reachable", lambda timeout=3.0: True)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda repo_id, **kwargs: str(tmp_path))
    model, _, notice = use.load(use.GPT2)
    assert notice == "" and model.config.n_layer == 1 and model.config.max_len == 64
    assert json.loads((tmp_path / "config.json").read_text())["n_embd"] == model.config.d_model
    notice, highlighted, *_ = run(model=use.GPT2, max_new_tokens=5)[-1]
    assert notice == "" and len(highlighted) == 6


def test_the_tab_registers_its_endpoints():
    with gr.Blocks() as demo:
        tab.build()
    names = {fn.api_name for fn in demo.fns.values()}
    assert {"generate", "generate_step", "generate_inspect", "generate_temperatures"} <= names


def test_the_tree_traces_the_winning_hypothesis_through_its_kept_nodes():
    from views import generate as views

    model, tokenizer = store.model("shakespeare-lm"), store.tokenizer("shakespeare-lm")
    result = tc.beam_search_lm(model, tokenizer.encode("KING:"), 4, 10)
    path = views.best_path(result)
    assert [c.token for c in path] == result.best.tokens
    assert sum(c.logprob for c in path) == pytest.approx(result.best.logprob, abs=1e-4)
    assert path[-1].cumulative == pytest.approx(result.best.logprob, abs=1e-5)


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_the_picker_says_what_each_model_is(lang):
    """Issue 60: "The capital of France is" -> a Shakespeare speech, and nothing said the model knows only plays."""
    _, line = tab.about(SHIPPED, lang)
    d_model = store.config(use.MODELS[SHIPPED])["d_model"]  # the real sizes, from the checkpoint's config
    assert ("Shakespeare's plays only" if lang == "en" else "只学过莎士比亚") in line and f"d_model {d_model}" in line


def test_gpt2_that_cannot_be_read_here_is_not_left_picked(monkeypatch):
    """Offline, GPT-2 falls back to the shipped model: the picker goes back to it and the line says why."""
    from i18n import Message

    monkeypatch.setattr(use, "load", lambda label: (None, None, Message("generate.gpt2_fallback", error="offline")))
    with pytest.warns(UserWarning, match="offline. Using the shipped Shakespeare model."):  # a toast: a phone's screen
        picker, line = tab.about(use.GPT2, "en")
    assert picker.value == SHIPPED and "offline. Using the shipped Shakespeare model." in line
    assert "Shakespeare's plays only" in line
    # the picker set back to the shipped model fires its change again: the line keeps saying why (it did not, and
    # a person saw the picker jump back with no reason)
    assert tab.about(SHIPPED, "en", line) == (gr.skip(), gr.skip())
    tang_line = tab.about(TANG, "en")[1]
    assert tab.about(SHIPPED, "en", tang_line)[1] == tab.about(SHIPPED, "en")[1]  # from another model: its own line


def test_a_picked_model_gets_its_start_prompt_only_where_the_prompt_was_another_models_start():
    assert tab.start_prompt(GEMMA, "ROMEO:\n") == "床前明月光，"
    assert tab.start_prompt(SHIPPED, "床前明月光，") == "ROMEO:\n"
    assert tab.start_prompt(SMOLLM2, "the cat sat") == gr.skip()  # typed: the person's
    assert all(model in MODELS for model, *_ in tab.LLM_EXAMPLES)
