"""The public door (issue 49): one hostile visitor against everyone else, measured on a running app.

    python -m benchmarks.door [--flood 300] [--light 20] [--distinct 2000] [--unread 150] [--clicks 10]

Starts `python app.py` on a copy of the model folder with one oversized checkpoint added (a config of
d_model 2048 x 12 layers, 2.3 GiB of float32 parameters), then, over the browser's own protocol
(`POST /gradio_api/queue/join`, then the session's event stream) or the HTTP API:

- queue flood: one session sends `--flood` joins for live training (10 s budget) and reads none of the
  answers; then `--light` tokenize requests from other sessions, one after another. Their p95 and
  errors (target: 0 errors, p95 <= 1 s), and how the flood's joins were answered (admitted, refused 429).
- memory: `--distinct` distinct requests over tokenize, attention, masking and classify, then `--unread`
  5,000-character tokenize answers never read. The app's RSS before, after and 10 s later, against
  the stated budget (the cache budget + the session state budget + the app at rest).
- bad checkpoint: one client asks for attention on the oversized model `--clicks` times while another
  sends light requests: their p95 (target <= 0.5 s) and the oversized model's answer.

On a loaded machine, pass small numbers (`--distinct 200`); the JSON on the last line says which ran.
"""

from __future__ import annotations

import argparse
import json
import shutil
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

OVERSIZED = {"arch": "DecoderLM", "vocab_size": 4096, "d_model": 2048, "n_head": 16, "n_layer": 12, "d_ff": 8192,
             "max_len": 256, "dropout": 0.0}
TEXT_5000 = ("天地玄黄，宇宙洪荒。To be, or not to be: that is the question. " * 100)[:5000]


def post(url: str, body: dict, timeout: float = 60) -> tuple[int, dict | str]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()[:300]


def call(base: str, api: str, data: list, timeout: float = 120) -> tuple[float, bool]:
    """One HTTP API call, answer read: (seconds, succeeded)."""
    t0 = time.perf_counter()
    status, joined = post(f"{base}/gradio_api/call/{api}", {"data": data}, timeout)
    if status != 200:
        return time.perf_counter() - t0, False
    with urllib.request.urlopen(f"{base}/gradio_api/call/{api}/{joined['event_id']}", timeout=timeout) as stream:
        body = stream.read().decode()
    return time.perf_counter() - t0, "event: complete" in body


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
        seconds, ok = call(base, "tokenize", [f"{tag} light request {i}: the cat sat on the mat", "en"])
        times.append(seconds)
        errors += not ok
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


def memory(base: str, pid: int, distinct: int, unread: int, deps: list, lm: str) -> dict:
    before = rss_mb(pid)
    endpoints = [("tokenize", lambda i: [f"distinct text {i} " * 20, "en"]),
                 ("attention", lambda i: [lm, f"The cat number {i} sat on the mat.", "decoder", 0, 0, 0]),
                 ("classify", lambda i: [f"A film, number {i}, and I liked it.", "gradient × input"])]
    errors, lock = 0, threading.Lock()

    def work(start: int) -> None:
        nonlocal errors
        for i in range(start, distinct, 4):
            api, make = endpoints[i % len(endpoints)]
            try:
                ok = call(base, api, make(i))[1]
            except Exception:  # noqa: BLE001 -- counted
                ok = False
            with lock:
                errors += not ok
    workers = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    after_distinct = rss_mb(pid)
    tokenize = next(i for i, d in enumerate(deps) if d.get("api_name") == "tokenize")
    refused = 0
    for i in range(unread):  # each its own session, as many visitors would; none reads its answer
        status, _ = post(f"{base}/gradio_api/queue/join", {"data": [f"{i} {TEXT_5000}"[:5000], "en"],
                                                           "fn_index": tokenize, "session_hash": uuid.uuid4().hex[:10],
                                                           "trigger_id": None})
        refused += status != 200
    time.sleep(10)
    return {"distinct_requests": distinct, "errors": errors, "unread_answers": unread, "unread_refused": refused,
            "rss_mb_before": before, "rss_mb_after_distinct": after_distinct, "rss_mb_after_unread": rss_mb(pid)}


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
            "clicks_refused": sum(not ok for _, ok in answers), **{f"light_{k}": v for k, v in result.items()}}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flood", type=int, default=300)
    parser.add_argument("--light", type=int, default=20)
    parser.add_argument("--distinct", type=int, default=2000)
    parser.add_argument("--unread", type=int, default=150)
    parser.add_argument("--clicks", type=int, default=10)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        models = Path(tmp) / "models"
        models.mkdir()
        source = serving.model_dir(Path(tmp))
        for entry in Path(source).iterdir():
            if entry.is_dir() and entry != models:
                (models / entry.name).symlink_to(entry.resolve())
        (models / "oversized").mkdir()
        (models / "oversized" / "config.json").write_text(json.dumps(OVERSIZED))
        (models / "oversized" / "model.safetensors").write_bytes(b"never read: refused from its config")
        shutil.copy(serving.ASSETS / "shakespeare-bpe" / "tokenizer.json", models / "oversized" / "tokenizer.json")
        port = serving.free_port()
        process, startup_s = serving.start_app(port, "--model-dir", str(models), timeout_s=300)
        base = f"http://127.0.0.1:{port}"
        try:
            with urllib.request.urlopen(f"{base}/config", timeout=60) as response:
                config = json.loads(response.read())
            deps, components = config["dependencies"], {c["id"]: c for c in config["components"]}
            result = {"startup_s": round(startup_s, 1), "light_without_flood": light(base, args.light, "calm")}
            result["flood"] = flood(base, deps, components, args.flood)
            result["light_during_flood"] = light(base, args.light, "flooded")
            result["bad_checkpoint"] = bad_checkpoint(base, args.clicks, model_choice(deps, components, "oversized"))
            result["memory"] = memory(base, process.pid, args.distinct, args.unread, deps,
                                      model_choice(deps, components, "shakespeare-lm"))
        finally:
            process.terminate()
            process.wait(timeout=30)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
