"""The app shell: flags, queue limits, GPU decorator, URL state, lecture presets, deploy."""

from __future__ import annotations

import gc
import re

import pytest

from lab.policy import MAX_CHARS


# --- flags -----------------------------------------------------------------------------------

import sys  # noqa: E402
import types  # noqa: E402

import gradio as gr  # noqa: E402

import app  # noqa: E402
import cli  # noqa: E402
import torch  # noqa: E402

import i18n  # noqa: E402
from lab import store  # noqa: E402
from gradio.state_holder import SessionState  # noqa: E402
from ui import agents, events, gradio_patches  # noqa: E402
from ui.links import (LECTURE_PRESETS, LINK_KEYS, REDRAW_LINKED, Links, apply, coerce, link_tabs, next_step,
                      previous_step, redraw_id, usable)
from ui.handlers import cached  # noqa: E402


def test_defaults_serve_locally_on_7860(monkeypatch):
    monkeypatch.delenv("GRADIO_SERVER_NAME", raising=False)
    monkeypatch.delenv("GRADIO_SERVER_PORT", raising=False)
    args = cli.parse_args([])
    assert (args.host, args.port, args.share, args.model_dir, args.hub_repo) == ("127.0.0.1", 7860, False, None, None)


def test_spaces_environment_variables_pick_host_and_port(monkeypatch):
    monkeypatch.setenv("GRADIO_SERVER_NAME", "0.0.0.0")
    monkeypatch.setenv("GRADIO_SERVER_PORT", "7861")
    args = cli.parse_args([])
    assert (args.host, args.port) == ("0.0.0.0", 7861)


def test_flags_override_everything(monkeypatch):
    monkeypatch.setenv("GRADIO_SERVER_PORT", "7861")
    args = cli.parse_args(["--host", "0.0.0.0", "--port", "9000", "--share", "--hub-repo", "me/lab"])
    assert (args.host, args.port, args.share, args.hub_repo) == ("0.0.0.0", 9000, True, "me/lab")


def test_each_model_call_gets_one_cpu_thread_unless_told_otherwise(monkeypatch, capsys):
    monkeypatch.delenv("TRANSFORMER_LAB_THREADS", raising=False)
    assert cli.parse_args([]).threads == 1
    monkeypatch.setenv("TRANSFORMER_LAB_THREADS", "2")
    assert cli.parse_args([]).threads == 2 and cli.parse_args(["--threads", "3"]).threads == 3
    with pytest.raises(SystemExit, match="at least 1"):
        app.main(["--threads", "0"])
    monkeypatch.setenv("TRANSFORMER_LAB_THREADS", "many")
    with pytest.raises(SystemExit):  # argparse's usage error names the value, no traceback
        cli.parse_args([])
    assert "invalid int value: 'many'" in capsys.readouterr().err
    threads = torch.get_num_threads()
    try:
        store.set_threads(1)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(threads)


def test_what_start_up_built_is_frozen_before_the_server_answers(monkeypatch):
    frozen = []

    class Served:
        def launch(self, **kwargs):
            frozen.append(gc.get_freeze_count())

    monkeypatch.setattr(store, "warm", lambda quiet_for: None)
    monkeypatch.setattr(app, "build_app", gr.Blocks)
    monkeypatch.setattr(app, "serve_queue", lambda demo: Served())
    gc.unfreeze()
    try:
        app.main([])
    finally:
        gc.unfreeze()
    assert frozen and frozen[0] > 0  # a full collection skips them: no pause walking the whole start-up


def test_model_dir_and_hub_repo_cannot_be_combined():
    with pytest.raises(SystemExit):
        cli.parse_args(["--model-dir", "x", "--hub-repo", "me/lab"])


def test_a_missing_model_dir_is_named_before_anything_starts(tmp_path):
    with pytest.raises(SystemExit, match="no such folder"):
        app.main(["--model-dir", str(tmp_path / "nope")])


def test_a_bad_device_is_named_before_anything_starts(monkeypatch):
    monkeypatch.setenv("TRANSFORMER_CORE_DEVICE", "gpu")
    with pytest.raises(SystemExit, match="^error: TRANSFORMER_CORE_DEVICE='gpu' is not a device"):
        app.main([])


def test_hub_repo_offline_says_what_to_do(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SystemExit) as e:
        cli.hub_model_dir("someone/transformer-lab-checkpoints")
    assert "someone/transformer-lab-checkpoints" in str(e.value) and "without --hub-repo" in str(e.value)


# --- queue limits and the GPU decorator ------------------------------------------------------

def _handlers():
    """Stand-ins for the tabs' handlers: a cheap one, a model's, a generation's and a training run's."""
    def tokenize(text):
        return text

    def attention(text):
        return text

    def generate(text):
        yield text

    def translate_train(text):
        return text

    return tokenize, attention, generate, translate_train


def _events_demo(handlers=None):
    """A stand-in for the tabs, wired as they are: the endpoints of `handlers`, plus private twins."""
    tokenize, attention, generate, translate_train = handlers or _handlers()
    with gr.Blocks() as demo:
        text, out = gr.Textbox(), gr.Textbox()
        events.on(text.change, tokenize, text, out, api_name="tokenize")
        events.on(gr.Button().click, attention, text, out, api_name="attention")
        events.on(text.submit, attention, text, out, api_name=False)
        events.on(gr.Button().click, generate, text, out, api_name="generate")
        events.on(gr.Button().click, translate_train, text, out, api_name="translate_train")
        events.on(gr.Button().click, tokenize, text, out, api_name="mine", api_visibility="private",
                  concurrency_limit=7)
    return demo


def _by_name(demo):
    return {fn.api_name: fn for fn in demo.fns.values()}


def test_every_event_gets_the_concurrency_its_endpoint_declares():
    demo = _events_demo()
    fns = _by_name(demo)
    assert fns["tokenize"].concurrency_limit == events.ENDPOINTS["tokenize"].limit
    assert (fns["generate"].concurrency_limit, fns["generate"].concurrency_id) == (2, "generation")
    assert fns["translate_train"].concurrency_limit == 1 and fns["translate_train"].concurrency_id == "training"
    assert fns["mine"].concurrency_limit == 7  # a tab's own choice is kept
    # the private text.submit twin shares the public endpoint's queue and limit
    assert fns["false"].concurrency_id == fns["attention"].concurrency_id
    assert fns["false"].concurrency_limit == events.ENDPOINTS["attention"].limit
    assert all(fn.concurrency_limit != "default" for fn in demo.fns.values())


def test_an_endpoint_the_table_does_not_declare_is_refused():
    with gr.Blocks():
        with pytest.raises(KeyError, match="undeclared"):
            events.on(gr.Button().click, lambda: None, None, None, api_name="undeclared")
    with gr.Blocks() as demo:  # wired around events.on: the app's last check still refuses it
        gr.Button().click(lambda: None, None, None, api_name="undeclared")
    with pytest.raises(KeyError, match="undeclared"):
        events.check_declared(demo)


def test_model_handlers_are_wrapped_with_spaces_gpu_when_spaces_is_installed(monkeypatch):
    wrapped = []

    def fake_gpu(fn):
        wrapped.append(fn.__name__)
        return fn

    monkeypatch.setitem(sys.modules, "spaces", types.SimpleNamespace(GPU=fake_gpu))
    _events_demo()
    assert sorted(wrapped) == ["attention", "attention", "generate", "translate_train"]  # never tokenize


def test_the_gpu_wrapper_keeps_a_handlers_cache(monkeypatch):
    monkeypatch.setitem(sys.modules, "spaces", types.SimpleNamespace(GPU=lambda fn: lambda *a: fn(*a)))

    @cached
    def view(text):
        return text

    assert events.on_gpu(view).cache is view.cache  # else Gradio would queue every cache hit
    with gr.Blocks() as demo:
        events.on(gr.Button().click, view, gr.Textbox(), gr.Textbox(), api_name="attention")
    (wired,) = demo.fns.values()
    assert wired.fn is not view and wired.fn.cache is view.cache


def test_an_input_wired_through_the_table_refuses_a_value_it_cannot_take_with_a_message():
    with gr.Blocks():
        slider, picker, out = gr.Slider(0, 10), gr.Dropdown([1, 2]), gr.Textbox()
        events.on(slider.release, lambda value, n: value, [slider, picker], out, api_name=False)
    with pytest.raises(gr.Error, match="it takes a number from 0 to 10"):
        slider.preprocess(float("inf"))
    assert picker.api_info() == {"type": "integer", "enum": [1, 2]}  # an agent sees whole numbers


def test_without_spaces_the_gpu_decorator_changes_nothing(monkeypatch):
    monkeypatch.setitem(sys.modules, "spaces", None)  # import spaces -> ImportError
    handlers = _handlers()
    demo = _events_demo(handlers)
    assert {fn.fn for fn in demo.fns.values()} == set(handlers)  # each event runs the very function it was given


def test_the_real_app_limits_every_public_endpoint_and_keeps_its_helpers_private():
    from lab import store

    store.set_model_dir(store.DEFAULT_MODEL_DIR)  # forget what earlier tests loaded
    demo = app.build_app()
    assert store._models == {}  # models load on first use: the first page must not wait for them
    assert SessionState.__init__ is gradio_patches._lazy_init  # a new visitor's session renders no configs
    public = [fn for fn in demo.fns.values() if fn.api_visibility == "public"]
    assert all(isinstance(fn.concurrency_limit, int) for fn in public)
    assert not [fn.api_name for fn in public if fn.fn.__qualname__.startswith("Links")]
    tab_ids = [str(t.id) for t in demo.blocks.values() if isinstance(t, gr.Tab)]
    order = ["tokens", "attention", "masking", "generate", "inside", "sentiment", "translate", "forward", "questions",
                 "concepts",
             "about"]
    assert tab_ids == [t for t in order if t in tab_ids] and tab_ids[-1] == "about"


# --- starting with no network and no data --------------------------------------------------

import inspect  # noqa: E402
import socket  # noqa: E402

import serving  # noqa: E402

from transformer_core import tasks  # noqa: E402
from transformer_core.training import data  # noqa: E402
import i18n  # noqa: E402
from lab import store  # noqa: E402

LOOPBACK = ("127.0.0.1", "::1", "localhost")
# sweeps that run a model dozens of times, on the same data-free paths as their tabs' main endpoints
SLOW_ENDPOINTS = {"translate_lengths", "generate_temperatures"}


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """An empty data cache, no package index and no connection beyond this machine.

    Yields the list of attempts to download or connect out; the app must make none."""
    attempts = []

    def refuse_download(package, dest):
        attempts.append(package.filename)
        raise data.DataError(f"offline: {package.filename} may not be downloaded")

    real_connect = socket.socket.connect

    def loopback_only(sock, address):
        if isinstance(address, tuple) and address[0] not in LOOPBACK:
            attempts.append(address[0])
            raise OSError(f"offline: no connection to {address[0]}")
        return real_connect(sock, address)

    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path / "empty-cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setattr(data, "_download", refuse_download)
    monkeypatch.setattr(socket.socket, "connect", loopback_only)
    tasks.word_pool.cache_clear()  # an earlier test may have read the corpus
    store.set_model_dir(serving.model_dir(tmp_path))
    yield attempts
    store.set_model_dir(store.DEFAULT_MODEL_DIR)
    tasks.word_pool.cache_clear()


def test_the_app_starts_and_every_tab_answers_with_no_network_and_no_data(offline):
    demo = app.build_app()
    # the public endpoints are the data twins of the page's (ui/agents.py): each runs its page view, then reads it
    endpoints = [fn for fn in demo.fns.values() if fn.api_visibility == "public" and "train" not in fn.api_name
                 and fn.api_name.removesuffix(agents.SUFFIX) not in SLOW_ENDPOINTS]
    assert {"tokenize", "attention", "masking", "generate", "classify", "translate"} <= {
        fn.api_name.removesuffix(agents.SUFFIX) for fn in endpoints}
    for fn in endpoints:  # each with the values the page opens with
        try:
            result = fn.fn(*(component.value for component in fn.inputs))
            if inspect.isgenerator(result):
                list(result)
        except gr.Error:
            pass  # a message for the person (e.g. "train a model first"), not a crash
    assert offline == []


# --- messages show user text as text --------------------------------------------------------

TAG = "<img src=x onerror=alert(1)>"


def _endpoint(demo, api_name: str):
    return next(fn for fn in demo.fns.values() if fn.api_name == api_name)


def test_every_error_message_shows_user_text_as_text(offline):
    demo = app.build_app()
    masking = _endpoint(demo, "masking")  # ?tab=masking&global_token_positions=<img src=x>
    args = [TAG if c.elem_id == "global_token_positions" else c.value for c in masking.inputs]
    with pytest.raises(gr.Error) as error:
        masking.fn(*args)
    assert "&lt;img src=x onerror=alert(1)&gt;" in error.value.message and "<img" not in error.value.message


def test_the_handler_adapter_escapes_refusals_keeps_streams_and_signatures(caplog):
    from lab import InputError
    from ui.handlers import handler

    def stream(text, evt: gr.SelectData):
        yield text
        raise InputError(f"bad {text}")

    def returning(text):
        raise InputError(f"bad {text}")

    streaming = handler(stream)
    assert inspect.isgeneratorfunction(streaming) and inspect.signature(streaming) == inspect.signature(stream)
    results = streaming("<b>", None)
    assert next(results) == "<b>"  # what a handler returns is left alone: outputs escape what they draw
    with pytest.raises(gr.Error) as error:
        next(results)
    assert error.value.message == "bad &lt;b&gt;" and not error.value.print_exception  # one log line, no traceback
    with caplog.at_level("WARNING", logger="transformer_lab"), pytest.raises(gr.Error, match="bad &lt;b&gt;"):
        handler(returning)("<b>")
    assert [r.getMessage() for r in caplog.records][-1] == "input refused: bad <b>"


def test_markdown_notices_quote_user_text_and_model_output_as_text(offline):
    from ui import masking

    from markdown_it import MarkdownIt

    generations, _ = masking.cheating(f"KING {TAG} HENRY", 3)
    shown = MarkdownIt("commonmark").render(generations)
    assert "<img" not in shown and "&lt;img" in shown


# --- links and lecture presets ---------------------------------------------------------------

def _tab_demo():
    with gr.Blocks() as demo:
        with gr.Tabs():
            with gr.Tab("Sampling", id="generate") as tab:
                text = gr.Textbox(label="Prompt (up to 5,000 characters)")
                model = gr.Dropdown(["shakespeare-lm", "gpt2"], label="Model")
                temperature = gr.Slider(0.1, 2.0, value=1.0, step=0.1, label="Temperature (0 = greedy)")
                top_k = gr.Slider(0, 100, value=40, step=1, label="Top-k")
                greedy = gr.Checkbox(label="Greedy")
                out = gr.Textbox(label="Output")
                gr.Button("Go", variant="primary").click(
                    lambda *a: "", [text, model, temperature, top_k, greedy], out, api_name="generate")
        keys = {"generate": {"text": ("generate", 0), "model": ("generate", 1), "temperature": ("generate", 2),
                             "top_k": ("generate", 3), "greedy": ("generate", 4)}}
        links = Links(demo, [tab], keys)
    return links, dict(text=text, model=model, temperature=temperature, top_k=top_k, greedy=greedy)


def test_inputs_are_named_by_the_link_table_not_by_their_labels():
    links, c = _tab_demo()
    assert list(links.tabs[0].components) == ["text", "model", "temperature", "top_k", "greedy"]
    assert links.tabs[0].components["temperature"] is c["temperature"]


def test_link_keys_of_the_real_app_survive_translated_labels():
    """Labels will be translated (Chinese next): every link parameter must find the same input anyway."""
    demo = app.build_app()
    tabs = [b for b in demo.blocks.values() if isinstance(b, gr.Tab)]
    before = {t.tab_id: {k: id(c) for k, c in t.components.items()} for t in link_tabs(demo, tabs)}
    for block in demo.blocks.values():
        if getattr(block, "label", None):
            block.label = "标签"
    after = {t.tab_id: {k: id(c) for k, c in t.components.items()} for t in link_tabs(demo, tabs)}
    assert after == before
    declared = {tab: set(keys) for tab, keys in LINK_KEYS.items()}
    assert {tab: set(keys) for tab, keys in after.items() if tab in declared} == declared  # every key resolves


def test_every_link_in_the_readme_names_real_parameters():
    from urllib.parse import parse_qsl, urlparse

    readme = (Path(app.__file__).parent / "README.md").read_text(encoding="utf-8")
    links = [dict(parse_qsl(urlparse(u).query)) for u in re.findall(r"https?://[^\s)`'\"]+\?tab=[^\s)`'\"]+", readme)]
    assert links
    for params in links:
        keys = LINK_KEYS.get(params["tab"], {})
        assert set(params) - {"tab", "lecture"} <= set(keys), params


def test_a_link_sets_each_input_and_clips_or_ignores_what_does_not_fit():
    links, c = _tab_demo()
    tab_id, values = apply(
        {"tab": "generate", "text": "ROMEO:", "model": "gpt2", "temperature": "99", "top_k": "nan",
         "greedy": "yes", "colour": "red"}, links.tabs)
    assert tab_id == "generate"
    assert values == {id(c["text"]): "ROMEO:", id(c["model"]): "gpt2", id(c["temperature"]): 2,
                      id(c["greedy"]): True}
    assert apply({"tab": "generate", "model": "llama"}, links.tabs) == ("generate", {})


def test_a_link_to_an_unknown_tab_changes_nothing():
    links, _ = _tab_demo()
    assert links.view({"tab": "nope", "text": "x"}) == [gr.skip()] * (2 + 5)


def test_link_text_is_cut_to_the_input_limit():
    links, c = _tab_demo()
    _, values = apply({"tab": "generate", "text": "a" * 100_000}, links.tabs)
    assert len(values[id(c["text"])]) == MAX_CHARS


def test_a_generated_link_reopens_the_same_view():
    links, c = _tab_demo()
    current = ["To be", "gpt2", 0.5, 40, True]  # top_k left at its default
    query = links.link("generate", *current)
    assert query == "?tab=generate&text=To+be&model=gpt2&temperature=0.5&greedy=true"
    from urllib.parse import parse_qsl
    update = links.view(dict(parse_qsl(query[1:])))
    assert update[1] == "generate"
    assert update[2:] == ["To be", "gpt2", 0.5, gr.skip(), True]


def test_page_load_reads_the_query_string_and_lecture_flag():
    links, _ = _tab_demo()
    request = types.SimpleNamespace(query_params={"tab": "generate", "text": "hi", "lecture": "1"})
    update = links.open_link("en", request)
    assert update[0].selected == "generate"
    assert update[2] == "hi" and update[-4] is True
    assert update[-3] == "generate"  # the tab whose view runs right after


def test_a_plain_visit_or_an_unknown_tab_runs_the_first_tabs_view():
    links, _ = _tab_demo()
    for params in ({}, {"tab": "nope", "text": "x"}):
        assert links.open_link("en", types.SimpleNamespace(query_params=params))[-3] == "generate"


def test_a_link_to_the_first_tab_draws_its_view_once(offline):
    """After a page load reads its link, only the browser's press of the opened tab's redraw button runs a view
    (ui/links.REDRAW_LINKED): a chain of the first tab's own on load drew a link to it, and every student's lecture
    link, twice, and drew it unseen under a link to any other tab."""
    demo = app.build_app()
    load = next(fn for fn in demo.fns.values() if fn.name == "open_link")  # the page load that reads the link
    chained, seen = [], {load._id}
    for fn in demo.fns.values():  # the events chained after the load, at any depth
        if fn.trigger_after in seen:
            seen.add(fn._id)
            chained.append(fn)
    assert chained and [fn.name for fn in chained if fn.fn is not None and fn.queue is not False] == []


def test_every_lecture_step_names_a_tab_whose_view_then_runs():
    links, _ = _tab_demo()
    for name, preset in LECTURE_PRESETS.items():
        assert links.open_preset(name)[-1] == (preset["tab"] if preset["tab"] == "generate" else "")


def test_a_link_a_lecture_step_or_the_switch_runs_one_view_the_shown_tabs_in_the_pages_language(offline):
    """Each tab's view runs from its own hidden redraw button, pressed in the browser after a link, a lecture step
    or the switch: one event for one tab (an event per tab cost the page a second), in the switch's language."""
    demo = app.build_app()
    by_id = {b.elem_id: b for b in demo.blocks.values() if getattr(b, "elem_id", None)}
    switch, linked = by_id["lang"], by_id["linked-tab"]
    for api_name, tab in (("attention", "attention"), ("generate", "generate"), ("tokenize", "tokens")):
        endpoint = _endpoint(demo, api_name)
        redraw = by_id[redraw_id(tab)]
        runs = [fn for fn in demo.fns.values() if any(target[0] == redraw._id for target in fn.targets)
                and [c._id for c in fn.outputs] == [c._id for c in endpoint.outputs]]
        assert len(runs) == 1, api_name
        language = [c for c in endpoint.inputs if isinstance(c, gr.State)]
        assert [c for c in runs[0].inputs if c is not switch] == [c for c in endpoint.inputs if c not in language]
        assert switch in runs[0].inputs
    # every event that opens a view ends by pressing the opened tab's button, and no view runs on its own
    pressing = [fn for fn in demo.fns.values() if fn.js == REDRAW_LINKED]
    assert len(pressing) == 4 and all(fn.inputs == [linked] for fn in pressing)  # load, step picker, back, next
    from ui.links import SWITCH_JS
    assert redraw_id("") in SWITCH_JS  # the switch presses the shown tab's


def test_every_event_shows_its_progress_on_one_component_at_most(offline):
    """Gradio refreshes, at every status message of any event, the status of each component an event ever showed
    progress on, copying its whole value (ui/events.show_progress_once). Opening a link (on load) sets about 80
    components and a view sends up to 21 outputs: were they all progress targets, every later click would pay
    for all of them, and a page would grow slower the longer it is used (benchmarks/lecture_walk.py)."""
    demo = app.build_app()
    page = [fn for fn in demo.fns.values() if fn.targets]  # what the page runs (not the agents' twins)
    instant = [fn for fn in page if not fn.queue and fn.api_visibility == "private"]
    open_link = max(instant, key=lambda fn: len(fn.outputs))
    assert len(open_link.outputs) > 50 and open_link.show_progress_on == []
    assert all(fn.show_progress_on == [] for fn in page if fn.show_progress == "hidden")
    shown = [fn for fn in page if fn.show_progress != "hidden"]
    assert len(shown) >= 50 and all(len(fn.show_progress_on) <= 1 for fn in shown)
    # a view's spinner is on its figure: the attention view sends a note first, then its figures
    attention = next(fn for fn in shown if fn.api_name == "attention")
    assert len(attention.outputs) > 1 and isinstance(attention.show_progress_on[0], gr.Plot)
    assert attention.show_progress_on[0] is next(o for o in attention.outputs if isinstance(o, gr.Plot))


def test_lecture_steps_walk_the_presets_in_order_and_stop_at_the_ends():
    names = list(LECTURE_PRESETS)
    assert next_step(None) == names[0]
    assert next_step(names[0]) == names[1]
    assert previous_step(names[0]) == names[0]
    assert next_step(names[-1]) == names[-1]
    for lang in i18n.LANGUAGES:  # each step's name, in either language, starts with its number
        assert [i18n.t(f"lecture.{n}", lang).split(".")[0] for n in names] == [str(i) for i in range(1, len(names) + 1)]


def test_every_lecture_preset_opens_a_real_tab():
    ids = {"tokens", "attention", "masking", "generate", "inside", "sentiment", "translate", "forward", "questions", "concepts",
           "about"}
    assert all(p["tab"] in ids for p in LECTURE_PRESETS.values())


# --- deploying to a Space --------------------------------------------------------------------

from pathlib import Path  # noqa: E402

from huggingface_hub.utils import filter_repo_objects  # noqa: E402

from tools import deploy  # noqa: E402

SPACE_TREE = {
    "app.py": "", "README.md": "---\nsdk: gradio\n---\n", "requirements.txt": "", "requirements-dev.txt": "",
    "transformer_core/__init__.py": "", "transformer_core/__pycache__/hub.cpython-311.pyc": "",
    "ui/tokens.py": "", "lab/policy.py": "", "views/attention.py": "",
    "assets/shakespeare-lm/model.safetensors": "w", "assets/shakespeare-lm/config.json": "{}",
    "assets/shakespeare-lm/tokenizer.json": "{}", "assets/shakespeare-lm/README.md": "card",
    "assets/shakespeare-lm/history.json": "[]", "assets/screenshots/tokens.png": "png",
    "tests/test_app.py": "", "benchmarks/load.py": "", ".ci/run": "", "runs/lm/state.pt": "x",
    ".cache/data/shakespeare.txt": "x", ".git/HEAD": "x", "test-artifacts/tokens.png": "x",
}


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_space_gets_the_app_its_packages_and_checkpoints_and_nothing_else(tmp_path):
    assert deploy.space_files(_tree(tmp_path, SPACE_TREE)) == [
        "README.md", "app.py",
        "assets/screenshots/tokens.png",
        "assets/shakespeare-lm/README.md", "assets/shakespeare-lm/config.json",
        "assets/shakespeare-lm/history.json", "assets/shakespeare-lm/model.safetensors",
        "assets/shakespeare-lm/tokenizer.json",
        "lab/policy.py", "requirements.txt", "transformer_core/__init__.py", "ui/tokens.py", "views/attention.py",
    ]


def test_the_real_repository_uploads_every_module_the_app_imports():
    files = deploy.space_files()
    assert {"app.py", "README.md", "requirements.txt", "ui/handlers.py", "lab/store.py", "views/attention.py",
            "transformer_core/model/layers.py", "lab/policy.py"} <= set(files)
    # what app.py reads besides modules: the command line, the catalogue, the page's scripts and style
    assert {"cli.py", "i18n/__init__.py", "i18n/en.json", "i18n/zh-CN.json", "ui/page.js", "ui/page.css",
            "ui/gradio_patches.js", "ui/plotly/zh-cn.js"} <= set(files)
    assert "tools/deploy.py" not in files
    assert not [f for f in files if f.startswith(("tests/", "runs/", ".cache/", "benchmarks/", "test-artifacts/"))]


class FakeHub:
    """Records what deploy asks of the Hub; uploads nothing."""

    def __init__(self, fail: Exception | None = None):
        self.calls, self.fail = [], fail

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))
        if self.fail:
            raise self.fail

    def upload_folder(self, **kwargs):
        self.calls.append(("upload_folder", kwargs["repo_id"], kwargs))


def test_deploy_creates_a_gradio_space_and_uploads_exactly_the_dry_run_list(tmp_path):
    root = _tree(tmp_path, SPACE_TREE)
    hub = FakeHub()
    assert deploy.deploy_space("me/lab", root, api=hub) == "https://huggingface.co/spaces/me/lab"
    (_, repo, create), (_, _, upload) = hub.calls
    assert repo == "me/lab" and create == {"repo_type": "space", "space_sdk": "gradio", "exist_ok": True,
                                           "private": False}
    assert upload["folder_path"] == str(root) and upload["repo_type"] == "space"
    # what upload_folder will do with those patterns (plus its own .git ignores) is the dry-run list
    everything = sorted(p.relative_to(root).as_posix() for p in root.glob("**/*") if p.is_file())
    sent = filter_repo_objects(everything, allow_patterns=upload["allow_patterns"],
                               ignore_patterns=upload["ignore_patterns"] + [".git/*"])
    assert list(sent) == deploy.space_files(root)


def test_a_failed_upload_names_the_repo_and_never_the_token(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_secret_token_value")
    hub = FakeHub(fail=RuntimeError("401 Unauthorized for token hf_secret_token_value"))
    with pytest.raises(deploy.DeployError) as e:
        deploy.deploy_space("me/lab", _tree(tmp_path, SPACE_TREE), api=hub)
    assert "me/lab" in str(e.value) and "HF_TOKEN" in str(e.value) and "hf_secret" not in str(e.value)


def test_checkpoints_go_to_a_model_repo_one_folder_each_as_app_hub_repo_reads_them(tmp_path):
    root = _tree(tmp_path, SPACE_TREE)
    assert deploy.model_files(root / "assets") == [
        "shakespeare-lm/README.md", "shakespeare-lm/config.json", "shakespeare-lm/model.safetensors",
        "shakespeare-lm/tokenizer.json"]
    hub = FakeHub()
    deploy.deploy_models("me/lab-models", root / "assets", api=hub)
    assert hub.calls[0][2]["repo_type"] == "model" and hub.calls[1][2]["allow_patterns"] == deploy.MODEL_ALLOW


def test_dry_run_prints_the_file_list_and_touches_no_network(capsys, monkeypatch):
    monkeypatch.setattr(deploy, "HfApi", None)  # any Hub call would fail loudly
    deploy.main(["--space", "me/lab", "--dry-run"])
    out = capsys.readouterr().out.splitlines()
    assert out[:-1] == deploy.space_files() and out[-1].startswith(f"{len(out) - 1} files, ")


# --- the README is also the Space's configuration --------------------------------------------

import yaml  # noqa: E402
from packaging.requirements import Requirement  # noqa: E402


def _front_matter() -> dict:
    text = (Path(app.__file__).parent / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n"), "README.md must begin with the Space's YAML front matter"
    return yaml.safe_load(text.split("---\n")[1])


def test_readme_front_matter_configures_a_gradio_space():
    meta = _front_matter()
    assert {"title", "emoji", "colorFrom", "colorTo", "sdk", "sdk_version", "app_file", "license",
            "short_description"} <= set(meta)
    assert meta["sdk"] == "gradio" and meta["app_file"] == "app.py"
    assert len(meta["short_description"]) <= 60  # the Hub's limit


def test_the_space_runs_the_gradio_version_requirements_allow():
    lines = (Path(app.__file__).parent / "requirements.txt").read_text().splitlines()
    gradio = next(Requirement(line.split("#")[0]) for line in lines if line.startswith("gradio"))
    assert gradio.specifier.contains(_front_matter()["sdk_version"])


def test_every_lecture_preset_setting_names_a_real_input_of_the_app():
    demo = app.build_app()
    linked = {t.tab_id: t for t in link_tabs(demo, [b for b in demo.blocks.values() if isinstance(b, gr.Tab)])}
    ids = {b.elem_id for b in demo.blocks.values()}
    for name, preset in LECTURE_PRESETS.items():
        settings = {k: v for k, v in usable(preset).items() if k not in ("tab", "focus")}
        assert preset.get("focus", "#").removeprefix("#") in ids | {""}, f"{name}: no element {preset['focus']}"
        if preset["tab"] in linked:  # a tab still being built is not registered yet
            components = linked[preset["tab"]].components
            assert set(settings) <= set(components), f"{name}: {set(settings) - set(components)}"
            assert all(coerce(components[k], v) is not None for k, v in settings.items()), name


def test_ci_runs_the_test_command_the_readme_shows():
    import subprocess

    root = Path(app.__file__).parent
    reads = next(line for line in (root / ".ci" / "run").read_text().splitlines() if line.startswith("test_command="))
    found = subprocess.run(["bash", "-c", f"{reads}; printf %s \"$test_command\""], cwd=root, capture_output=True,
                           text=True, check=True).stdout
    assert found.endswith("python -m pytest -q") and f"```bash\n{found}\n```" in (root / "README.md").read_text()


def test_the_readme_is_for_its_readers_short_lines_and_the_rest_in_docs():
    root = Path(app.__file__).parent
    lines = (root / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200 and max(map(len, lines)) <= 120
    for linked in re.findall(r"\]\(((?:docs|benchmarks)/[^)]+)\)", "\n".join(lines)):
        assert (root / linked).is_file(), linked


def test_every_image_the_readme_shows_is_in_the_repository():
    root = Path(app.__file__).parent
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", (root / "README.md").read_text(encoding="utf-8"))
    assert images and [i for i in images if not (root / i).is_file()] == []
    assert {f"assets/screenshots/{t}.png" for t in ("tokens", "attention", "masking", "generate", "sentiment",
                                                     "translate", "concepts")} <= set(images)


def test_a_linked_model_sizes_the_masking_sliders():
    """A link or lecture step naming SmolLM2 (30 layers x 9 heads) left Masking's sliders at the Shakespeare LM's
    6 x 6: they were sized on a person's pick only (`input`), not on a set value (`change`)."""
    from ui import masking

    demo = app.build_app()
    (sizing,) = [fn for fn in demo.fns.values() if fn.fn is masking.picked]
    assert [event for _, event in sizing.targets] == ["change"]
