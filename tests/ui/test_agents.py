"""What an agent gets (issue 61): each view's data as compact JSON within 64 KB, and MCP's refusals brief."""

import json

import gradio as gr
import numpy as np
import pytest
import torch

from lab import store
from transformer_core import DecoderLM, DecoderLMConfig, save_checkpoint
from transformer_core.tokenization import TextTokenizer
from ui import agents, events
from views.kit import Figure

BPE = "assets/shakespeare-bpe/tokenizer.json"
TEXT_5000 = ("天地玄黄，宇宙洪荒。To be, or not to be: that is the question. " * 100)[:5000]


def mcp_bytes(text: str) -> int:
    """What an answer costs as MCP sends it: written again as a JSON string, in a JSON-RPC message."""
    return len(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}},
                          ensure_ascii=False).encode())


@pytest.mark.parametrize("data", [
    {"tokens": [['"', 1, 1]] * 100_000},  # quotes: each written again escaped by MCP
    {"weights": np.random.default_rng(0).random((256, 768)).round(3).tolist()},
    {"text": "天" * 1_000_000},
], ids=["100,000 quote tokens", "a 256 x 768 matrix", "a million Chinese characters"])
def test_an_answer_fits_64_kb_as_mcp_sends_it_and_says_what_was_cut(data):
    said = agents.answer(data)
    assert mcp_bytes(said) <= agents.ANSWER_BYTES
    assert "each list holds its first" in json.loads(said)["cut"]


def test_a_small_answer_is_whole():
    assert json.loads(agents.answer({"weights": [[0.5, 0.5]]})) == {"weights": [[0.5, 0.5]]}


def test_tokenize_answers_every_tokenizers_tokens_with_ids_and_bytes_not_chips():
    said = json.loads(agents.tokenize("The cat 猫 😀"))
    assert "<div" not in json.dumps(said)
    bpe = TextTokenizer.load(BPE)
    spans = bpe.tokens("The cat 猫 😀")
    (shakespeare,) = [k for k in said["tokenizers"] if "shakespeare-bpe" in k["tokenizer"]]
    assert shakespeare["tokens"] == [[s.text, s.id, s.byte_end - s.byte_start] for s in spans]
    assert sum(n for _, _, n in shakespeare["tokens"]) == len("The cat 猫 😀".encode())


@pytest.fixture(scope="module")
def lm_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    torch.manual_seed(0)
    bpe = TextTokenizer.load(BPE)
    config = DecoderLMConfig(vocab_size=bpe.vocab_size, d_model=32, n_head=4, n_layer=2, d_ff=64, max_len=160)
    save_checkpoint(DecoderLM(config).eval(), root / "lm", bpe)
    store.set_model_dir(root)
    yield root
    store.set_model_dir(store.DEFAULT_MODEL_DIR)


def test_attention_answers_the_chosen_heads_weights(lm_dir):
    from lab import attention as use

    label = next(iter(use.models_offered()))
    said = json.loads(agents.attention(label, "The cat sat on the mat.", "decoder", 1, 3, 2))
    run = use.attention_run(label, "The cat sat on the mat.", "decoder")
    np.testing.assert_allclose(said["weights"], run.attn[1, 3], atol=5e-4)
    assert said["keys"] == run.k_labels and (said["layer"], said["head"]) == (1, 3)
    assert said["query"]["weights"] == said["weights"][2]


def test_attention_over_128_tokens_answers_each_querys_strongest_keys_within_64_kb(lm_dir):
    from lab import attention as use

    label = next(iter(use.models_offered()))
    said = agents.attention(label, TEXT_5000, "decoder", 0, 0, 0)
    assert mcp_bytes(said) <= agents.ANSWER_BYTES  # 224-237 KB of plotly JSON before
    data = json.loads(said)
    weights = use.attention_run(label, TEXT_5000, "decoder").attn[0, 0]
    assert "weights" not in data and len(data["strongest_keys"]) == len(weights)
    (key, weight), *_ = data["strongest_keys"][-1]
    assert key == int(weights[-1].argmax()) and weight == pytest.approx(weights[-1].max(), abs=5e-4)


def test_any_other_view_answers_its_texts_tables_and_figures_numbers():
    figure = Figure([{"type": "heatmap", "z": np.eye(2, dtype=np.float32), "x": ["a", "b"]}],
                    {"title": {"text": "<b>Head</b> 0"}})

    def view(text, lang="en"):
        """A view."""
        return "**bold** &amp; <span>spanned</span>", figure, [["x", 1.23456]], gr.Slider(maximum=3)

    with gr.Blocks():
        outputs = [gr.Markdown(), gr.Plot(label="Heads"), gr.Dataframe(headers=["token", "score"]), gr.Slider()]
    said = json.loads(agents.read_as_data(view, outputs)("hi"))["outputs"]
    assert said[0] == {"text": "**bold** & spanned"}
    assert said[1]["label"] == "Heads" and said[1]["title"] == "Head 0"
    assert said[1]["traces"][0]["z"] == [[1.0, 0.0], [0.0, 1.0]] and said[1]["traces"][0]["x"] == ["a", "b"]
    assert said[2] == {"headers": ["token", "score"], "rows": [["x", 1.235]]}
    assert len(said) == 3  # the slider's update sets the page, it is no answer


def test_an_endpoint_offered_to_agents_is_listed_as_its_data_twin_under_the_same_tool_name():
    from gradio.mcp import GradioMCPServer

    def tokenize(text: str, lang: str = "en"):
        """Page chips."""
        return f"<div>{text}</div>"

    def translate_fresh(text: str):
        """Not for agents."""
        return text

    with gr.Blocks() as demo:
        lang, text, chips = gr.State("en"), gr.Textbox(), gr.HTML()
        events.on(text.submit, tokenize, [text, lang], chips, api_name="tokenize")
        events.on(text.change, translate_fresh, text, chips, api_name="translate_fresh")
    agents.offer_tools(demo)
    assert GradioMCPServer(demo).tool_to_endpoint == {"tokenize": f"/tokenize{agents.SUFFIX}"}
    page = {fn.api_name: fn for fn in demo.fns.values()}
    assert page["tokenize"].api_visibility == "undocumented"  # still callable by name, as the page calls it
    assert page["tokenize_data"].concurrency_id == page["tokenize"].concurrency_id  # the same queue group
    assert page["tokenize_data"].fn("a cat") == agents.tokenize("a cat")  # the twin that answers tokens


def test_the_twins_are_wired_in_one_block_so_gradio_builds_its_server_app_once(monkeypatch):
    """Gradio renders the page's config and builds its server app each time a `with` block of the page closes; a
    block per twin did that ~40 times in the real app, most of its start-up."""
    from gradio.routes import App

    def page(text: str, lang: str = "en"):
        """A page view."""
        return text

    with gr.Blocks() as demo:
        lang, text, out = gr.State("en"), gr.Textbox(), gr.HTML()
        events.on(text.submit, page, [text, lang], out, api_name="tokenize")
        events.on(text.change, page, [text, lang], out, api_name="attention")
        events.on(text.blur, page, [text, lang], out, api_name="generate")
    built, create_app = [], App.create_app
    monkeypatch.setattr(App, "create_app", staticmethod(lambda *a, **k: built.append(1) or create_app(*a, **k)))
    agents.offer_tools(demo)
    assert {"tokenize_data", "attention_data", "generate_data"} <= {fn.api_name for fn in demo.fns.values()}
    assert len(built) == 1


class _Mcp:
    """What argument_refusal reads of Gradio's MCP server: a tool's input schema."""

    def get_input_schema(self, tool):
        if tool != "masking":
            raise ValueError(tool)
        return {"type": "object", "properties": {"causal": {"type": "boolean"},
                                                  "kind": {"type": "string", "enum": ["causal", "window"]}}}, []


@pytest.mark.parametrize("arguments, said", [
    ({"causal": "x" * 2_000_000}, "causal takes a value of type boolean, not 'xxx"),
    ({"kind": "x" * 2_000_000}, "kind: 'xxx"),
    ({"kind": ["causal"]}, "kind takes a value of type string, not ['causal']"),
], ids=["2 MB for a checkbox", "2 MB for a choice", "a list for a choice"])
def test_mcp_refuses_an_argument_naming_it_and_quoting_it_briefly(arguments, said):
    refusal = agents.argument_refusal(_Mcp(), "masking", arguments)
    assert said in refusal and len(refusal) <= 300  # 2,000,000 characters came back before
    assert agents.argument_refusal(_Mcp(), "masking", {"causal": True, "kind": "window"}) is None
    assert agents.argument_refusal(_Mcp(), "no such tool", arguments) is None  # MCP says so itself
