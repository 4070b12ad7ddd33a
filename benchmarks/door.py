"""The public door (issue 49): one hostile visitor against everyone else, measured on a running app.

    python -m benchmarks.door [--flood 300] [--light 20] [--distinct 2000] [--unread 150] [--clicks 10]

Starts `python app.py` on a copy of the model folder with one oversized checkpoint added (a config of
d_model 2048 x 12 layers, 2.3 GiB of float32 parameters), then, over the browser's own protocol
(`POST /gradio_api/queue/join`, then the session's event stream) or the HTTP API:

- queue flood: one session sends `--flood` joins for live training (10 s budget) and reads none of the
  answers; then `--light` tokenize requests from other sessions, one after another. Their p95 and
  errors (target: 0 errors, p95 <= 1 s), and how the flood's joins were answered (admitted, refused 429).
- memory: `--distinct` distinct requests spread over every endpoint of the public API (/gradio_api/info),
  4 at a time, with the app's RSS after each 500; then `--unread` 5,000-character tokenize answers never read;
  RSS 10 s later, and once their sessions have expired (ui/sessions.NO_PAGE_S). Against the stated budget:
  the app at rest + the cache budget (lab/cache.BUDGET_BYTES) + 1,000 sessions of 1 MB (ui/sessions.CAPACITY).
- bad checkpoint: one client asks for attention on the oversized model `--clicks` times while another
  sends light requests: their p95 (target <= 0.5 s) and the oversized model's answer.
- wrong types (issue 61): every input of every endpoint (/gradio_api/info?all_endpoints=true: the page's endpoints
  and their data twins) sent, over the raw API's join, a value of a kind it does not take (its own value in a
  list, an object, a value of another JSON kind). Targets: 0 HTTP 500, 0 empty messages.
- messages: every input of every endpoint but the examples loaders and live training sent each HOSTILE value
  (2 MB of text, 5,000 digits, NaN, ...): the longest message (target <= 300 characters), HTTP 500s, empty ones.
- llm (issue 61): with the real LLMs made (`python -m tools.llms`): `--light-clients` tokenize clients at once,
  alone, then while one session joins 10 LLM generations (one runs, the rest are refused: the message); then
  `--generations` generations one after another, the app's RSS after every 10 against the app at rest plus the
  LLMs' stated 1.2 GB and one generation's KV cache. Targets: the light p95 within 20 % of the hall alone, RSS levels
  off under the budget.
- llm_disconnect (issue 61): a client reads 10 updates of a 200-token SmolLM2 generation and closes its stream; the
  app's CPU time every 0.5 s after (target: back to idle within a second).
- mcp: every MCP tool (JSON-RPC over /gradio_api/mcp/) called with its defaults and a 5,000-character text, and with
  2 MB of text in each argument: the largest answer in bytes (target <= 64 KB) and the longest error message.

The whole run takes about 13 minutes on a loaded 2-core machine, most of it the 2,000 requests (a quick look:
`--distinct 500`; `--parts wrong_types,messages,mcp` for issue 61's parts alone); the JSON on the last line says
which ran and how long each part took.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import serving  # noqa: E402
from lab import cache, llms  # noqa: E402
from ui import sessions  # noqa: E402

LLM_MB = 1200 + 33  # README "Real LLMs": both loaded with their tokenizers, and one generation's KV cache
SESSION_MB = 1  # the state a generation session keeps, at most (README: "about 1 MB"); sessions.CAPACITY of them
TEXT_5000 = ("天地玄黄，宇宙洪荒。To be, or not to be: that is the question. " * 100)[:5000]


def post(url: str, body: dict, timeout: float = 60) -> tuple[int, dict | str]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()[:300]


def call(base: str, api: str, data: list, timeout: float = 120) -> tuple[float, str]:
    """One HTTP API call, answer read: (seconds, "complete" | "error_message" (a gr.Error's) | "failed")."""
    t0 = time.perf_counter()
    status, joined = post(f"{base}/gradio_api/call/{api}", {"data": data}, timeout)
    if status != 200:
        return time.perf_counter() - t0, "failed"
    with urllib.request.urlopen(f"{base}/gradio_api/call/{api}/{joined['event_id']}", timeout=timeout) as stream:
        body = stream.read().decode()
    if "event: complete" in body:
        return time.perf_counter() - t0, "complete"
    said = '"error": null' not in body and "event: error" in body and '"error": "' in body
    return time.perf_counter() - t0, "error_message" if said else "failed"


def p95(values: list[float]) -> float:
    return round(sorted(values)[max(0, int(len(values) * 0.95 + 0.5) - 1)], 3) if values else 0.0


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def light(base: str, n: int, tag: str) -> dict:
    times, errors = [], 0
    for i in range(n):
        seconds, outcome = call(base, "tokenize", [f"{tag} light request {i}: the cat sat on the mat"])
        times.append(seconds)
        errors += outcome != "complete"
    return {"p95_s": p95(times), "median_s": round(statistics.median(times), 3), "errors": errors}


def flood(base: str, deps: list, components: dict, n: int) -> dict:
    train = next(i for i, d in enumerate(deps) if d.get("api_name") == "translate_train")
    data = [components[i]["props"].get("value") for i in deps[train]["inputs"]]
    data[2], data[3] = 50, 10  # steps, seconds: the cheapest run
    session, answers = "flood-" + uuid.uuid4().hex[:8], {}
    for _ in range(n):
        status, _ = post(f"{base}/gradio_api/queue/join",
                         {"data": data, "fn_index": train, "session_hash": session, "trigger_id": None}, timeout=30)
        answers[status] = answers.get(status, 0) + 1
    return {"joins": n, "answers_by_status": answers}


def model_choice(deps: list, components: dict, name: str) -> str:
    """The attention picker's value for checkpoint `name` (the picker's values are its labels)."""
    picker = components[deps[next(i for i, d in enumerate(deps) if d.get("api_name") == "attention")]["inputs"][0]]
    return next(value for _, value in picker["props"]["choices"] if str(value).startswith(name + " "))


# Each endpoint of the public API (/gradio_api/info) with its defaults, made distinct per request `i` by the first
# rule that fits: VARY's own, a `seed` set to i, or its first text with " i" appended. FILL gives inputs that have no
# usable default; CHEAPER caps the settings that make an answer cost seconds (a sample of 80 tokens), so that 2,000
# requests take minutes. Live training is not in the public API (one run at a time: the flood measures it).
VARY = {"translate": ("source", lambda default, i: " ".join(str(i)) + " " + default),
        "concepts_weighted_average": ("x_text", lambda default, i: f"{default}\n{i % 10} {i // 10}"),
        "concepts_positions": ("n_positions", lambda default, i: 2 + i % 255),
        "translate_lengths": ("n_per_length", lambda default, i: 20 * (1 + i % 5)),  # up to 10 s: five, then hits
        "concepts_parameters": ("d_model", lambda default, i: [64, 128, 256, 512, 768][i % 5]),
        "generate_temperatures": ("seed", lambda default, i: i % 10)}  # 4.5 s each: ten samples, then cache hits
REVIEW = "A film, number {i}, and I liked it. The ending was weak."
FILL = {"classify": {"text": REVIEW}, "classify_sentence": {"text": REVIEW}, "classify_compare": {"text": REVIEW},
        "find_head": {"text": "The cat number {i} sat down because it was tired.", "query": "it", "key": "cat"},
        "ablate": {"heads": "L0 H0"}}
CHEAPER = {"generate": {"max_new_tokens": 20}, "cheating": {"n_new": 10}}


def request_maker(name: str, parameters: list[dict]):
    """i -> the data of endpoint `name`'s request number i."""
    defaults = {p["parameter_name"]: p.get("parameter_default") for p in parameters}
    texts = [p["parameter_name"] for p in parameters if p["component"] == "Textbox"]

    def make(i: int) -> list:
        data = {**defaults, **CHEAPER.get(name, {})}
        data.update({k: v.format(i=i) for k, v in FILL.get(name, {}).items()})
        if name in VARY:
            key, vary = VARY[name]
            data[key] = vary(data[key], i)
        elif "seed" in data:
            data["seed"] = i
        elif texts and not FILL.get(name, {}).get(texts[0], "").count("{i}"):
            data[texts[0]] = f"{data[texts[0]]} {i}"
        return [data[p["parameter_name"]] for p in parameters]
    return make


def memory(base: str, pid: int, distinct: int, unread: int, deps: list, every: int = 500) -> dict:
    """`distinct` requests over every endpoint, 4 at a time, RSS after each `every`; then `unread` 5,000-character
    tokenize answers never read; RSS 10 s later and once the sessions of those answers have expired."""
    with urllib.request.urlopen(f"{base}/gradio_api/info", timeout=60) as response:
        endpoints = [(name.lstrip("/"), request_maker(name.lstrip("/"), e["parameters"]))
                     for name, e in json.loads(response.read())["named_endpoints"].items()]
    rss, answers, lock, t0 = [rss_mb(pid)], {"complete": 0, "error_message": 0, "failed": 0}, threading.Lock(), time.time()
    failed_by_endpoint: dict[str, int] = {}

    def work(batch: range, offset: int) -> None:
        for i in batch[offset::4]:
            api, make = endpoints[i % len(endpoints)]
            try:
                outcome = call(base, api, make(i // len(endpoints)))[1]
            except Exception:  # noqa: BLE001 -- counted
                outcome = "failed"
            with lock:
                answers[outcome] += 1
                if outcome == "failed":
                    failed_by_endpoint[api] = failed_by_endpoint.get(api, 0) + 1
    for start in range(0, distinct, every):
        batch = range(start, min(start + every, distinct))
        workers = [threading.Thread(target=work, args=(batch, k)) for k in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        rss.append(rss_mb(pid))
    distinct_s = time.time() - t0
    tokenize = next(i for i, d in enumerate(deps) if d.get("api_name") == "tokenize")
    joined: dict[int, int] = {}
    said = ""
    for i in range(unread):  # each its own session, as many visitors would; none reads its answer
        status, answer = post(f"{base}/gradio_api/queue/join", {"data": [f"{i} {TEXT_5000}"[:5000], "en"],
                                                                "fn_index": tokenize,
                                                                "session_hash": uuid.uuid4().hex[:10],
                                                                "trigger_id": None})
        joined[status] = joined.get(status, 0) + 1
        said = said or (str(answer)[:200] if status != 200 else "")
    time.sleep(10)
    after_unread = rss_mb(pid)
    time.sleep(sessions.NO_PAGE_S + sessions.SWEEP_S + 5)  # the unread answers' sessions expire and are swept
    at_rest = rss[0]
    budget = at_rest + cache.BUDGET_BYTES / 2**20 + sessions.CAPACITY * SESSION_MB
    return {"endpoints": len(endpoints), "distinct_requests": distinct, "distinct_s": round(distinct_s),
            "answers": answers, "failed_by_endpoint": failed_by_endpoint, f"rss_mb_every_{every}": rss,
            "unread_answers": unread, "unread_joins_by_status": joined, "unread_refusal": said,
            "rss_mb_after_unread": after_unread, "rss_mb_after_expiry": rss_mb(pid), "budget_mb": round(budget),
            "under_budget": max(rss + [after_unread]) < budget}


def _llm_data(base: str, api: str, prompt: str, new_tokens: int) -> list:
    """generate_llm's inputs: its defaults, SmolLM2 picked, `prompt`, sampling of `new_tokens` tokens."""
    parameters = endpoints_info(base)[api]
    data = [p.get("parameter_default") for p in parameters]
    named = {p["parameter_name"]: i for i, p in enumerate(parameters)}
    data[named["model_label"]] = next(c for c in parameters[named["model_label"]]["type"]["enum"] if "SmolLM2" in c)
    data[named["prompt"]], data[named["max_new_tokens"]], data[named["mode"]] = prompt, new_tokens, "sample"
    return data


def llm(base: str, pid: int, deps: list, light_clients: int, generations: int) -> dict:
    """With the real LLMs made: `light_clients` tokenize clients at once, alone and while one client starts 10 LLM
    generations in one session (the first runs, the rest are refused); then `generations` generations one after
    another, RSS after every 10."""
    def hall(tag: str) -> dict:
        times, errors, lock = [], 0, threading.Lock()

        def one(i: int) -> None:
            nonlocal errors
            seconds, outcome = call(base, "tokenize", [f"{tag} client {i}: the cat sat on the mat", "en"])
            with lock:
                times.append(seconds)
                errors += outcome != "complete"
        clients = [threading.Thread(target=one, args=(i,)) for i in range(light_clients)]
        for c in clients:
            c.start()
        for c in clients:
            c.join()
        return {"p95_s": p95(times), "median_s": round(statistics.median(times), 3), "errors": errors}

    rss = [rss_mb(pid)]
    call(base, "generate_llm", _llm_data(base, "generate_llm", "Hello", 2))  # loaded: the hall then meets a warm LLM
    rss.append(rss_mb(pid))
    alone = hall("alone")
    index = next(i for i, d in enumerate(deps) if d.get("api_name") == "generate_llm")
    data = _llm_data(base, "generate_llm", "Tell me a long story.", 200)
    data += [None] * (len(deps[index]["inputs"]) - len(data))  # the page's state (its language), not in the API
    session, joins, refusal = "llm-" + uuid.uuid4().hex[:8], {}, ""
    for _ in range(10):
        status, answer = post(f"{base}/gradio_api/queue/join",
                              {"data": data, "fn_index": index, "session_hash": session, "trigger_id": None})
        joins[status] = joins.get(status, 0) + 1
        refusal = refusal or (str(answer)[:200] if status != 200 else "")
    beside = hall("beside an LLM")
    t0, outcomes = time.time(), {"complete": 0, "error_message": 0, "failed": 0}
    for i in range(generations):
        outcomes[call(base, "generate_llm", _llm_data(base, "generate_llm", f"Story number {i}:", 64))[1]] += 1
        if (i + 1) % 10 == 0:
            rss.append(rss_mb(pid))
    return {"light_clients": light_clients, "light_alone": alone, "light_beside_llm": beside,
            "p95_ratio": round(beside["p95_s"] / max(alone["p95_s"], 1e-9), 2), "llm_joins_by_status": joins,
            "llm_refusal": refusal, "generations": generations, "generation_outcomes": outcomes,
            "generations_s": round(time.time() - t0), "rss_mb_at_rest_loaded_then_every_10": rss,
            "budget_mb": round(rss[0] + LLM_MB), "under_budget": max(rss) < rss[0] + LLM_MB}


def cpu_s(pid: int) -> float:
    """The process's CPU time so far, user and system."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def llm_disconnect(base: str, pid: int, deps: list) -> dict:
    """A client that goes away mid-generation: SmolLM2 asked for 200 tokens of a story in chat mode, its stream
    read for 10 updates and closed; then the app's CPU time every 0.5 s (a generation costs a core while it runs)."""
    index = next(i for i, d in enumerate(deps) if d.get("api_name") == "generate_llm")
    data = _llm_data(base, "generate_llm", f"Tell me a long story about a cat, number {uuid.uuid4().hex[:6]}.", 200)
    data[[p["parameter_name"] for p in endpoints_info(base)["generate_llm"]].index("chat")] = True
    data += [None] * (len(deps[index]["inputs"]) - len(data))
    session = uuid.uuid4().hex[:10]
    post(f"{base}/gradio_api/queue/join", {"data": data, "fn_index": index, "session_hash": session,
                                            "trigger_id": None})
    updates = 0
    with urllib.request.urlopen(f"{base}/gradio_api/queue/data?session_hash={session}", timeout=120) as stream:
        t0 = time.time()
        for line in stream:
            updates += b"process_generating" in line
            if updates >= 10 or b"process_completed" in line:
                break
        streamed_s = time.time() - t0
    before, during = cpu_s(pid), []
    for _ in range(8):
        time.sleep(0.5)
        during.append(round(cpu_s(pid) - before, 2))
    return {"updates_read": updates, "streamed_s": round(streamed_s, 2), "app_cpu_s_after_close_every_half_s": during}


def bad_checkpoint(base: str, clicks: int, oversized: str) -> dict:
    answers = []

    def clicker() -> None:
        for _ in range(clicks):
            answers.append(call(base, "attention", [oversized, "The cat sat on the mat.", "decoder", 0, 0, 0]))
    thread = threading.Thread(target=clicker)
    thread.start()
    result = light(base, 20, "beside the oversized model")
    thread.join()
    return {"clicks": clicks, "picker_label": oversized, "click_s_max": round(max(s for s, _ in answers), 3),
            "clicks_refused_with_a_message": sum(outcome == "error_message" for _, outcome in answers), **{f"light_{k}": v for k, v in result.items()}}


# --------------------------------------------------------------------------- issue 61: types, messages, MCP

MESSAGE_CHARS = 300  # the longest message a refusal may be (ui/handlers.MESSAGE_CHARS)
MCP_ANSWER_BYTES = 64 * 1024  # the largest answer an MCP tool may send (ui/agents.ANSWER_BYTES)
TWO_MB = "x" * 2_000_000
# values written into a request's JSON as they are (no JSON encoder writes them): Python's json reads NaN, Infinity
# and an integer of 5,000 digits (which int() then refuses to write out again)
RAW = {"NaN": "NaN", "Infinity": "1e400", "5,000-digit integer": "1" + "0" * 5000}
HOSTILE = {"2 MB text": TWO_MB, "5,000 digits": "1" * 5000, "5,000 digits and a colon": "1" * 5000 + ":",
           "head L<5,000 digits>H0": "L" + "1" * 5000 + "H0", "empty text": "", "null": None, "true": True,
           "-1e30": -1e30, "an object": {"a": 1}, "a list of 100,000": ["x"] * 100_000, **RAW}
SKIPPED = ("load_example", "translate_train")  # Gradio's examples loaders (unqueued); live training (the flood's)


def said(base: str, api: str, body: bytes, timeout: float = 300) -> tuple[int, str, str | None]:
    """One raw API call (`body`: the JSON sent): (HTTP status of the join, "complete" | "error" | "join refused",
    the error message: None when the error had none)."""
    request = urllib.request.Request(f"{base}/gradio_api/call/{api}", data=body,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            event_id = json.loads(response.read())["event_id"]
    except urllib.error.HTTPError as e:
        return e.code, "join refused", e.read().decode(errors="replace")[:1000] or None
    with urllib.request.urlopen(f"{base}/gradio_api/call/{api}/{event_id}", timeout=timeout) as stream:
        text = stream.read().decode(errors="replace")
    if "event: complete" in text:
        return 200, "complete", ""
    data = text.rsplit("data:", 1)[-1].strip()
    try:
        answer = json.loads(data)
    except ValueError:
        return 200, "error", data or None
    message = answer.get("error") if isinstance(answer, dict) else answer
    return 200, "error", message if isinstance(message, str) and message.strip() else None


def body_with(data: list, at: int, value) -> bytes:
    """The JSON of a call whose argument `at` is `value` (a RAW name is written as it is)."""
    marker = "@@HOSTILE@@"
    data = list(data)
    data[at] = marker if isinstance(value, str) and value in RAW.values() else value
    return json.dumps({"data": data}).replace(f'"{marker}"', value if data[at] == marker else "").encode()


def endpoints_info(base: str) -> dict:
    with urllib.request.urlopen(f"{base}/gradio_api/info?all_endpoints=true", timeout=60) as response:
        return {name.lstrip("/"): e["parameters"] for name, e in json.loads(response.read())["named_endpoints"].items()}


def wrongly_typed(parameter: dict) -> dict:
    """Values of kinds `parameter`'s input does not take: its own value in a list, an object, another JSON kind."""
    default, kind = parameter.get("parameter_default"), parameter["type"].get("type")
    other = {"boolean": "true", "number": "1", "integer": "1", "string": 12345}.get(kind, [default])
    return {"its value in a list": [default], "an object": {"value": default}, "another kind": other}


def wrong_types(base: str, endpoints: dict) -> dict:
    """Every input of every endpoint sent values of a kind it does not take, over the raw API's join."""
    counts, problems, t0 = {"sent": 0, "refused_with_a_message": 0, "http_500": 0, "empty_message": 0,
                            "accepted": 0}, [], time.time()
    for api, parameters in endpoints.items():
        defaults = [p.get("parameter_default") for p in parameters]
        for at, parameter in enumerate(parameters):
            for name, value in wrongly_typed(parameter).items():
                status, outcome, message = said(base, api, body_with(defaults, at, value))
                counts["sent"] += 1
                where = f"{api}.{parameter['parameter_name']}: {name}"
                if status >= 500:
                    counts["http_500"] += 1
                    problems.append(f"{where}: HTTP {status}")
                elif outcome == "complete":
                    counts["accepted"] += 1
                elif message is None:
                    counts["empty_message"] += 1
                    problems.append(f"{where}: empty message")
                else:
                    counts["refused_with_a_message"] += 1
    return {**counts, "problems": problems[:20], "s": round(time.time() - t0),
            "met": counts["http_500"] == 0 and counts["empty_message"] == 0}


def messages(base: str, endpoints: dict) -> dict:
    """Every input of every endpoint (but SKIPPED) sent each HOSTILE value: the longest message and the failures."""
    longest, problems, t0 = (0, ""), [], time.time()
    counts = {"sent": 0, "http_500": 0, "empty_message": 0}
    for api, parameters in endpoints.items():
        if api.startswith(SKIPPED):
            continue
        defaults = [p.get("parameter_default") for p in parameters]
        for at, parameter in enumerate(parameters):
            for name, value in HOSTILE.items():
                status, outcome, message = said(base, api, body_with(defaults, at, value))
                counts["sent"] += 1
                where = f"{api}.{parameter['parameter_name']} = {name}"
                if status >= 500 or (outcome != "complete" and message is None):
                    counts["http_500" if status >= 500 else "empty_message"] += 1
                    problems.append(f"{where}: {'HTTP %d' % status if status >= 500 else 'empty message'}")
                elif message and len(message) > longest[0]:
                    longest = (len(message), f"{where}: {message[:400]}")
    return {**counts, "longest_message_chars": longest[0], "longest_message": longest[1], "problems": problems[:20],
            "s": round(time.time() - t0),
            "met": longest[0] <= MESSAGE_CHARS and counts["http_500"] == 0 and counts["empty_message"] == 0}


def mcp_request(base: str, method: str, params: dict, timeout: float = 300) -> tuple[int, dict]:
    """One JSON-RPC request to the MCP server (stateless streamable HTTP): (bytes of the answer, its result)."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    request = urllib.request.Request(f"{base}/gradio_api/mcp/", data=body, headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        raw = response.read()
    events = [line[5:].strip() for line in raw.decode().splitlines() if line.startswith("data:")]
    message = json.loads(events[-1] if events else raw)
    return len(raw), message.get("result") or {"isError": True, "content": [{"text": json.dumps(message)}]}


def mcp(base: str) -> dict:
    """Every MCP tool with its defaults and a 5,000-character text, then with 2 MB of text in each argument."""
    t0 = time.time()
    tools = mcp_request(base, "tools/list", {})[1]["tools"]
    largest, longest, errors = (0, ""), (0, ""), []
    for tool in tools:
        properties = tool["inputSchema"].get("properties", {})
        defaults = {k: v["default"] for k, v in properties.items() if "default" in v}
        texts = [k for k, v in properties.items() if v.get("type") == "string" and "enum" not in v]
        for case, arguments in (("defaults", defaults), ("5,000 characters", {**defaults, **dict.fromkeys(texts, TEXT_5000)})):
            size, result = mcp_request(base, "tools/call", {"name": tool["name"], "arguments": arguments})
            if size > largest[0]:
                largest = (size, f"{tool['name']} with {case}")
        for name in properties:
            size, result = mcp_request(base, "tools/call", {"name": tool["name"], "arguments": {**defaults, name: TWO_MB}})
            text = " ".join(c.get("text", "") for c in result.get("content", []))
            if size > largest[0]:
                largest = (size, f"{tool['name']} with 2 MB in {name}")
            if result.get("isError"):
                if not text.strip() or text.strip() == "Error!":
                    errors.append(f"{tool['name']}.{name}: empty message")
                elif len(text) > longest[0]:
                    longest = (len(text), f"{tool['name']}.{name}: {text[:400]}")
    return {"tools": len(tools), "largest_answer_bytes": largest[0], "largest_answer": largest[1],
            "longest_error_chars": longest[0], "longest_error": longest[1], "empty_errors": errors[:20],
            "s": round(time.time() - t0),
            "met": largest[0] <= MCP_ANSWER_BYTES and longest[0] <= MESSAGE_CHARS and not errors}


PARTS = ("flood", "bad_checkpoint", "memory", "wrong_types", "messages", "mcp", "llm", "llm_disconnect")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flood", type=int, default=300)
    parser.add_argument("--light", type=int, default=20)
    parser.add_argument("--distinct", type=int, default=2000)
    parser.add_argument("--unread", type=int, default=150)
    parser.add_argument("--clicks", type=int, default=10)
    parser.add_argument("--light-clients", type=int, default=100)
    parser.add_argument("--generations", type=int, default=50)
    parser.add_argument("--llm-dir", type=Path, default=None, help="the LLMs' checkpoints (default: the data cache's)")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"which parts to run, of {','.join(PARTS)}")
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    args.llm_dir = args.llm_dir or llms.default_dir()
    if parts & {"llm", "llm_disconnect"} and any(not (args.llm_dir / name / "config.json").exists() for name in llms.LLMS):
        parser.error(f"the llm part needs the real LLMs made in {args.llm_dir}: python -m tools.llms")
    if unknown := parts - set(PARTS):
        parser.error(f"no part named {', '.join(sorted(unknown))}")
    with tempfile.TemporaryDirectory() as tmp:
        models = serving.model_dir_with_oversized(Path(tmp))
        port = serving.free_port()
        flags = ("--llm-dir", str(args.llm_dir)) if parts & {"llm", "llm_disconnect"} else ()
        process, startup_s = serving.start_app(port, "--model-dir", str(models), *flags, timeout_s=300)
        base = f"http://127.0.0.1:{port}"
        try:
            with urllib.request.urlopen(f"{base}/config", timeout=60) as response:
                config = json.loads(response.read())
            deps, components = config["dependencies"], {c["id"]: c for c in config["components"]}
            t0 = time.time()
            result = {"startup_s": round(startup_s, 1), "parts": sorted(parts, key=PARTS.index)}
            if "flood" in parts:
                result["light_without_flood"] = light(base, args.light, "calm")
                result["flood"] = flood(base, deps, components, args.flood)
                result["light_during_flood"] = light(base, args.light, "flooded")
            if "bad_checkpoint" in parts:
                result["bad_checkpoint"] = bad_checkpoint(base, args.clicks, model_choice(deps, components, "oversized"))
            if "memory" in parts:
                result["memory"] = memory(base, process.pid, args.distinct, args.unread, deps)
            endpoints = endpoints_info(base)
            if "wrong_types" in parts:
                result["wrong_types"] = wrong_types(base, endpoints)
            if "messages" in parts:
                result["messages"] = messages(base, endpoints)
            if "mcp" in parts:
                result["mcp"] = mcp(base)
            if "llm" in parts:
                result["llm"] = llm(base, process.pid, deps, args.light_clients, args.generations)
            if "llm_disconnect" in parts:
                result["llm_disconnect"] = llm_disconnect(base, process.pid, deps)
            result["wall_s"] = round(time.time() - t0)
        finally:
            process.terminate()
            process.wait(timeout=30)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
