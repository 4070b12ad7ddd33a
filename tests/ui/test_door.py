"""The public door, unit by unit: link values, refusals in every kind of session (issue 49)."""

from __future__ import annotations

import json

import gradio as gr
import orjson
import pytest

from ui import events, gradio_patches
from ui.links import Links, coerce, link_notice
from ui.i18n import text as _


def test_a_link_number_past_an_integer_bound_is_clamped_on_python_311():
    # a bound given as an int made the clamped value an int, and int.is_integer() is new in Python 3.12
    assert coerce(gr.Slider(1, 256, step=1), "500") == 256
    assert coerce(gr.Slider(0, 11, step=1), "9") == 9
    assert coerce(gr.Slider(0, 11, step=1), "-3") == 0
    assert coerce(gr.Slider(0.0, 2.0, step=0.05), "7") == 2


def test_a_huge_seed_in_a_link_stays_a_number_the_page_can_carry():
    seed = coerce(gr.Number(0, precision=0), "1e30")
    orjson.dumps(seed)  # Gradio's encoder: an int past 64 bits raised here, a 500 for the page
    assert isinstance(seed, int) and 2**32 < seed <= 2**53
    assert json.loads(json.dumps(seed)) == seed


def test_a_clamped_link_number_is_told_as_a_slider_out_of_range_is():
    clamped = []
    with gr.Blocks():
        layer = gr.Slider(0, 11, step=1, label=_("setting.seed"))
    assert coerce(layer, "9", clamped) == 9 and clamped == []
    assert coerce(layer, "40", clamped) == 11
    assert link_notice(clamped, "en").value == "🔗 Seed can be 0 to 11; used 11."
    assert link_notice(clamped, "zh-CN").value.startswith("🔗 随机种子的范围是 0 到 11")
    assert link_notice([], "en").visible is False


@pytest.fixture(scope="module")
def links():
    import app

    demo = app.build_app()
    return Links(demo, [b for b in demo.blocks.values() if isinstance(b, gr.Tab)])


def test_every_linked_number_out_of_range_opens_with_a_notice_naming_its_input(links):
    from types import SimpleNamespace

    from ui.i18n import translated

    numbers = [(tab.tab_id, key, c) for tab in links.tabs for key, c in tab.components.items()
               if isinstance(c, (gr.Slider, gr.Number))]
    assert len(numbers) > 30
    for tab_id, key, component in numbers:
        for asked in ("1e30", "-1e30"):
            update = links.open_link("zh-CN", SimpleNamespace(query_params={"tab": tab_id, key: asked}))
            notice = update[-7]  # before the lecture controls, step and flag, the view to run and the language twice
            assert notice.visible and translated(component.label, "zh-CN") in notice.value, (tab_id, key, asked)
            assert "的范围是" in notice.value
    calm = links.open_link("en", SimpleNamespace(query_params={"tab": "attention", "layer": "1"}))
    assert calm[-5] == gr.skip()  # nothing clamped: the notice stays hidden



def _opened(links, query: dict) -> tuple[dict, object]:
    """What a link `query` sets, by (tab, key), and its notice."""
    from types import SimpleNamespace

    update = links.open_link(query.get("lang", "en"), SimpleNamespace(query_params=query))
    set_to = {(tab.tab_id, key): update[2 + links.components.index(c)] for tab in links.tabs
              for key, c in tab.components.items()}
    return set_to, update[-7]


@pytest.mark.parametrize("tab, name", [("attention", "sentiment-pretrained"), ("generate", "tang-poems-char"),
                                       ("forward", "translate-reverse"), ("inside", "shakespeare-lm")])
def test_a_link_names_a_model_by_its_checkpoint_in_every_tabs_picker(links, tab, name):
    # the Attention, Generate and Forward pickers hold labels ("sentiment-pretrained (classifier)"); a link naming
    # the checkpoint, as the Inside tab's picker, the API and the model cards do, was silently left out
    from lab import generate, models

    set_to, notice = _opened(links, {"tab": tab, "model": name.upper() if tab == "forward" else name})

    chosen = set_to[(tab, "model")]
    assert chosen != gr.skip() and (generate.checkpoint(chosen) or models.resolve(chosen)) == name, chosen
    assert notice == gr.skip()  # nothing refused, nothing said
    if tab == "attention":  # and the encoder's own attention, as picking it gives: not the default decoder's
        assert set_to[("attention", "attention")] == "encoder"



def test_a_made_link_names_the_model_by_its_checkpoint_and_reopens_it(links):
    attention = next(tab for tab in links.tabs if tab.tab_id == "attention")
    picker = attention.components["model"]
    label = next(value for _, value in picker.choices if "sentiment-pretrained" in str(value))
    values = [label if c is picker else c.value for c in links.components]
    query = links.link("attention", *values)
    assert query == "?tab=attention&model=sentiment-pretrained", query  # not the label, which may change
    set_to, notice = _opened(links, {"tab": "attention", "model": "sentiment-pretrained"})
    assert set_to[("attention", "model")] == label and notice == gr.skip()

def test_a_link_value_its_input_cannot_take_is_left_out_and_said_escaped_in_the_pages_language(links):
    set_to, notice = _opened(links, {"tab": "attention", "model": "<b>gpt-5</b>*", "layer": "two", "head": "1"})
    assert set_to[("attention", "model")] == gr.skip() and set_to[("attention", "layer")] == gr.skip()
    assert set_to[("attention", "head")] == 1  # the values it can take are used
    assert notice.visible and notice.value.startswith("🔗 Model cannot be ") and "Layer cannot be" in notice.value
    # shown as typed: Markdown's escapes, no tag and no emphasis
    assert "<b>" not in notice.value and "\\<b\\>gpt\\-5\\<\\/b\\>\\*" in notice.value
    _, notice = _opened(links, {"tab": "attention", "model": "gpt-5", "lang": "zh-CN"})
    assert notice.value.startswith("🔗 模型不能是 ") and "链接中的这个值没有使用" in notice.value

def _wired():
    with gr.Blocks():
        slider, picker, out = gr.Slider(0, 10, label=_("setting.seed")), gr.Dropdown(["a", "b"]), gr.Textbox()
        events.on(slider.release, lambda value, choice: value, [slider, picker], out, api_name=False)
    return slider, picker


def test_a_sessions_own_copy_of_an_updated_input_refuses_a_bad_value_with_a_message():
    # Gradio rebuilds an input a session's event updated (a slider's maximum) as block.__class__(**kwargs) and
    # preprocesses that session's values with the copy: the guard on the app's instance alone was lost there
    slider, picker = _wired()
    for component, bad in ((slider, ["a", "list"]), (picker, "bogus")):
        copy = type(component)(**{**component.constructor_args, "render": False})
        with pytest.raises(gr.Error, match="cannot be used"):
            copy.preprocess(bad)


def test_a_refusal_names_the_input_by_its_label_not_by_a_catalogue_marker():
    slider, _picker = _wired()
    with pytest.raises(gr.Error) as refused:
        slider.preprocess(["a", "list"])
    assert "__i18n__" not in str(refused.value) and "translation_metadata" not in str(refused.value)
    assert refused.value.message.startswith("Seed:")


@pytest.mark.parametrize("make, wrong, takes", [
    (lambda: gr.Dropdown(["a", "b"], value="a", label=_("setting.seed")), ["a"], "not one of the choices"),
    (lambda: gr.Radio(["x", "y"], value="x", label=_("setting.seed")), ["x", "y"], "not one of the choices"),
    (lambda: gr.Checkbox(label=_("setting.seed")), ["a", "list"], "true or false"),
    (lambda: gr.Checkbox(label=_("setting.seed")), "x" * 2_000_000, "true or false"),
    (lambda: gr.Slider(0, 5, label=_("setting.seed")), "3", "from 0 to 5"),
    (lambda: gr.Textbox(label=_("setting.seed")), ["a", "list"], "takes a text"),
], ids=["a list of offered choices for a picker", "a list for a radio", "a list for a checkbox",
        "2 MB of text for a checkbox", "a text for a slider", "a list for a text box"])
def test_a_value_of_the_wrong_kind_is_refused_before_the_handler_sees_it(make, wrong, takes):
    # Gradio passes a list of offered choices, or anything for a checkbox, on to the handler: an unhashable
    # cache key there was HTTP 500 at the queue's door (issue 61: ten joins)
    with gr.Blocks():
        component, out = make(), gr.Textbox()
        events.on(component.change, lambda value: value, component, out, api_name=False)
    with pytest.raises(gr.Error) as refused:
        component.preprocess(wrong)
    assert refused.value.message.startswith("Seed: this value cannot be used") and takes in refused.value.message
    assert len(refused.value.message) < 120


def test_values_of_the_right_kind_still_pass():
    with gr.Blocks():
        picker, box = gr.Dropdown([("one", 1), ("two", 2)], value=1), gr.Checkbox()
        slider, seed = gr.Slider(0, 5), gr.Number()
        events.on(picker.change, lambda *v: v[0], [picker, box, slider, seed], gr.Textbox(), api_name=False)
    assert picker.preprocess(2) == 2 and box.preprocess(False) is False and slider.preprocess(2.5) == 2.5
    assert picker.preprocess(None) is None and box.preprocess(None) is None
    # an int is finite however long (math.isfinite raised OverflowError: HTTP 500); its handler judges its range
    assert seed.preprocess(10**400) == 10**400


def test_a_handler_failing_where_no_refusal_foresaw_says_so_rather_than_nothing():
    from gradio import caching

    from i18n import t
    from ui.handlers import handler

    @handler
    def converts(text, lang="en"):
        return int(text)  # ValueError past 4,300 digits: Gradio sent such a failure with an empty (null) message

    with pytest.raises(gr.Error) as failed:
        converts("1" * 5000, lang="zh-CN")
    assert failed.value.message == t("common.server_failed", "zh-CN")

    @handler
    def probed(lang="en"):
        raise caching.CacheMissError()  # the queue's "not cached", which it must still read as such

    with pytest.raises(caching.CacheMissError):
        probed()


def test_a_handler_call_counts_as_running_until_it_returns_fails_or_its_stream_ends():
    # what a real LLM's generation gives way to (lab/llms.yield_to in app.py)
    from ui.handlers import handler, running

    seen = []

    @handler
    def answer(lang="en"):
        seen.append(running())
        return "ok"

    @handler
    def fails(lang="en"):
        seen.append(running())
        raise ValueError("boom")

    @handler
    def streams(lang="en"):
        yield running()
        yield running()

    before = running()
    assert answer() == "ok" and running() == before
    with pytest.raises(gr.Error):
        fails()
    stream = streams()
    assert [next(stream), running()] == [before + 1, before + 1]  # a stream runs until its last update
    assert list(stream) == [before + 1] and running() == before
    assert seen == [before + 1, before + 1]


def test_a_refusal_is_never_longer_than_300_characters():
    from lab.policy import InputError
    from ui.handlers import MESSAGE_CHARS, user_error

    assert MESSAGE_CHARS == 300
    assert len(user_error(InputError("a list of every model: " + "model, " * 10_000)).message) <= MESSAGE_CHARS


def test_a_refusal_quoting_an_integer_of_5000_digits_still_says_what_was_wrong():
    class Quoting(Exception):
        def __str__(self):
            return str(10**5000)  # ValueError: Python will not write an int of over 4,300 digits

    assert gradio_patches._shortened(Quoting()) == "Quoting"
    assert len(gradio_patches._shortened(ValueError("x" * 10_000_000))) <= gradio_patches.SHOWN_CHARS + 1


# ---------------------------------------------------------------- fair admission (ui/admission.py)

import asyncio  # noqa: E402
import inspect  # noqa: E402
import time  # noqa: E402
from types import SimpleNamespace  # noqa: E402

from fastapi import HTTPException  # noqa: E402

from ui import admission  # noqa: E402


def _request(host: str, forwarded: str = "", lang: str = "en"):
    headers = {"accept-language": lang, **({"x-forwarded-for": forwarded} if forwarded else {})}
    return SimpleNamespace(client=SimpleNamespace(host=host), headers=headers)


class _Queue:
    """What Admission reads of a Gradio queue: its functions, its events (waiting per group, running, and all it
    holds), and `push`, which, as Gradio 6.31's does, answers a join of a `cached` group at once and still holds
    its event."""

    def __init__(self, groups: dict[int, str], cached: tuple[str, ...] = ()):
        self.blocks = SimpleNamespace(fns={i: SimpleNamespace(concurrency_id=g, inputs=[], fn=None)
                                           for i, g in groups.items()})
        self.event_queue_per_concurrency_id = {g: SimpleNamespace(queue=[]) for g in groups.values()}
        self.active_jobs, self.event_ids_to_events, self.cached, self.joins = [None, None], {}, cached, 0

    async def push(self, body, request, username):
        self.joins += 1
        group = self.blocks.fns[body.fn_index].concurrency_id
        event = SimpleNamespace(_id=f"e{self.joins}", concurrency_id=group, session_hash=body.session_hash,
                                request=request)
        self.event_ids_to_events[event._id] = event
        if group not in self.cached:
            self.event_queue_per_concurrency_id[group].queue.append(event)
        return True, event._id, "success"


def _join(queue, fn_index, session, request, data=()):
    body = SimpleNamespace(fn_index=fn_index, session_hash=session, data=list(data))
    try:
        return asyncio.run(queue.push(body, request, None))[2]
    except HTTPException as refused:  # a validation answer's message, as gradio_client reads it
        said = refused.detail
        return refused.status_code, said if isinstance(said, str) else "; ".join(d["message"] for d in said)


def _door(cached: tuple[str, ...] = ()):
    queue = _Queue({0: "training", 1: "tokenize"}, cached)
    admission.Admission(queue, lambda g: 2 if g == "training" else None, lambda g: 95.4)
    return queue


def test_live_training_admits_one_waiting_run_and_then_says_busy_with_a_time():
    queue = _door()
    answers = [_join(queue, 0, f"s{i}", _request(f"10.0.0.{i}")) for i in range(5)]
    assert answers[:2] == ["success", "success"]  # the run and the one waiting for the slot
    assert all(a == (429, "Busy: the live training slot is taken and one run is already waiting for it. "
                          "Try again in 95 s.") for a in answers[2:])
    code, said = _join(queue, 0, "s9", _request("10.0.0.9", lang="zh-CN,zh;q=0.9"))
    assert code == 429 and "95 秒后再试" in said  # in the language the browser asks for


def test_a_join_sending_fewer_values_than_its_endpoint_takes_is_told_which_it_takes():
    # Gradio answered HTTP 500 "Internal Server Error", the reason in the server's log only
    def classify(text, method, grid=False, model=None, lang="en"):
        return text

    queue = _door()
    queue.blocks.fns[1].fn = classify
    queue.blocks.fns[1].inputs = [gr.Textbox(), gr.Radio(["a"]), gr.Checkbox(), gr.State(), gr.State()]
    code, said = _join(queue, 1, "s", _request("10.0.0.1"), data=["good film", "a", None, None])
    assert code == 422 and said == admission.t("door.too_few_values", "en", names="text, method, grid")
    code, said = _join(queue, 1, "s", _request("10.0.0.1", lang="zh-CN"), data=[])
    assert code == 422 and "text, method, grid" in said and "少了" in said
    assert _join(queue, 1, "s", _request("10.0.0.1"), data=["good film", "a", False, None, None]) == "success"


def test_one_session_holds_a_few_jobs_of_a_kind_and_other_sessions_still_get_in():
    queue = _door()
    flood = [_join(queue, 1, "flooder", _request("93.184.216.34")) for _ in range(300)]
    assert flood.count("success") == admission.SESSION_JOBS
    assert flood[-1] == (429, admission.t("door.session_jobs", "en", n=admission.SESSION_JOBS))
    assert _join(queue, 1, "student", _request("151.101.1.69")) == "success"


def test_a_group_declared_with_one_job_per_session_admits_one_per_session():
    # a real LLM's generations (issue 61, item 4): ui/events.ENDPOINTS declares it as Serving(..., session_jobs=1)
    queue = _Queue({0: "llm", 1: "tokenize"})
    admission.Admission(queue, lambda g: None, lambda g: 0.0, lambda g: 1 if g == "llm" else None)
    assert _join(queue, 0, "student", _request("151.101.1.69")) == "success"
    assert _join(queue, 0, "student", _request("151.101.1.69")) == (429, admission.t("door.session_jobs", "en", n=1))
    assert _join(queue, 0, "neighbour", _request("151.101.1.69")) == "success"
    assert [_join(queue, 1, "student", _request("151.101.1.69")) for _ in range(2)] == ["success"] * 2


def test_one_address_with_many_sessions_holds_at_most_its_share():
    queue = _door()
    flood = [_join(queue, 1, f"fake-{i}", _request("93.184.216.34")) for i in range(300)]
    assert flood.count("success") == admission.ADDRESS_JOBS
    assert flood[-1][0] == 429
    assert _join(queue, 1, "student", _request("151.101.1.69")) == "success"


def test_answers_from_the_cache_never_count_against_an_address_and_are_not_kept():
    # Gradio holds a join answered from a cache for good: after 256 cached views, that address was refused
    # everything ("already has 256 requests of this kind waiting or running") and none of them was freed
    queue = _door(cached=("tokenize",))
    hits = [_join(queue, 1, f"student-{i}", _request("151.101.1.69")) for i in range(600)]
    assert hits == ["success"] * 600 and queue.event_ids_to_events == {}
    assert _join(queue, 0, "lecturer", _request("151.101.1.69")) == "success"


def test_a_running_job_counts_as_one_that_waits():
    queue = _door()
    assert [_join(queue, 0, f"s{i}", _request("10.0.0.1")) for i in range(2)] == ["success"] * 2
    running = queue.event_queue_per_concurrency_id["training"].queue.pop(0)  # a worker takes it
    queue.active_jobs[0] = [running]
    assert _join(queue, 0, "s9", _request("10.0.0.9"))[0] == 429


def test_behind_a_spaces_proxy_the_address_is_the_hop_the_proxy_saw():
    assert admission.address(_request("10.1.2.3", forwarded="1.2.3.4, 93.184.216.34")) == "93.184.216.34"
    assert admission.address(_request("151.101.1.69", forwarded="1.2.3.4")) == "151.101.1.69"  # not a proxy


def _reslice_request(session: str, host: str, lang: str = "en"):
    return SimpleNamespace(session_hash=session, **vars(_request(host, lang=lang)))


def test_an_unqueued_reslice_is_counted_per_session_per_address_and_in_all(monkeypatch):
    # a re-slice answered outside the queue (ui/events.on(..., reslice=True)) passes a door of its own
    monkeypatch.setattr(admission, "IN_FLIGHT", admission._InFlight())
    release = threading.Event()

    def slow(text: str, lang: str = "en"):
        release.wait(10)
        return text

    counted = admission.unqueued(slow, 2)
    assert inspect.iscoroutinefunction(counted)  # it waits in the event loop, not on a thread
    assert list(inspect.signature(counted).parameters) == ["input0", "input1", "request"]
    assert inspect.signature(counted).parameters["request"].annotation is gr.Request  # Gradio hands it over

    async def ask(session, host, lang="en"):
        try:
            return await counted("a", "en", _reslice_request(session, host, lang))
        except gr.Error as refused:
            return refused.message

    async def scenario():
        busy = [asyncio.create_task(ask("page", "151.101.1.69")) for _ in range(admission.UNQUEUED_SESSION)]
        await asyncio.sleep(0.2)
        said = [await ask("page", "151.101.1.69", "zh-CN,zh;q=0.9")]  # one more of the same page, while those run
        monkeypatch.setattr(admission, "UNQUEUED_ADDRESS", admission.UNQUEUED_SESSION)
        said.append(await ask("neighbour", "151.101.1.69"))  # another page behind the same address, at its share
        monkeypatch.setattr(admission, "UNQUEUED_WAITING", admission.UNQUEUED_SESSION)
        said.append(await ask("elsewhere", "93.184.216.34"))  # the whole app at its share
        release.set()
        return said, await asyncio.gather(*busy)

    said, answered = asyncio.run(scenario())
    assert said == [admission.t("door.session_jobs", "zh-CN", n=admission.UNQUEUED_SESSION),
                    admission.t("door.address_jobs", "en", n=admission.UNQUEUED_SESSION),
                    admission.t("door.group_full", "en", n=admission.UNQUEUED_SESSION)]
    assert answered == ["a"] * admission.UNQUEUED_SESSION
    assert not admission.IN_FLIGHT.sessions and not admission.IN_FLIGHT.addresses  # counted out again


def test_unqueued_reslices_beyond_those_running_wait_their_turn_and_are_all_answered(monkeypatch):
    # a lecture hall moving its sliders together: UNQUEUED_RUNNING at once, the others served in turn, none refused
    monkeypatch.setattr(admission, "IN_FLIGHT", admission._InFlight())
    monkeypatch.setattr(admission, "UNQUEUED_RUNNING", 2)
    running, most = [0], [0]
    lock = threading.Lock()

    def reslice(text: str):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        return text

    counted = admission.unqueued(reslice, 1)

    async def hall():
        return await asyncio.gather(*(counted(f"s{i}", _reslice_request(f"s{i}", "151.101.1.69")) for i in range(20)))

    assert asyncio.run(hall()) == [f"s{i}" for i in range(20)] and most[0] == 2


def test_the_reslices_of_attention_and_the_forward_pass_are_answered_outside_the_queue_and_counted():
    import app

    demo = app.build_app()
    unqueued = [fn for fn in demo.fns.values() if fn.queue is False and fn.fn is not None
                and getattr(fn.fn, "__wrapped__", None) is not None
                and "request" in inspect.signature(fn.fn).parameters]
    names = {fn.fn.__wrapped__.__name__ for fn in unqueued}
    assert {"attention_focus", "forward_stage", "forward_step"} <= names
    # the language switch redraws the view on screen outside the queue too (a streamed view keeps its queue)
    assert {"attention", "masking", "classify"} <= names and "generate" not in names
    # the views' main buttons, which compute, stay queued
    assert all(fn.queue is not False for fn in demo.fns.values() if fn.api_name in ("attention", "forward_stage"))


# ---------------------------------------------------------------- state only for open sessions (ui/sessions.py)

import datetime  # noqa: E402
import threading  # noqa: E402

from ui import sessions  # noqa: E402


def _holder(ages: dict[str, float], now: datetime.datetime):
    return SimpleNamespace(lock=threading.Lock(), session_data={s: object() for s in ages},
                           time_last_used={s: now - datetime.timedelta(seconds=a) for s, a in ages.items()})


def test_state_is_kept_for_open_pages_and_briefly_for_sessions_that_never_had_one():
    now = datetime.datetime.now()
    holder = _holder({"api-client": sessions.NO_PAGE_S + 1, "open-page": 10 * sessions.CLOSED_S,
                      "closed-page": sessions.CLOSED_S - 1, "old-closed-page": sessions.CLOSED_S + 1,
                      "api-client-waiting": 10 * sessions.NO_PAGE_S}, now)
    queue = SimpleNamespace(event_queue_per_concurrency_id={"generation": SimpleNamespace(
                                queue=[SimpleNamespace(session_hash="api-client-waiting")])}, active_jobs=[None],
                            pending_messages_per_session={"api-client": ["4 MB nobody reads"]})
    sessions._open_pages["open-page"] = 1
    sessions._paged.update({"open-page", "closed-page", "old-closed-page"})
    try:
        gone = sessions.expired(holder, queue, now)
        assert sorted(gone) == ["api-client", "old-closed-page"]
        sessions.forget(holder, queue, gone)
    finally:
        sessions._open_pages.pop("open-page")
        sessions._paged.difference_update({"open-page", "closed-page"})
    assert set(holder.session_data) == {"open-page", "closed-page", "api-client-waiting"}
    assert queue.pending_messages_per_session == {}  # its unread answers went with it


def test_the_page_tracker_counts_a_heartbeat_stream_while_it_is_open():
    seen = []

    async def app(scope, receive, send):
        seen.append(dict(sessions._open_pages))

    tracker = sessions.PageTracker(app)
    asyncio.run(tracker({"type": "http", "path": "/gradio_api/heartbeat/abc123"}, None, None))
    assert seen == [{"abc123": 1}] and "abc123" not in sessions._open_pages and "abc123" in sessions._paged
    sessions._paged.discard("abc123")


def test_the_server_is_quiet_only_when_no_request_but_a_heartbeat_is_in_progress(monkeypatch):
    """lab/store.warm loads the large checkpoints when the server is quiet: a streamed answer counts until its end."""
    monkeypatch.setitem(sessions._requests, "ended", None)
    assert sessions.quiet_for() == float("inf")  # nobody came yet: the app is starting
    during = []

    async def app(scope, receive, send):
        during.append(sessions.quiet_for())

    tracker = sessions.PageTracker(app)
    asyncio.run(tracker({"type": "http", "path": "/gradio_api/queue/data"}, None, None))
    assert during == [0.0] and 0.0 <= sessions.quiet_for() < 1.0  # busy while it ran, quiet from its end on
    ended = sessions._requests["ended"]
    asyncio.run(tracker({"type": "http", "path": "/gradio_api/heartbeat/abc123"}, None, None))
    assert during[-1] > 0.0 and sessions._requests["ended"] == ended  # a page's heartbeat is no work
    sessions._paged.discard("abc123")


def test_the_cache_budget_is_a_flag_and_an_environment_variable(monkeypatch):
    import cli
    from lab import cache

    assert cli.parse_args([]).cache_mb * 2**20 == cache.BUDGET_BYTES <= 2 * 2**30  # fits a free 16 GB Space
    monkeypatch.setenv("TRANSFORMER_LAB_CACHE_MB", "300")
    assert cli.parse_args([]).cache_mb == 300
    assert cli.parse_args(["--cache-mb", "50"]).cache_mb == 50


def test_a_5000_character_text_sends_the_chips_drawn_not_megabytes():
    from ui import tokens
    from views.tokens import CHIPS_SHOWN

    text = ("天地玄黄，宇宙洪荒。To be, or not to be: that is the question. " * 100)[:5000]
    _notice, chips = tokens.tokenize(text, "en")
    assert len(chips.encode()) < 1_500_000  # 4.0 MB of chips on main
    assert f"The first {CHIPS_SHOWN:,} of" in chips  # and the panels say they are cut


def test_a_right_to_left_override_stays_inside_its_sentence_and_its_words():
    from ui import concepts
    from views import sentiment

    rlo = "\u202egood film"
    strip = sentiment.sentence_strip([rlo, "A fine ending."], [0.9, 0.8])
    assert strip.count("unicode-bidi: isolate") == 2  # each sentence is its own bidi island
    shown, *_ = concepts.order(f"{rlo} is here", 0)
    assert "<bdi" in shown and "\u202e" in shown.split("<bdi", 1)[1].split("</bdi>", 1)[0]


def test_the_real_app_admits_through_the_door_and_gives_every_group_its_threads():
    import app

    demo = app.serve_queue(app.build_app())
    assert getattr(demo._queue.push.refused, "__self__", None).__class__ is admission.Admission
    assert events.admits("training") == 2 and events.admits("generation") is None
    assert events.threads_needed(demo) > 40  # Gradio's default, shared by every group


def test_answers_outside_the_queue_are_gzipped_as_the_queues_stream_is():
    # a language switch's redraw (0.3 MB of a 128-token attention view) went out uncompressed once it left the queue
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from ui.wire import CompressedStreams

    answer = {"data": ["0.123"] * 2000}
    routes = [Route(path, lambda request: JSONResponse(answer), methods=["POST"])
              for path in ("/gradio_api/run/reslice", "/gradio_api/info")]
    client = TestClient(CompressedStreams(Starlette(routes=routes)))
    compressed = client.post("/gradio_api/run/reslice", headers={"accept-encoding": "gzip"})
    assert compressed.headers.get("content-encoding") == "gzip" and compressed.json() == answer
    assert "content-encoding" not in client.post("/gradio_api/info", headers={"accept-encoding": "gzip"}).headers


def test_a_position_slider_a_run_narrowed_takes_any_position_its_view_may_draw():
    """A session's position slider narrowed to its last text still takes a position of a longer next text (an API
    client's next call, a lecture step that starts several events at once): the view clamps past its own text, with
    a notice (ui/values.as_built). Past every position its own view ever draws, it is refused, and the refusal
    names that range."""
    with gr.Blocks():
        narrowed = gr.Slider(0, 6, elem_id="forward-follow")  # a 7-token text's positions
        other = gr.Slider(0, 6, elem_id="dilation")
    gradio_patches.guard(narrowed)
    assert narrowed.preprocess(8) == 8 and narrowed.preprocess(3) == 3 and narrowed.preprocess(127) == 127
    with pytest.raises(gr.Error, match="from 0 to 127"):
        narrowed.preprocess(500)  # past every position a view draws: refused, as any slider refuses it
    with pytest.raises(gr.Error, match="from 0 to 6"):
        other.preprocess(8)  # an other slider: refused past its range
    with gr.Blocks():
        masked = gr.Slider(0, 6, elem_id="position_for_the_top_5_guesses")
        step = gr.Slider(0, 2, elem_id="step")
    assert masked.preprocess(40) == 40 and step.preprocess(20) == 20
    for slider, past in ((masked, 64), (step, 40)):  # past the last its own view ever draws (64, 40 tokens)
        with pytest.raises(gr.Error):
            slider.preprocess(past)


def test_a_layer_slider_a_model_pick_narrowed_takes_the_last_models_layer_for_the_view_to_clamp():
    """A lecture step that changes the model starts its view beside the sliders' resize (ui/handlers.model_changed):
    under load the view's request carried multilingual-e5's layer 11 after the resize to the language model's 6
    layers had narrowed the session's slider, and Gradio refused it ('Value 11 is greater than maximum value 5'), an
    error toast and a blank head in front of the class. A layer or head slider is judged by the largest model
    offered (ui/values.as_built); the view clamps to its own model with a notice; past every model, refused."""
    from lab import attention as use, models

    top_layer, top_head = models.largest_sizes()
    assert top_layer >= 11 and top_head >= 11  # multilingual-e5's 12 layers and heads
    with gr.Blocks():
        layer = gr.Slider(0, 5, elem_id="layer")  # narrowed to the 6-layer language model
        head = gr.Slider(0, 5, elem_id="forward-head")
    gradio_patches.guard(layer)
    assert layer.preprocess(11) == 11 and head.preprocess(11) == 11
    with pytest.raises(gr.Error, match=f"from 0 to {top_layer}"):
        layer.preprocess(top_layer + 1)
    notices = []
    run = use.attention_run("shakespeare-lm", "To be, or not to be")
    assert run.focus(11, 0, 0, notices)[0] == 5 and notices  # drawn at the model's last layer, and said
