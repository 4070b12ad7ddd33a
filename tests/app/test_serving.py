"""What each event gets from the server: its queue, a GPU, a place among an agent's tools, and what
a client that sends the wrong types hears back."""

from __future__ import annotations

import json
import threading
import time
import urllib.request

import gradio as gr
import pytest
import serving

import app
from lab import store
from ui import agents
from ui.handlers import cached
from test_robustness import post_raw

GENERATING = {"generate", "generate_step", "generate_temperatures", "attention_generate", "cheating"}
NOT_FOR_AGENTS = {"translate_train", "generate_step", "generate_inspect", "translate_fresh"}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    store.set_model_dir(serving.model_dir(tmp_path_factory.mktemp("models")))
    yield app.build_app()
    store.set_model_dir(store.DEFAULT_MODEL_DIR)


def _named(demo, name):
    return next(fn for fn in demo.fns.values() if fn.api_name == name)


def test_two_generations_at_once_is_one_app_wide_limit_and_one_for_the_real_llms(demo):
    """Every event that generates text shares one group of 2, its private triggers and link runs included; the
    real LLMs' Generate buttons run the same functions in a group of their own, of one."""
    generating = [_named(demo, name) for name in GENERATING]
    functions = {id(fn.fn) for fn in generating}
    siblings = [fn for fn in demo.fns.values() if id(fn.fn) in functions]
    assert len(siblings) > len(generating)  # link runs and private triggers beside the buttons
    llm = {fn.api_name for fn in siblings if fn.concurrency_id == "llm"}
    assert llm == {"generate_llm", "generate_llm_step"}
    assert {(fn.concurrency_id, fn.concurrency_limit) for fn in siblings if fn.api_name not in llm} == {("generation", 2)}
    assert {(fn.concurrency_id, fn.concurrency_limit) for fn in siblings if fn.api_name in llm} == {("llm", 1)}


def test_every_cached_endpoint_lets_gradio_answer_a_hit_outside_the_queue(demo):
    for name in ("tokenize", "attention", "attention_generate", "masking", "generate", "classify", "translate"):
        assert hasattr(_named(demo, name).fn, "cache"), name  # Gradio's queue probes only functions with .cache


def test_a_cache_hit_is_answered_while_every_worker_is_busy():
    """The hit path skips the worker: one slot, held by a slow request, and a cached answer still comes at once."""
    release = threading.Event()

    def slow(text):
        release.wait(30)
        return text

    @cached
    def view(text):
        return text.upper()

    with gr.Blocks() as blocks:
        box, out = gr.Textbox(), gr.Textbox()
        gr.Button().click(slow, box, out, api_name="slow", concurrency_limit=1, concurrency_id="one")
        gr.Button().click(view, box, out, api_name="view", concurrency_limit=1, concurrency_id="one")
    port = serving.free_port()
    blocks.queue().launch(server_port=port, prevent_thread_lock=True, quiet=True)
    base = f"http://127.0.0.1:{port}"
    try:
        assert post_raw(base, "view", b'{"data": ["hit"]}') == ("complete", '["HIT"]')  # computed once
        holder = threading.Thread(target=post_raw, args=(base, "slow", b'{"data": ["x"]}'))
        holder.start()
        time.sleep(0.5)  # the only worker of the group is now busy
        t0 = time.perf_counter()
        answer = post_raw(base, "view", b'{"data": ["hit"]}')
        waited = time.perf_counter() - t0
        release.set()
        holder.join(30)
        assert answer == ("complete", '["HIT"]') and waited < 2, f"waited {waited:.1f} s behind the busy worker"
    finally:
        release.set()
        blocks.close()


# ---------------------------------------------------------------- served, as a client sees it


@pytest.fixture(scope="module")
def server(served_app):
    """The base url of the one app process the app tests share (tests/app/conftest.py)."""
    return served_app[0]


def test_mcp_lists_only_tools_an_agent_can_call_with_their_real_types(server):
    with urllib.request.urlopen(f"{server}/gradio_api/mcp/schema", timeout=30) as response:
        listed = json.loads(response.read())
    tools = {tool["meta"]["endpoint_name"].removesuffix(agents.SUFFIX): tool for tool in listed}  # the data twins
    assert {"tokenize", "attention", "generate", "classify", "translate"} <= set(tools)
    assert not NOT_FOR_AGENTS & set(tools)  # a session's gr.State, or the app's one training slot
    layer = tools["translate"]["inputSchema"]["properties"]["layer"]
    assert layer["type"] == "integer" and layer["enum"] == [-1, 0, 1, 2]
    d_model = tools["concepts_parameters"]["inputSchema"]["properties"]["d_model"]
    assert d_model["type"] == "integer" and 64 in d_model["enum"]


@pytest.mark.parametrize("tool, arguments", [
    ("tokenize", {"text": ("天地玄黄，宇宙洪荒。To be, or not to be: that is the question. " * 100)[:5000]}),
    ("attention", {"text": "To be, or not to be: that is the question. " * 120}),
    ("positions", {"n_positions": 256, "d_model": 256}),
], ids=["tokenize 5,000 characters", "attention 128 tokens", "positions 256 x 256"])
def test_an_mcp_tool_answers_data_of_at_most_64_kb(server, tool, arguments):
    from benchmarks import door

    size, result = door.mcp_request(server, "tools/call", {"name": tool, "arguments": arguments})
    assert not result["isError"] and size <= agents.ANSWER_BYTES  # 539 KB, 237 KB, 514 KB before (issue 61)
    data = json.loads(result["content"][0]["text"])
    assert "<div" not in result["content"][0]["text"] and '"layout"' not in result["content"][0]["text"]
    assert {"tokenize": "tokenizers", "attention": "queries", "positions": "outputs"}[tool] in data


@pytest.mark.parametrize("tool, argument", [("masking", "causal"), ("attention", "label"), ("ablate", "mode"),
                                            ("forward_stage", "stage"), ("attention", "group")])
def test_an_mcp_argument_of_2_mb_is_refused_quoting_80_characters(server, tool, argument):
    from benchmarks import door

    tool = {"ablate": "switch_off"}.get(tool, tool)
    size, result = door.mcp_request(server, "tools/call", {"name": tool, "arguments": {argument: "x" * 2_000_000}})
    said = result["content"][0]["text"]
    assert result["isError"] and len(said) <= 300 and "(2,000,000 characters)" in said and argument in said


@pytest.mark.parametrize("api_name, body", [
    ("translate", b'{"data": ["reverse", "1 2 3", [1, 2], "cross-attention", 0, "mean of heads"]}'),
    ("sentiment_compare_checkbox", None),
    ("concepts_scaling", b'{"data": [NaN, 8, 0]}'),
    ("concepts_scaling", b'{"data": [64, 1e400, 0]}'),
    ("concepts_order", b'{"data": ["a b c", 1' + b"0" * 400 + b']}'),
    ("attention", b'{"data": [["a list"], "hello", "decoder", 0, 0, 0]}'),
    ("attention", b'{"data": ["shakespeare-lm (language model)", "hello", "decoder", 1e400, 0, 0]}'),
    ("generate_temperatures", b'{"data": ["Shakespeare LM (shipped)", "ROMEO:", 1' + b"0" * 400 + b']}'),
    ("classify_compare", b'{"data": ["fine", ["a", "b"]]}'),
])
def test_wrong_types_over_http_get_a_clear_message(server, api_name, body):
    if body is None:
        api_name, body = "concepts_weighted_average", b'{"data": ["1 0\\n0 1", [true], "", "", "", false]}'
    event, data = post_raw(server, api_name, body)
    assert event == "error" and data not in ("null", ""), (event, data)
    assert json.loads(data)  # a message for the person, not {"error": null}


def test_the_load_benchmarks_socket_client_reads_an_answer_and_an_error_as_httpx_does(server):
    """benchmarks/load.py's light client (plain sockets, h11, gzip): a whole answer, and a gr.Error as an error."""
    import asyncio

    from benchmarks import load

    info = load.endpoints(f"{server}/")
    data = load._payload(info, "attention", {"model": "shakespeare-lm (language model)", "text": "To be or not."})
    stream = asyncio.run(load._exchange(f"{server}/", "POST", "/gradio_api/call/attention",
                                        json.dumps({"data": data, "session_hash": "socket-test"}).encode()))
    answer = asyncio.run(load._exchange(f"{server}/", "GET", f"/gradio_api/call/attention/{json.loads(stream)['event_id']}",
                                        until=(b"event: complete", b"event: error")))
    event, payload = answer.split(b"event: complete\n", 1)[1].split(b"\n", 1)[0].split(b": ", 1)
    assert event == b"data" and "layers" in json.loads(payload)[1]["plot"]  # the grid figure, gunzipped whole
    assert isinstance(asyncio.run(load._call_socket(f"{server}/", "attention", data, "socket-test")), float)
    empty = load._payload(info, "attention", {"model": "shakespeare-lm (language model)", "text": " "})
    with pytest.raises(RuntimeError, match="error"):
        asyncio.run(load._call_socket(f"{server}/", "attention", empty, "socket-test"))


def test_the_app_keeps_no_run_history_in_the_browser(server):
    """Gradio's run history rewrote every run's outputs in the browser's storage at each click (slower clicks)."""
    with urllib.request.urlopen(f"{server}/config", timeout=30) as response:
        assert json.loads(response.read())["run_history"] is False


def test_a_waiting_student_hears_their_place_once_a_second_not_at_every_start(server):
    """Gradio's default told every waiting client its place each time any job started: 3,683 messages on the
    one Python thread when 100 students asked for attention at once. The app tells it once a second."""
    import asyncio

    import httpx

    from benchmarks import load

    info = load.endpoints(f"{server}/")
    config = httpx.get(f"{server}/config").json()
    generate = next(d for d in config["dependencies"] if d["api_name"] == "generate")
    states = {c["id"] for c in config["components"] if c["type"] == "state"}  # the page sends them empty

    async def student(i: int) -> tuple[int, float]:
        """(the place-in-queue messages student i heard, seconds until their answer): a browser's two requests."""
        session = f"queue-{i}"
        values = iter(load._payload(info, "generate", {"prompt": f"ROMEO {i}:", "max_new_tokens": 8}))
        data = [None if block in states else next(values) for block in generate["inputs"]]
        body = {"data": data, "fn_index": generate["id"], "trigger_id": generate["targets"][0][0],
                "session_hash": session, "event_data": None}
        started = time.perf_counter()
        await load._exchange(f"{server}/", "POST", "/gradio_api/queue/join", json.dumps(body).encode())
        stream = await load._exchange(f"{server}/", "GET", f"/gradio_api/queue/data?session_hash={session}",
                                      until=(b'"msg":"process_completed"',))
        assert b'"success":true' in stream.split(b'"msg":"process_completed"', 1)[1]
        return stream.count(b'"msg":"estimation"'), time.perf_counter() - started

    async def class_of(n: int) -> list[tuple[int, float]]:
        return await asyncio.gather(*(student(i) for i in range(n)))

    heard = asyncio.run(class_of(12))  # generation runs two at a time: the last ones wait behind ten starts
    for messages, waited_s in heard:
        assert messages <= 2 + waited_s / app.STATUS_UPDATE_S, heard
