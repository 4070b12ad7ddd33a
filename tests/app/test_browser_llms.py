"""The real LLMs in a browser (issue 56), on tiny stand-ins made the way the real ones are (a GGUF of each
architecture, written with llama.cpp's writer, made into the LLM folder by lab/llms.py): Generate's chat mode
draws the template's tokens around the question from the LLMs' own queue; Attention labels the key/value heads
and the sliding-window layers; Tokens shows both tokenizers. One app of its own; screenshots go to
test-artifacts/llms-*.png."""

from __future__ import annotations

import pytest
import serving
from gguf_files import byte_level_vocab, write
from random_models import GEMMA, LLAMA, modern_lm
from test_browser import ARTIFACTS, Visit, browser  # noqa: F401 (browser: a fixture)

from lab import llms
from transformer_core.training import data

CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
          "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


@pytest.fixture(scope="module")
def llm_app(tmp_path_factory):
    root = tmp_path_factory.mktemp("llm-app")
    sources = {"smollm2": root / "smollm2", "gemma3": root / "gemma3"}
    for folder in sources.values():
        folder.mkdir()
    write(sources["smollm2"] / llms.SMOLLM2.gguf,
          modern_lm(LLAMA, vocab_size=len(byte_level_vocab()[0]), tie_embeddings=True, max_len=256), "llama",
          chat_template=CHATML)
    write(sources["gemma3"] / llms.GEMMA3.gguf, modern_lm(GEMMA, vocab_size=275, tie_embeddings=True, max_len=256,
                                                         sliding_window=5, global_every=6, n_layer=6), "gemma3")
    (sources["smollm2"] / "LICENSE").write_text("Apache-2.0")
    for name in llms.GEMMA3.licence_files:
        (sources["gemma3"] / name).write_text(name)
    kept = {name: getattr(data, name) for name in sources}
    try:
        for name, folder in sources.items():
            setattr(data, name, lambda folder=folder: folder)
        for llm in llms.LLMS.values():
            llms.make(llm, root / "llms")
    finally:
        for name, function in kept.items():
            setattr(data, name, function)
    port = serving.free_port()
    models = serving.model_dir(root / "models")
    process, _ = serving.start_app(port, "--model-dir", str(models), "--llm-dir", str(root / "llms"), timeout_s=300)
    yield f"http://127.0.0.1:{port}"
    process.terminate()
    process.wait(timeout=30)


@pytest.fixture
def visit(browser, llm_app):  # noqa: F811
    v = Visit(browser, llm_app)
    yield v
    v.context.close()
    assert v.errors == [], f"console errors: {v.errors}"


def test_chat_mode_draws_the_template_around_the_question_from_the_llms_queue(visit):
    visit.open("?tab=generate&text=the+cat+sat&decoding=greedy&new_tokens=5")
    panel = visit.page.locator("#tab-generate")
    panel.locator("#model").get_by_text("SmolLM2-135M-Instruct (real LLM", exact=False).click()
    panel.locator("#generate-run-llm").wait_for(state="visible")  # the LLMs' own queue
    panel.locator("#generate-run").wait_for(state="hidden")
    panel.locator("#chat input").check()
    panel.locator("#generate-run-llm").click()
    text = panel.locator("#generated-text")
    visit.page.wait_for_function("() => document.querySelector('#generated-text').innerText.includes('assistant')")
    drawn = text.inner_text()
    assert "<|im_start|>user↵\nthe cat sat<|im_end|>↵\n<|im_start|>assistant↵" in drawn, drawn
    assert "wrapped" in panel.inner_text()  # the notice counts the template's tokens and the question's
    ARTIFACTS.mkdir(exist_ok=True)
    visit.page.screenshot(path=str(ARTIFACTS / "llms-generate-chat.png"))


def test_a_picked_llm_brings_its_own_prompt_and_its_example_fills_the_chat_box(visit):
    visit.open("?tab=generate&lang=zh-CN")
    panel = visit.page.locator("#tab-generate")
    prompt = panel.locator("#text textarea")
    visit.page.wait_for_function("() => document.querySelector('#text textarea')?.value === 'ROMEO:\\n'")
    panel.locator("#model").get_by_text("Gemma 3 270M（真实大模型", exact=False).click()  # the Shakespeare LM's prompt was not typed
    visit.page.wait_for_function("() => document.querySelector('#text textarea')?.value === '床前明月光，'")
    prompt.fill("从前有座山")
    panel.locator("#model").get_by_text("SmolLM2-135M-Instruct（真实大模型", exact=False).click()
    panel.locator("#generate-run-llm").wait_for(state="visible")
    visit.page.wait_for_timeout(500)  # time for an answer that would replace it
    assert prompt.input_value() == "从前有座山"  # a typed prompt is the person's
    panel.get_by_text("What is the capital of France?", exact=True).click()  # the real LLMs' examples
    panel.locator("#chat input").wait_for(state="visible")  # Gradio's example had hidden it again
    visit.page.wait_for_function("() => document.querySelector('#chat input')?.checked")
    assert prompt.input_value() == "What is the capital of France?"
    panel.locator("#generate-run-llm").click()
    visit.page.wait_for_function("() => document.querySelector('#generated-text').innerText.includes('assistant')")
    assert "<|im_start|>user↵\nWhat is the capital of France?<|im_end|>" in panel.locator("#generated-text").inner_text()


def test_attention_labels_shared_key_value_heads_and_sliding_window_layers(visit):
    visit.open("?tab=attention&model=Gemma+3+270M+%28real+LLM%29&text=abc+abc+bcd+ab&layer=0&head=1")
    grid = visit.page.locator("#tab-attention #attention-grid .js-plotly-plot")
    grid.wait_for()
    visit.page.wait_for_function("() => document.querySelector('#attention-grid').textContent.includes('kv0')")
    titles = visit.page.locator("#tab-attention #attention-grid").text_content()
    # Gemma keeps one key/value head, said as one (the title read "1 key/value heads")
    assert "grouped-query attention: 8 query heads read each key/value head, 1 in all" in titles
    assert "sliding-window layer" in titles and "L0 ◧" in titles and "L5 ◧" not in titles  # every 6th is global
    head = visit.page.locator("#tab-attention #attention-head").text_content()
    assert "reads key/value head 0, shared with H0, H2" in head and "first token:" in head
    visit.page.locator("#tab-attention #attention-grid").screenshot(path=str(ARTIFACTS / "llms-attention-grid.png"))


def test_the_tokens_tab_shows_both_llm_tokenizers(visit):
    visit.open("?tab=tokens&text=the+cat+sat+in+2023")
    panel = visit.page.locator("#tab-tokens")
    visit.page.wait_for_function("() => document.querySelector('#tab-tokens').innerText.includes('Gemma 3 270M')")
    shown = panel.inner_text()
    assert "SmolLM2-135M-Instruct · byte-level BPE" in shown and "Gemma 3 270M · SentencePiece BPE" in shown
