"""The public door over the browser's own protocol (/queue/join, then the session's event stream), issue 49:
a session that ran the page-load events gets exactly the messages a fresh one gets."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
import uuid

import pytest


@pytest.fixture(scope="module")
def page(served_app):
    base = served_app[0]
    with urllib.request.urlopen(f"{base}/config", timeout=60) as response:
        config = json.loads(response.read())
    return base, config["dependencies"], {c["id"]: c for c in config["components"]}


def _post(url: str, body: dict) -> tuple[int, dict | str]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _completed(base: str, session: str) -> dict:
    with urllib.request.urlopen(f"{base}/gradio_api/queue/data?session_hash={session}", timeout=120) as stream:
        for line in stream:
            if line.startswith(b"data:") and (message := json.loads(line[5:]))["msg"] == "process_completed":
                return message
    raise AssertionError("the stream ended without an answer")


def fire(page, session: str, fn_index: int, data: list, query: str = "") -> tuple[int, dict | str]:
    """One event as the page fires it: unqueued ones over /run/predict, the rest joined and read."""
    base, deps, _ = page
    body = {"data": data, "fn_index": fn_index, "session_hash": session, "event_data": None, "trigger_id": None}
    if deps[fn_index]["queue"] is False:
        return _post(f"{base}/gradio_api/run/predict{query}", body)
    status, joined = _post(f"{base}/gradio_api/queue/join{query}", body)
    return (status, _completed(base, session)) if status == 200 else (status, joined)


def defaults(page, fn_index: int) -> list:
    _, deps, components = page
    return [components[i]["props"].get("value") for i in deps[fn_index]["inputs"]]


def open_page(page, query: str) -> str:
    """A session that ran what a page load runs: the load events and every event chained after them."""
    _, deps, _ = page
    session = uuid.uuid4().hex[:11]
    loads = [i for i, d in enumerate(deps) if any(t[1] == "load" for t in d["targets"])]
    for index in loads:
        assert fire(page, session, index, defaults(page, index), query)[0] == 200
        for then, d in enumerate(deps):
            if d.get("trigger_after") == index and d["backend_fn"]:
                assert fire(page, session, then, defaults(page, then), query)[0] == 200
    return session


WRONG = ["a", "list"]  # a value of a type no input of the page sends


def test_every_endpoint_refuses_a_wrong_value_alike_in_a_fresh_session_and_after_the_page_load(page):
    _, deps, components = page
    opened = open_page(page, "?tab=attention&layer=9&new_tokens=500&seed=1e30")
    endpoints = [i for i, d in enumerate(deps) if d.get("api_name") and d["api_visibility"] != "private"]
    assert len(endpoints) > 20
    for index in endpoints:
        kinds = [components[i]["type"] for i in deps[index]["inputs"]]
        # a number where a slider is, and a list where a picker is (an unhashable cache key at the door on main)
        for wrong_kinds in (("slider", "number"), ("dropdown", "radio")):
            if not (at := [k for k, kind in enumerate(kinds) if kind in wrong_kinds]):
                continue
            data = defaults(page, index)
            data[at[0]] = WRONG
            answers = [fire(page, session, index, data) for session in (uuid.uuid4().hex[:11], opened)]
            for status, answer in answers:
                assert status == 200, (deps[index]["api_name"], answer)  # never HTTP 500 at the door
                assert answer["success"] is False and answer["output"]["error"], (deps[index]["api_name"], answer)
                assert "__i18n__" not in answer["output"]["error"]
            # the same message, but for the range a slider takes: the page load sets it from the session's text
            alike = [re.sub(r"\d+", "N", answer["output"]["error"]) for _, answer in answers]
            assert alike[0] == alike[1], deps[index]["api_name"]


def test_every_input_of_every_endpoint_refuses_a_list_holding_its_own_value(page):
    """Issue 61: a list where an input takes one value (a picker's own choice in a list, a checkbox's [true])
    passed Gradio's reading and was HTTP 500 at the queue's join (10 joins), or an empty message."""
    _, deps, components = page
    endpoints = [i for i, d in enumerate(deps) if d.get("api_name") and d["api_visibility"] != "private"
                 and d["queue"] is not False]  # an unqueued event's refusal is Gradio's HTTP 500 with the message
    tried = 0
    for index in endpoints:
        for at, block in enumerate(deps[index]["inputs"]):
            if components[block]["type"] == "state":  # the server's own: the page sends it empty
                continue
            data = defaults(page, index)
            data[at] = [data[at]]
            status, answer = fire(page, uuid.uuid4().hex[:11], index, data)
            where = (deps[index]["api_name"], components[block]["type"], at)
            assert status == 200, (where, answer)
            assert answer["success"] is False and answer["output"]["error"], (where, answer)
            tried += 1
    assert tried > 100


@pytest.mark.parametrize("query", ["?tab=generate&new_tokens=500&seed=1e30", "?tab=attention&layer=9&head=99",
                                   "?tab=masking&window_width_w=-7&layer=1e400"])
def test_a_link_with_numbers_out_of_range_opens_its_tab(page, query):
    _, deps, _ = page
    load = next(i for i, d in enumerate(deps) if any(t[1] == "load" for t in d["targets"]) and d["queue"] is False)
    status, answer = fire(page, uuid.uuid4().hex[:11], load, defaults(page, load), query)
    assert status == 200, answer
    tab = query.split("&")[0].removeprefix("?tab=")
    assert tab in json.dumps(answer["data"])


@pytest.mark.parametrize("api", ["find_head", "ablate"])
def test_an_integer_of_5000_digits_is_refused_with_a_message(page, api):
    base, deps, components = page
    index = next(i for i, d in enumerate(deps) if d.get("api_name") == api)
    kinds = [components[i]["type"] for i in deps[index]["inputs"]]
    at = next(k for k, kind in enumerate(kinds) if kind in ("slider", "number", "textbox"))
    data = defaults(page, index)
    data[at] = "HUGE"
    session = uuid.uuid4().hex[:11]
    body = json.dumps({"data": data, "fn_index": index, "session_hash": session, "event_data": None,
                       "trigger_id": None}).replace('"HUGE"', "1" + "0" * 5000).encode()
    request = urllib.request.Request(f"{base}/gradio_api/queue/join", data=body,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            assert response.status == 200
    except urllib.error.HTTPError as e:  # refused at the door: still a message, not a 500
        assert e.code < 500 and e.read()
        return
    answer = _completed(base, session)
    assert answer["success"] is False and answer["output"]["error"], answer


def test_views_answered_from_the_cache_never_lock_an_address_out(page):
    """Gradio holds every join answered from a cache: after 256 of them, one address (a lecture hall behind one
    NAT) was refused everything, 'already has 256 requests of this kind waiting or running'."""
    base, deps, _ = page
    tokenize = next(i for i, d in enumerate(deps) if d.get("api_name") == "tokenize")
    for _ in range(300):  # the same view: one run, then answers from the cache at the door
        status, answer = _post(f"{base}/gradio_api/call/tokenize", {"data": ["A lecture hall opens one link."]})
        assert status == 200, answer
    session = uuid.uuid4().hex[:11]
    status, answer = fire(page, session, tokenize, ["A student's own text.", "en"])
    assert status == 200 and answer["success"], answer


def test_the_inside_tabs_head_pick_answers_a_figure_over_the_queue(page):
    """Picking a head of the information-flow graph failed for every client: the handler gave its one plot as a
    1-tuple, which Gradio could not post-process (an error with no message, page and API alike)."""
    _, deps, _ = page
    index = next(i for i, d in enumerate(deps) if d.get("api_name") == "inside_flow_head")
    status, answer = fire(page, uuid.uuid4().hex[:11], index,
                          ["shakespeare-lm", "To be, or not to be: that is the question.", 5, "1,2", "en"])
    assert status == 200 and answer["success"], answer
    (plot,) = answer["output"]["data"]
    assert "'" in json.loads(plot["plot"])["layout"]["title"]["text"]  # the head's bars, titled with the token
