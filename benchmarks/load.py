"""Many students at once: the app under 16 concurrent API clients, or a lecture hall on one link.

    python -m benchmarks.load [--clients 16] [--requests 25] [--rate R] [--model-dir DIR]
    python -m benchmarks.load --same-link [--clients 100] [--gradio-client]
    python -m benchmarks.load --same-link --own-sentences [--clients 100] [--httpx]
    python -m benchmarks.load --cached-hit
    python -m benchmarks.load --questions [--clients 100]
    python -m benchmarks.load --pages [--clients 100]

--cached-hit asks whether a cached answer waits for a worker: two 200-token generations and
twelve distinct attention views (all running: attention runs 16 at once) are running while the one
attention view already computed is asked for again, one request at a time; hit_ms is from
request to answer (target: at most 100 ms), busy_while_measured says the others were still
running when the last hit came back.

--same-link is the lecture hall: the lecturer says "everyone open this link", and every
student asks for the same attention view at the same moment, then for the same seeded
32-token generation. Each student is one session (as one browser tab is), so the first
request of each carries Gradio's per-session set-up. In a real hall the students' own
laptops do the client work; here the clients share the app's 2 cores. So the students are
light: one asyncio process speaking Gradio's documented HTTP API (`POST /gradio_api/call/NAME`,
then the answer's event stream) over plain sockets, HTTP/1.1 framed by h11, gzip accepted as
a browser does (about 2 ms of client CPU per call), and the CPU seconds of the app and of the
clients are reported apart. `--httpx` sends the same requests with httpx, the client of earlier
runs (about 18 ms of client CPU per call, so the clients took one of the 2 cores);
`--gradio-client` uses one gradio_client.Client per student (about 40 ms per call). Reported per endpoint: p50, p95
and max seconds from request to answer, the errors, and the app's peak memory.

--own-sentences is the step after: "now type your own sentence". Every student sends a
text of their own (about 12 tokens, no two alike, so no cache answers) at the same moment:
attention on the Shakespeare LM, then classify with the classifier the app picks for an English text
(the reader of English that measured best on its test set: `sentiment-crosslingual`, a 12-layer
multilingual-e5, since 2026-11-29; the pre-trained MiniLM-sized one before). The app is started on a
copy of the model folder without the from-scratch classifier, as it was when that choice was the
Sentiment tab's first.

--beside-llm DIR (with --own-sentences) asks whether a real LLM slows the hall (issue 56): the app also reads
the LLMs of DIR (`python -m tools.llms` makes them); once SmolLM2 has answered one short call, the hall sends its
sentences alone, then other sentences of its own while one visitor samples up to 200 tokens from SmolLM2 (asked
in its chat for a long story, it answers at length; the LLMs run in a queue group of one). Reported beside the
hall's figures: `beside_llm` (the same figures in that run, with whether the generation was still running when
the hall ended) and `p95_ratio` per endpoint (target: at most 1.2). One hall's p95 varies by a third from hall to
hall, so `--rounds N` sends N halls alone and N beside the LLM in turn and compares their medians.

--questions is "predict, then reveal": a lecturer's page (chromium) opens a question; 100 students
answer it within 10 s (each at a random moment, as light HTTP clients posting to the unqueued answer
endpoint, each their own session). The lecturer's page notes, in the page, when its count shows each new
number; an answer's latency is from its request to the moment the count first included it (the k-th
answer back counted once the page shows k). Reported: p50/p95/max of that, and the errors (target:
p95 <= 2 s, 0 errors), plus the memory one question holds with 1,000 answers (measured in this
process on the same lab.questions.Hall, with tracemalloc).

--pages is the moment before all of these: the hall opens the lecture's link. The files a page open asks
for (the page, then every file it loads: Gradio's built scripts and styles, the theme, our tokenizers; not the
queue's events, measured above) are recorded once in chromium; then a fresh app (nothing of it compressed or
read yet, as when a hall arrives with the app) is asked for them by 100 light clients at once, each as a
browser does: the page first, then its files over 6 connections, brotli or gzip accepted. Reported: p50, p95
and max seconds until a client has every file, the bytes a page, the app's CPU seconds a page, the errors;
then the same hall again (`again`: the tenth minute, every file read once).

Starts `python app.py` on a free port (startup_s: from the command to the first page
served), then 16 `gradio_client` clients, each in its own thread, send 25 requests each,
cycling through tokenize, attention, generate (32 new tokens), classify and translate with
varied texts, all over loopback. Afterwards one more request checks the app still answers.
That loop is closed: a faster endpoint lets its client send the next request sooner, so the
others' latencies can grow when the app gets faster. `--rate R` opens it: the same 400
requests leave at R per second from light HTTP clients (one session per client number),
so each endpoint's latency is the app's alone.
peak_rss_mb is the app process's high-water resident memory (VmHWM, from the kernel).
Prints the run's details, then one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import zlib
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import h11
import httpx
from gradio_client import Client

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "app")]
from serving import free_port, missing, model_dir, start_app  # noqa: E402  (the start-up the browser tests time)

TEXTS = [
    "To be, or not to be, that is the question.",
    "ROMEO: But soft, what light through yonder window breaks?",
    "The film was slow at first, but the ending moved me to tears.",
    "A dull, lifeless script and actors who look bored.",
    "good morning my friend",
    "Now is the winter of our discontent made glorious summer.",
]

# endpoint -> (keyword arguments for the i-th request); every other input keeps the app's default
REQUESTS = {
    "tokenize": lambda i: {"text": TEXTS[i % len(TEXTS)]},
    "attention": lambda i: {"text": TEXTS[i % len(TEXTS)]},
    "generate": lambda i: {"prompt": TEXTS[i % len(TEXTS)][:24], "max_new_tokens": 32, "seed": i},
    "classify": lambda i: {"text": TEXTS[i % len(TEXTS)]},
    "translate": lambda i: {"source": " ".join(str((3 * i + 7 * k) % 10) for k in range(8))},  # digits: the copy task
}


def without(models: Path, name: str) -> Path:
    """A folder of links to every checkpoint in `models` but `name`."""
    folder = Path(tempfile.mkdtemp())
    for entry in models.iterdir():
        if entry.name != name:
            (folder / entry.name).symlink_to(entry.resolve())
    return folder


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set size so far (Linux VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc: peak memory is measured on Linux only")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def client_run(client: Client, endpoints: list[str], offset: int, n: int, latencies: dict, errors: list) -> None:
    """One student: `n` requests, cycling through `endpoints` from a different start."""
    for i in range(n):
        name = endpoints[(offset + i) % len(endpoints)]
        started = time.perf_counter()
        try:
            client.predict(**REQUESTS[name](offset + i), api_name=f"/{name}")
            latencies[name].append((time.perf_counter() - started) * 1000)
        except Exception as e:  # every failure counts, whatever its kind
            errors.append(f"{name}: {type(e).__name__}: {str(e)[:200]}")


def closed_loop(url: str, endpoints: list[str], n_clients: int, n_requests: int) -> tuple[dict, list[str]]:
    """`n_clients` gradio_client users in threads, each sending its next request when its last is answered."""
    latencies: dict[str, list[float]] = {name: [] for name in endpoints}
    errors: list[str] = []
    # connecting (each client fetches the app's API description) is set-up, not load: one at a time
    clients = [Client(url, verbose=False, download_files=False, httpx_kwargs={"timeout": 120})
               for _ in range(n_clients)]
    threads = [threading.Thread(target=client_run, args=(client, endpoints, c, n_requests, latencies, errors))
               for c, client in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, errors


SAME_LINK = {  # the view everyone opens, as API calls: endpoint -> (student i -> its request)
    "attention": lambda i: {"text": "The cat sat on the mat because it was tired, and the dog slept by the door."},
    "generate": lambda i: {"prompt": "ROMEO:", "max_new_tokens": 32, "seed": 0},
}
WHO = ["Romeo", "Juliet", "Hamlet", "Ophelia", "Macbeth", "Banquo", "Portia", "Viola", "Prospero", "Miranda"]
DOES = ["sees the light", "hears the bell", "reads the letter", "fears the night", "loves the sun",
        "keeps the crown", "leaves the hall", "finds the ring", "sings a song", "counts the stars"]
WHEN = ["at dawn", "at dusk", "in the rain", "before the storm", "after the feast", "by the river", "on the tower",
        "in the garden", "at the gate", "near the sea"]
PART = ["acting", "plot", "music", "script", "ending", "camera work", "dialogue", "cast", "pacing", "story"]
VERDICT = ["wonderful", "dull", "moving", "boring", "brilliant", "clumsy", "tender", "lifeless", "witty", "tedious"]
OWN_SENTENCES = {  # each student's own text: 8-15 tokens (11.7 on average) for the LM, 10-13 for the classifier
    "attention": lambda i: {"model": "shakespeare-lm (language model)",
                            "text": f"{WHO[i % 10]} {DOES[i // 10 % 10]} {WHEN[(i + i // 100) % 10]}."},
    "classify": lambda i: {"text": f"The {PART[i % 10]} was {VERDICT[i // 10 % 10]}, {WHEN[(i + i // 100) % 10]}."},
}


def cpu_s(pid: int | None = None) -> float:
    """CPU seconds (user + system) used so far by process `pid`, or by this process."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def hall_with_gradio_clients(url: str, n: int, requests: dict) -> tuple[dict, list[str]]:
    """Every client sends its request at once, endpoint by endpoint: {endpoint: [seconds]}, errors."""
    clients = [Client(url, verbose=False, download_files=False, httpx_kwargs={"timeout": 300}) for _ in range(n)]
    latencies: dict[str, list[float]] = {}
    errors: list[str] = []
    for name, request in requests.items():
        barrier, times = threading.Barrier(n), []

        def student(i: int, client: Client) -> None:
            barrier.wait()
            started = time.perf_counter()
            try:
                client.predict(**request(i), api_name=f"/{name}")
                times.append(time.perf_counter() - started)
            except Exception as e:  # every failure counts, whatever its kind
                errors.append(f"{name}: {type(e).__name__}: {str(e)[:200]}")

        threads = [threading.Thread(target=student, args=(i, c)) for i, c in enumerate(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        latencies[name] = times
    return latencies, errors


async def _exchange(url: str, method: str, target: str, body: bytes = b"", until: tuple[bytes, ...] = ()) -> bytes:
    """One HTTP/1.1 request on its own connection: the answer's body, gunzipped, read to its end or, for an
    event stream, until one of the lines `until` and the data line after it have arrived."""
    host, port = url.split("//")[1].rstrip("/").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    connection = h11.Connection(h11.CLIENT)
    headers = [("Host", f"{host}:{port}"), ("Accept-Encoding", "gzip"), ("Connection", "close")]
    if body:
        headers += [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    writer.write(connection.send(h11.Request(method=method, target=target, headers=headers))
                 + (connection.send(h11.Data(data=body)) if body else b"") + connection.send(h11.EndOfMessage()))
    answer, gunzip = b"", None
    try:
        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA:
                connection.receive_data(await reader.read(65536))
            elif isinstance(event, h11.Response):
                if event.status_code >= 400:
                    raise RuntimeError(f"HTTP {event.status_code} for {method} {target}")
                if (b"content-encoding", b"gzip") in event.headers:
                    gunzip = zlib.decompressobj(wbits=31)
            elif isinstance(event, h11.Data):
                answer += gunzip.decompress(event.data) if gunzip else event.data
                found = max(answer.rfind(line) for line in until) if until else -1
                if found >= 0 and answer.count(b"\n", found) >= 2:
                    return answer
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                return answer
    finally:
        writer.close()


async def _call_socket(url: str, name: str, data: list, session: str) -> float:
    """`_call`, over plain sockets: seconds until the answer's "complete" (or "error") event arrived."""
    started = time.perf_counter()
    joined = await _exchange(url, "POST", f"/gradio_api/call/{name}",
                             json.dumps({"data": data, "session_hash": session}).encode())
    stream = await _exchange(url, "GET", f"/gradio_api/call/{name}/{json.loads(joined)['event_id']}",
                             until=(b"event: complete", b"event: error"))
    if b"event: complete" not in stream:
        raise RuntimeError(f"no result in the answer's stream: {stream[-200:]!r}")
    return time.perf_counter() - started


async def _call(http: httpx.AsyncClient, url: str, name: str, data: list, session: str) -> float:
    """One request through Gradio's HTTP API, as curl would send it: seconds until its answer arrived."""
    started = time.perf_counter()
    joined = await http.post(f"{url}gradio_api/call/{name}", json={"data": data, "session_hash": session})
    joined.raise_for_status()
    event = None
    async with http.stream("GET", f"{url}gradio_api/call/{name}/{joined.json()['event_id']}") as answer:
        async for line in answer.aiter_lines():
            if line.startswith("event:"):
                event = line.removeprefix("event:").strip()
            elif line.startswith("data:") and event in ("complete", "error"):
                if event == "error":
                    raise RuntimeError(line[:200])
                return time.perf_counter() - started
    raise RuntimeError("the answer's stream ended without a result")


def endpoints(url: str) -> dict:
    """Every named endpoint of the app and its parameters: the page's own (which the API page leaves out since
    issue 61 lists their data twins, ui/agents.py, in their place) and the twins."""
    return httpx.get(f"{url}gradio_api/info", params={"all_endpoints": "true"}).json()["named_endpoints"]


def _payload(info: dict, name: str, request: dict) -> list:
    """An endpoint's positional data for the HTTP API: `request`'s values, the app's defaults for the rest."""
    return [request.get(p["parameter_name"], p.get("parameter_default")) for p in info[f"/{name}"]["parameters"]]


async def _hall(url: str, n: int, requests: dict, httpx_client: bool = False, first: int = 0
                ) -> tuple[dict, list[str]]:
    info = endpoints(url)
    sessions = [f"student-{i}" for i in range(first, first + n)]
    latencies: dict[str, list[float]] = {}
    errors: list[str] = []
    # idle connections dropped before uvicorn's 5 s keep-alive ends (reusing a closing one failed a request)
    limits = httpx.Limits(max_connections=4 * n, max_keepalive_connections=4 * n, keepalive_expiry=4)
    async with httpx.AsyncClient(timeout=300, limits=limits) as http:
        call = functools.partial(_call, http) if httpx_client else _call_socket
        for name, request in requests.items():
            answers = await asyncio.gather(*(call(url, name, _payload(info, name, request(i)), s)
                                             for i, s in enumerate(sessions, first)), return_exceptions=True)
            latencies[name] = [a for a in answers if isinstance(a, float)]
            errors += [f"{name}: {type(a).__name__}: {str(a)[:200]}" for a in answers if not isinstance(a, float)]
    return latencies, errors


async def _open_loop(url: str, endpoints: list[str], clients: int, total: int, rate: float) -> tuple[dict, list[str]]:
    info = endpoints(url)
    limits = httpx.Limits(max_connections=4 * total, max_keepalive_connections=4 * total)
    async with httpx.AsyncClient(timeout=300, limits=limits) as http:
        calls = []
        for i in range(total):  # one request every 1/rate seconds, whatever the earlier ones are doing
            name = endpoints[i % len(endpoints)]
            calls.append(asyncio.create_task(_call(http, url, name, _payload(info, name, REQUESTS[name](i)),
                                                   f"client-{i % clients}")))
            await asyncio.sleep(1 / rate)
        answers = await asyncio.gather(*calls, return_exceptions=True)
    latencies: dict[str, list[float]] = {name: [] for name in endpoints}
    errors = []
    for i, answer in enumerate(answers):
        name = endpoints[i % len(endpoints)]
        if isinstance(answer, float):
            latencies[name].append(answer * 1000)
        else:
            errors.append(f"{name}: {type(answer).__name__}: {str(answer)[:200]}")
    return latencies, errors


async def _cached_hit(url: str, hits: int) -> dict:
    info = endpoints(url)
    view = _payload(info, "attention", SAME_LINK["attention"](0))
    async with httpx.AsyncClient(timeout=300) as http:
        computed_ms = 1000 * await _call(http, url, "attention", view, "lecturer")
        busy = [asyncio.create_task(_call(http, url, "generate", _payload(
                    info, "generate", {"prompt": TEXTS[i], "max_new_tokens": 200, "seed": 100 + i}), f"gen-{i}"))
                for i in range(2)]
        busy += [asyncio.create_task(_call(http, url, "attention", _payload(
                    info, "attention", {"text": f"{TEXTS[i % len(TEXTS)]} ({i})"}), f"view-{i}")) for i in range(12)]
        await asyncio.sleep(0.5)  # the generations and the twelve views run
        times = []
        for i in range(hits):
            times.append(1000 * await _call(http, url, "attention", view, f"student-{i}"))
        busy_while_measured = sum(not task.done() for task in busy)
        await asyncio.gather(*busy, return_exceptions=True)
    return {"mode": "cached-hit", "computed_ms": round(computed_ms), "hits": hits,
            "hit_ms_p50": round(statistics.median(times), 1), "hit_ms_max": round(max(times), 1),
            "busy_while_measured": busy_while_measured, "target_ms": 100}


def lecture_hall(url: str, n: int, requests: dict, httpx_client: bool = False, first: int = 0
                 ) -> tuple[dict, list[str]]:
    """`n` light students (numbered from `first`: their texts and sessions), each one session, sending their
    requests at once, endpoint by endpoint: {endpoint: [seconds]}, errors."""
    return asyncio.run(_hall(url, n, requests, httpx_client, first))


LLM_TOKENS = 200  # the most the app generates at once (lab.generate.MAX_NEW_TOKENS)


def _llm_request(url: str, prompt: str, new_tokens: int, seed: int = 0) -> list:
    """generate_llm's data: its defaults, SmolLM2 picked, `prompt` asked in its chat, `new_tokens` sampled with
    `seed` (a request asked before is answered from the app's cache)."""
    info = endpoints(url)["/generate_llm"]["parameters"]
    smollm2 = next(c for c in info[[p["parameter_name"] for p in info].index("model_label")]["type"]["enum"]
                   if "SmolLM2" in c)
    return _payload({"/generate_llm": {"parameters": info}}, "generate_llm", {
        "model_label": smollm2, "prompt": prompt, "max_new_tokens": new_tokens, "mode": "sample", "chat": True,
        "seed": seed})


def _figures(latencies: dict) -> dict:
    return {"p50_s": {name: round(statistics.median(v), 2) for name, v in latencies.items() if v},
            "p95_s": {name: round(percentile(v, 0.95), 2) for name, v in latencies.items() if v},
            "max_s": {name: round(max(v), 2) for name, v in latencies.items() if v}}


def beside_llm(args, url: str, requests: dict, first: int) -> dict:
    """The hall again (other students, other sentences, numbered from `first`) while one visitor samples up to 200
    tokens from SmolLM2."""
    generation: dict = {}

    def visitor() -> None:
        generation["s"] = asyncio.run(_call_socket(url, "generate_llm", _llm_request(
            url, "Tell me a long story about a lighthouse keeper.", LLM_TOKENS, first), "llm-visitor"))

    thread = threading.Thread(target=visitor, daemon=True)
    thread.start()
    time.sleep(1.0)  # the generation has started streaming
    latencies, errors = lecture_hall(url, args.clients, requests, args.httpx, first=first)
    running = thread.is_alive()
    thread.join()
    return {**_figures(latencies), "errors": len(errors), "generation_running_at_the_end": running,
            "generation_s": round(generation.get("s", float("nan")), 2)}


def same_link(args, url: str, process, startup_s: float) -> dict:
    if args.beside_llm:  # SmolLM2 loaded and warm: the hall then meets it as a class would
        asyncio.run(_call_socket(url, "generate_llm", _llm_request(url, "Hello", 2), "llm-warm"))
    time.sleep(args.settle)
    app_cpu, own_cpu = cpu_s(process.pid), cpu_s()
    requests = OWN_SENTENCES if args.own_sentences else SAME_LINK
    if args.gradio_client:
        latencies, errors = hall_with_gradio_clients(url, args.clients, requests)
    else:
        latencies, errors = lecture_hall(url, args.clients, requests, args.httpx)
    app_cpu, own_cpu = cpu_s(process.pid) - app_cpu, cpu_s() - own_cpu
    rss = peak_rss_mb(process.pid)
    for name, values in latencies.items():
        print(f"{name:10s} n={len(values):4d} p50={statistics.median(values):6.2f} s "
              f"p95={percentile(values, 0.95):6.2f} s max={max(values):6.2f} s")
    result = {
        "mode": "own-sentences" if args.own_sentences else "same-link", "clients": args.clients, "settle_s": args.settle,
        "client": "gradio_client" if args.gradio_client else "httpx" if args.httpx else "socket",
        "startup_s": round(startup_s, 2), "errors": len(errors), **_figures(latencies),
        "peak_rss_mb": round(rss),
        "app_cpu_s": round(app_cpu, 2), "clients_cpu_s": round(own_cpu, 2),
    }
    if args.beside_llm:  # alone and beside an LLM in turn, `--rounds` times (a hall's p95 varies from hall to hall)
        alone, beside = [result["p95_s"]], []
        for k in range(args.rounds):
            if k:
                alone.append(_figures(lecture_hall(url, args.clients, requests, args.httpx, 2 * k * args.clients)[0])
                             ["p95_s"])
            beside.append(beside_llm(args, url, requests, (2 * k + 1) * args.clients))
        result["beside_llm"] = beside[0] if args.rounds == 1 else beside
        if args.rounds > 1:
            result["p95_s_by_round"] = alone
        median = {name: statistics.median(a[name] for a in alone) for name in alone[0]}
        result["p95_ratio"] = {name: round(statistics.median(b["p95_s"][name] for b in beside) / median[name], 2)
                               for name in median}
    for e in errors[:10]:
        print("error:", e)
    print(json.dumps(result))
    return result


COUNT_SEEN = """() => { window.counts = []; const box = document.querySelector('#question-count');
  new MutationObserver(() => { const m = box.textContent.match(/(\\d+)/);
    if (m) window.counts.push([Number(m[1]), Date.now() / 1000]); })
    .observe(box, {childList: true, subtree: true, characterData: true}); }"""
ANSWER_WINDOW_S = 10.0


async def _answer(url: str, code: str, student: str, delay: float) -> tuple[float, float]:
    """One student's answer after `delay` s: (wall-clock time sent, time answered)."""
    await asyncio.sleep(delay)
    sent = time.time()
    body = json.dumps({"data": [code, None, "7", "en"], "session_hash": student}).encode()
    joined = await _exchange(url, "POST", "/gradio_api/call/question_answer", body)  # queued (ui/events.py)
    answer = await _exchange(url, "GET", f"/gradio_api/call/question_answer/{json.loads(joined)['event_id']}",
                             until=(b"event: complete", b"event: error"))
    if b"Your answer" not in answer:
        raise RuntimeError(f"answer refused: {answer[-200:]!r}")
    return sent, time.time()


def memory_of_answers(n: int = 1000) -> float:
    """KB one open question holds with `n` answers (each a session hash of 36 characters and a number)."""
    import tracemalloc
    import uuid

    from lab.questions import Hall

    hall = Hall()
    opened = hall.open("causal_sees")
    students = [str(uuid.uuid4()) for _ in range(n)]
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i, student in enumerate(students):
        hall.answer(opened.code, student, str(i % 9))
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return held / 1024


def questions(args, url: str, process, startup_s: float) -> dict:
    import random

    from playwright.sync_api import sync_playwright
    from test_browser import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.set_default_timeout(120_000)
        page.goto(f"{url}?tab=questions")
        page.locator("#question-lecturer").get_by_text("Lecturer").click()
        page.locator("#question-open").click()
        page.locator("#question-link").get_by_text("code=").wait_for()  # the link under the QR code
        code = page.locator("#question-link").inner_text().split("code=")[1][:5]
        page.evaluate(COUNT_SEEN)
        app_cpu = cpu_s(process.pid)
        rng = random.Random(0)
        delays = sorted(rng.uniform(0, ANSWER_WINDOW_S) for _ in range(args.clients))

        async def hall():
            return await asyncio.gather(*(_answer(url, code, f"student-{i}", d) for i, d in enumerate(delays)),
                                        return_exceptions=True)

        answered: list = []  # playwright's sync API holds this thread's event loop: the students run beside it
        students = threading.Thread(target=lambda: answered.extend(asyncio.run(hall())))
        students.start()
        students.join()
        answers = answered
        page.wait_for_function(f"() => window.counts.some(([n]) => n >= {args.clients})", timeout=30_000)
        counts = page.evaluate("window.counts")
        browser.close()
    if os.environ.get("LOAD_DEBUG"):
        start = min(a[0] for a in answers if isinstance(a, tuple))
        print("counts", [(n, round(t - start, 2)) for n, t in counts if n])
        print("answered", sorted(round(b - start, 2) for a, b in (x for x in answers if isinstance(x, tuple))))
    app_cpu = cpu_s(process.pid) - app_cpu
    done = sorted((a for a in answers if isinstance(a, tuple)), key=lambda a: a[1])
    errors = [f"{type(a).__name__}: {str(a)[:200]}" for a in answers if not isinstance(a, tuple)]
    latencies = []
    for k, (sent, _) in enumerate(done, start=1):
        seen = min((t for n, t in counts if n >= k), default=None)
        if seen is None:
            errors.append(f"answer {k} never counted on the lecturer's page")
        else:
            latencies.append(max(seen - sent, 0.0))
    result = {"mode": "questions", "clients": args.clients, "window_s": ANSWER_WINDOW_S,
              "startup_s": round(startup_s, 2), "errors": len(errors),
              "answer_to_count_p50_s": round(statistics.median(latencies), 2) if latencies else None,
              "answer_to_count_p95_s": round(percentile(latencies, 0.95), 2) if latencies else None,
              "answer_to_count_max_s": round(max(latencies), 2) if latencies else None,
              "answer_request_p95_s": round(percentile([b - a for a, b in done], 0.95), 3) if done else None,
              "memory_1000_answers_kb": round(memory_of_answers(), 1), "peak_rss_mb": round(peak_rss_mb(process.pid)),
              "app_cpu_s": round(app_cpu, 2), "load_average_1min": round(os.getloadavg()[0], 2)}
    for e in errors[:10]:
        print("error:", e)
    print(json.dumps(result))
    return result


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--same-link", action="store_true", help="a lecture hall: every client, the same request")
    parser.add_argument("--cached-hit", action="store_true",
                        help="time a cached attention view while two generations and twelve views run")
    parser.add_argument("--clients", type=int, default=None, help="default 16, or 100 with --same-link")
    parser.add_argument("--own-sentences", action="store_true",
                        help="--same-link with a text of each student's own: attention, then classify (pre-trained)")
    # 0: the hall arrives with the first page, while the app still loads its large checkpoints (lab/store.warm)
    parser.add_argument("--settle", type=float, default=0.0,
                        help="--same-link: seconds between the app's first page and the students, as in a hall "
                             "where the lecturer opened the app before the class (default 0)")
    parser.add_argument("--gradio-client", action="store_true",
                        help="--same-link with one gradio_client.Client per student instead of light HTTP clients")
    parser.add_argument("--httpx", action="store_true",
                        help="--same-link with the light clients speaking through httpx (earlier runs' client)")
    parser.add_argument("--beside-llm", type=Path, default=None, metavar="DIR",
                        help="--own-sentences, then again while one visitor generates with SmolLM2 from DIR")
    parser.add_argument("--rounds", type=int, default=1,
                        help="--beside-llm: halls alone and beside the LLM in turn, this many of each")
    parser.add_argument("--questions", action="store_true",
                        help="predict, then reveal: 100 students answer one question within 10 s; answer -> count")
    parser.add_argument("--pages", action="store_true",
                        help="the hall opens the lecture's link: 100 clients fetch the page and all its files")
    parser.add_argument("--requests", type=int, default=25, help="requests per client")
    parser.add_argument("--rate", type=float, default=None,
                        help="open loop: light HTTP clients send the same mix at this many requests per second, "
                             "whatever the answers do (a closed loop's latencies depend on its own speed)")
    parser.add_argument("--model-dir", default=None,
                        help="checkpoint folder for the app (default: assets/, with random stand-ins for any "
                             "checkpoint still missing there, listed as stand_ins in the result)")
    args = parser.parse_args(argv)
    if args.beside_llm and not args.own_sentences:
        parser.error("--beside-llm measures the hall of --own-sentences")
    args.same_link = args.same_link or args.own_sentences
    args.clients = args.clients or (100 if args.same_link or args.questions or args.pages else 16)
    if args.rate is not None and not 0 < args.rate < float("inf"):
        parser.error(f"--rate {args.rate:g}: must be a positive number of requests per second")
    if not 0 <= args.settle < float("inf"):
        parser.error(f"--settle {args.settle:g}: must be a number of seconds, 0 or more")
    return args


PAGE_LINK = "?lecture=1"
BROWSER_CONNECTIONS = 6  # a browser's connections to one host over HTTP/1.1


def page_files(url: str) -> list[str]:
    """The paths one page open of PAGE_LINK asks the app for, the page first, recorded in chromium; the queue's
    and the API's requests (/gradio_api/) are left out."""
    from playwright.sync_api import sync_playwright

    from test_browser import CHROMIUM, CHROMIUM_ARGS

    paths = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.on("request", lambda r: paths.append(r.url[len(url) - 1:]) if r.method == "GET" and r.url.startswith(
            url) and "/gradio_api/" not in r.url else None)
        page.goto(url + PAGE_LINK)
        page.locator("#tab-about-button").wait_for(timeout=120_000)
        page.wait_for_timeout(5000)  # the files a tab's first view loads (plotly)
        browser.close()
    return list(dict.fromkeys(paths))


async def _fetch(url: str, target: str) -> int:
    """GET `target` as a browser does (brotli or gzip accepted, not decoded): the bytes received."""
    host, port = url.split("//")[1].rstrip("/").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    connection = h11.Connection(h11.CLIENT)
    writer.write(connection.send(h11.Request(method="GET", target=target, headers=[
        ("Host", f"{host}:{port}"), ("Accept-Encoding", "gzip, deflate, br"), ("Connection", "close")]))
        + connection.send(h11.EndOfMessage()))
    received = 0
    try:
        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA:
                connection.receive_data(await reader.read(65536))
            elif isinstance(event, h11.Response) and event.status_code >= 400:
                raise RuntimeError(f"HTTP {event.status_code} for {target}")
            elif isinstance(event, h11.Data):
                received += len(event.data)
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                return received
    finally:
        writer.close()


async def _open_page(url: str, files: list[str]) -> tuple[float, int]:
    """(seconds, bytes) of one page open: the page, then its files over BROWSER_CONNECTIONS connections."""
    started = time.perf_counter()
    received = await _fetch(url, files[0])
    gate = asyncio.Semaphore(BROWSER_CONNECTIONS)

    async def one(path: str) -> int:
        async with gate:
            return await _fetch(url, path)

    received += sum(await asyncio.gather(*(one(path) for path in files[1:])))
    return time.perf_counter() - started, received


def _page_hall(url: str, files: list[str], n: int, pid: int) -> dict:
    """n page opens at once: seconds (p50, p95, max), KB a page, the app's CPU seconds a page, errors."""
    before = cpu_s(pid)

    async def hall():
        return await asyncio.gather(*(_open_page(url, files) for _ in range(n)), return_exceptions=True)

    results = asyncio.run(hall())
    opened = [r for r in results if not isinstance(r, BaseException)]
    errors = [f"{type(r).__name__}: {str(r)[:200]}" for r in results if isinstance(r, BaseException)]
    seconds = [s for s, _ in opened]
    return {"p50_s": round(statistics.median(seconds), 2) if seconds else None,
            "p95_s": round(percentile(seconds, 0.95), 2) if seconds else None,
            "max_s": round(max(seconds), 2) if seconds else None,
            "kb_per_page": round(statistics.median(b for _, b in opened) / 1000, 1) if opened else None,
            "app_cpu_s_per_page": round((cpu_s(pid) - before) / n, 3), "errors": len(errors), "first_errors": errors[:3]}


def pages(args, models: Path) -> dict:
    """--pages (see the module's note)."""
    port = free_port()
    process, _ = start_app(port, "--model-dir", str(models))
    try:
        files = page_files(f"http://127.0.0.1:{port}/")
    finally:
        process.terminate()
        process.wait(timeout=30)
    port = free_port()
    process, startup_s = start_app(port, "--model-dir", str(models))
    url = f"http://127.0.0.1:{port}/"
    try:
        result = {"startup_s": round(startup_s, 2), "clients": args.clients, "files_per_page": len(files),
                  "first": _page_hall(url, files, args.clients, process.pid)}
        result["again"] = _page_hall(url, files, args.clients, process.pid)
    finally:
        process.terminate()
        process.wait(timeout=30)
    print(json.dumps(result))
    return result


def main(argv=None) -> dict:
    args = parse_args(argv)
    stand_ins = [] if args.model_dir else missing()
    models = args.model_dir or model_dir(Path(tempfile.mkdtemp()))
    if args.own_sentences:
        models = without(Path(models), "sentiment")
    if args.pages:
        return pages(args, Path(models))
    port = free_port()
    llms = ("--llm-dir", str(args.beside_llm)) if args.beside_llm else ()
    process, startup_s = start_app(port, "--model-dir", str(models), *llms)
    url = f"http://127.0.0.1:{port}/"
    if args.cached_hit:
        try:
            result = asyncio.run(_cached_hit(url, 10))
            print(json.dumps(result))
            return result
        finally:
            process.terminate()
            process.wait(timeout=30)
    if args.questions:
        try:
            return questions(args, url, process, startup_s)
        finally:
            process.terminate()
            process.wait(timeout=30)
    if args.same_link:
        try:
            return same_link(args, url, process, startup_s)
        finally:
            process.terminate()
            process.wait(timeout=30)
    return mixed(args, url, process, startup_s, stand_ins)


def mixed(args, url: str, process, startup_s: float, stand_ins: list[str]) -> dict:
    """Every client sends the mix of REQUESTS (closed loop, or open loop at --rate); stops the app after."""
    try:
        exposed = set(endpoints(url))
        endpoints = [name for name in REQUESTS if f"/{name}" in exposed]
        missing_endpoints = [name for name in REQUESTS if name not in endpoints]
        print(f"startup {startup_s:.1f} s; endpoints {endpoints}; missing {missing_endpoints}; stand-ins {stand_ins}")

        started = time.perf_counter()
        if args.rate:
            latencies, errors = asyncio.run(_open_loop(url, endpoints, args.clients, args.clients * args.requests,
                                                       args.rate))
        else:
            latencies, errors = closed_loop(url, endpoints, args.clients, args.requests)
        wall_s = time.perf_counter() - started
        Client(url, verbose=False).predict(**REQUESTS["tokenize"](0), api_name="/tokenize")
        answers_after = True
        rss = peak_rss_mb(process.pid)
    finally:
        process.terminate()
        process.wait(timeout=30)

    for e in errors[:10]:
        print("error:", e)
    total = sum(len(v) for v in latencies.values()) + len(errors)
    for name, values in latencies.items():
        if not values:
            print(f"{name:10s} every request failed")
            continue
        print(f"{name:10s} n={len(values):4d} p50={statistics.median(values):8.0f} ms "
              f"p95={percentile(values, 0.95):8.0f} ms max={max(values):8.0f} ms")
    print(f"{total} requests from {args.clients} clients in {wall_s:.0f} s ({total / wall_s:.1f} req/s)")
    result = {
        "startup_s": round(startup_s, 2),
        "mode": f"open-loop {args.rate:g}/s" if args.rate else "closed-loop",
        "clients": args.clients,
        "requests": total,
        "errors": len(errors),
        "missing_endpoints": missing_endpoints,
        "stand_ins": stand_ins,
        "p50_ms": {name: round(statistics.median(v)) for name, v in latencies.items() if v},
        "p95_ms": {name: round(percentile(v, 0.95)) for name, v in latencies.items() if v},
        "wall_s": round(wall_s, 1),
        "answers_after": answers_after,
        "peak_rss_mb": round(rss),
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
