"""Where people wait: seconds from a click until the tab's outputs are drawn, and the bytes the browser received.

    python -m benchmarks.browser [--repeats 3] [--model-dir DIR] [--llm-dir DIR] [--lang en|zh-CN] [--only ACTION ...]

Starts `python app.py`, opens it in Debian's chromium (playwright) at 1280x720 and, for each
tab's main action, types the text, clicks the button and waits until every visible plot
holds data, every expected output is filled and no progress indicator remains: the same
"drawn" the browser tests assert. The clock runs inside the page: from the click's own event time (the
Tokens tab's: the typing's) to the first animation frame in which the view is drawn anew, the frame that
paints it (`CLOCK`). Nothing else watches the page meanwhile: chromium shares this machine's two cores with
the app, where a visitor's browser runs on a device of its own, so the clock looks at the whole tab only once
the outputs it waits for have changed, and Python only reads the clock (until 2026-12-03 a Python poll of the
tab every 20 ms and a walk of it every frame took part of a core from the app: see benchmarks/RESULTS.md). Bytes are what the page received over the network during that wait, counted on the wire
by a loopback relay between chromium and the app (Chrome DevTools reports 0 bytes for chunks of a stream
that is still open, as Gradio's answers are). Each action runs on a fresh page with a text not seen before
in the run, so neither the browser's nor the server's caches answer it. Generation also reports the time
to its first streamed token and the bytes per streamed token. `--lang` opens every page in that language
(`?lang=`); `switch_language_128` is the language switch on the 128-token attention view: from the click on
the other language until that view is drawn again in it (labels, titles, notices), from the runs the server
already has. `forward_stage_128` is a click on the Forward pass tab's "Next stage" (a 128-token text of the
Shakespeare LM, its walk already run): until the next stage is drawn, and its bytes (targets: 0.3 s, 60 KB).
`forward_stage_llm_64`, `logit_lens_llm_32`, `switch_off_llm`, `attention_llm_64` and `flow_llm_32` are the same
waits on SmolLM2 (`--llm-dir`, e.g. ~/.cache/transformer_lab/checkpoints; targets 0.3, 1.0, 1.0, 1.0 and 2.0 s);
`logit_lens_gemma_llm_32` is the lens on Gemma 3 270M.
`tokenize` is drawn once the page has drawn our byte-level BPEs' chips for the typed text (ui/tokens.js, the
other panels dimmed); `tokenize_answered` once the server's answer has replaced every panel (issue 58).
Prints one line per action, then one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote_plus, urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "app")]
from serving import free_port, model_dir, start_app  # noqa: E402

from test_browser import CHROMIUM, CHROMIUM_ARGS, PROJECTOR, SEEN  # noqa: E402  (one definition of "drawn")

from i18n import NAMES  # noqa: E402

SHAKESPEARE = ("Now is the winter of our discontent made glorious summer by this sun of York, and all the clouds "
               "that loured upon our house in the deep bosom of the ocean buried. Now are our brows bound with "
               "victorious wreaths, our bruised arms hung up for monuments, our stern alarums changed to merry "
               "meetings, our dreadful marches to delightful measures. Grim-visaged war hath smooth'd his wrinkled "
               "front, and now, instead of mounting barbed steeds to fright the souls of fearful adversaries, he "
               "capers nimbly in a lady's chamber to the lascivious pleasing of a lute.")


def text(i: int, words: int) -> str:
    """A text of about `words` words that no earlier run of this benchmark typed (so no cache holds it)."""
    base = SHAKESPEARE.split()
    return " ".join(base[(i + k) % len(base)] for k in range(words)) + f" {i}"


# action -> (tab, {input selector: text for run i}, button selector, selectors that must be filled, streamed)
ACTIONS = {
    "attention_128": ("attention", {"#tab-attention textarea": lambda i: text(i, 110)}, "#attention-run",
                      ["#attention-grid .js-plotly-plot"], False),
    # the pre-trained multilingual encoder (12 layers x 12 heads, issue 47): the same view, its grid 144 heads
    "attention_e5_128": ("attention", {"#tab-attention textarea": lambda i: text(i, 110)}, "#attention-run",
                         ["#attention-grid .js-plotly-plot"], False),
    "masking_128": ("masking", {"#tab-masking textarea": lambda i: text(i, 110)}, "#masking-run",
                    ["#masking-gallery .js-plotly-plot"], False),
    "tokenize": ("tokens", {"#tab-tokens textarea": lambda i: text(i, 40)}, None, ["#tokens-chips .tok"], False),
    # the same typing, until the server's answer has replaced every panel the page drew or dimmed (ANSWERED)
    "tokenize_answered": ("tokens", {"#tab-tokens textarea": lambda i: text(i, 40)}, None, ["#tokens-chips .tok"],
                          False),
    "generate_80": ("generate", {"#tab-generate textarea": lambda i: f"ROMEO {i}:"}, "#generate-run",
                    ["#generated-text .token"], True),
    "classify": ("sentiment", {"#tab-sentiment textarea": lambda i: f"A moving film, {i} stars."},
                 "#sentiment-run", ["#sentiment-tokens span"], False),
    # a 700-word review (benchmarks.classify_latency's), read by sentences: drawn = the strip and the running chart
    "classify_review": ("sentiment", {"#tab-sentiment textarea": lambda i: f"Review {i}. {review()}"},
                        "#sentiment-run", ["#sentiment-strip .sentence", "#sentiment-running .js-plotly-plot"], False),
    "translate": ("translate", {"#tab-translate textarea": lambda i: str(10 ** 7 + 7919 * i)[:9]},
                  "#translate-run", ["#translate-attention .js-plotly-plot"], False),
    # what a head does (Attention tab): find re-slices the run the page already drew (a new key each time)
    "find_head": ("attention", {"#find-key textarea": lambda i: str(1 + i % 12)}, "#find-button",
                  ["#find-ranking .js-plotly-plot"], False),
    "importance_lm_128": ("attention", {"#tab-attention textarea": lambda i: text(i, 110)}, "#importance-button",
                          ["#importance-map .js-plotly-plot"], False),
    "importance_encoder_40": ("attention", {"#tab-attention textarea": lambda i: text(i, 30)}, "#importance-button",
                              ["#importance-map .js-plotly-plot"], False),
    "logit_lens_128": ("attention", {"#tab-attention textarea": lambda i: text(i, 110)}, "#lens-button",
                       ["#lens-table .js-plotly-plot"], False),
    # the real LLMs (--llm-dir): SmolLM2's lens at ~32 tokens, one of its heads switched off (a new head each time)
    "logit_lens_llm_32": ("attention", {"#tab-attention textarea": lambda i: text(i, 24)}, "#lens-button",
                          ["#lens-table .js-plotly-plot"], False),
    # Gemma's lens: the same wait over a vocabulary 5.3 times SmolLM2's (issue 57 names no model for its 1.0 s)
    "logit_lens_gemma_llm_32": ("attention", {"#tab-attention textarea": lambda i: text(i, 24)}, "#lens-button",
                                ["#lens-table .js-plotly-plot"], False),
    "switch_off_llm": ("attention", {"#heads-off textarea": lambda i: f"L{i % 30} H{i % 9}"}, "#ablate-button",
                       ["#ablate-outcome .js-plotly-plot"], False),
    # SmolLM2's 30 x 9 heads at ~64 tokens (issue 56: <= 1.0 s), and its contribution graph at ~32 (issue 57: 2.0 s)
    "attention_llm_64": ("attention", {"#tab-attention textarea": lambda i: text(i, 50)}, "#attention-run",
                         ["#attention-grid .js-plotly-plot"], False),
    "flow_llm_32": ("inside", {"#tab-inside #inside-flow textarea": lambda i: text(i, 24)}, "#inside-flow-run",
                    ["#inside-flow-graph .js-plotly-plot"], False),
}
SMOLLM2 = "SmolLM2-135M-Instruct (real LLM)"
ANIMAL = "The animal didn't cross the street because it was too tired"
# the link an action's page opens first (default: its tab), waited for until drawn
START = {
    # with a short text: a link with no text draws no verdict to wait for (the page then waited its whole
    # 120 s deadline before each click)
    "classify": {"text": "A fine film."},
    "classify_review": {"classifier": "pre-trained + fine-tuned (22.6M)", "text": "A fine film."},
    "find_head": {"model": "sentiment-pretrained (classifier)", "attention": "encoder", "text": ANIMAL,
                  "heads_view": "find", "find_query": "it", "find_key": "animal"},
    "importance_lm_128": {"model": "shakespeare-lm (language model)", "heads_view": "ablate"},
    "importance_encoder_40": {"model": "sentiment-pretrained (classifier)", "attention": "encoder",
                              "heads_view": "ablate"},
    "logit_lens_128": {"model": "shakespeare-lm (language model)", "heads_view": "lens"},
    "logit_lens_llm_32": {"model": SMOLLM2, "heads_view": "lens"},
    "logit_lens_gemma_llm_32": {"model": "Gemma 3 270M (real LLM)", "heads_view": "lens"},
    "switch_off_llm": {"model": SMOLLM2, "text": ANIMAL, "heads_view": "ablate"},
    "attention_llm_64": {"model": SMOLLM2, "text": ANIMAL},
    "flow_llm_32": {"model": "smollm2-135m-instruct", "text": ANIMAL},
    "attention_e5_128": {"model": "multilingual-e5 (pre-trained multilingual encoder)", "attention": "encoder",
                         "text": ANIMAL},
}


@functools.cache
def review() -> str:
    from benchmarks.classify_latency import REVIEW_WORDS, review_of

    return review_of(REVIEW_WORDS)


# link parameters an action's page opens with, beside its tab: the review is read by the pre-trained classifier


class Relay:
    """A loopback TCP relay in front of the app that counts the bytes it sends to the browser."""

    def __init__(self, app_port: int):
        self.app_port, self.port, self.bytes = app_port, free_port(), 0
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        threading.Thread(target=self._serve, args=(ready,), daemon=True).start()
        ready.wait()

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.1", self.port))
        ready.set()
        self.loop.run_until_complete(server.serve_forever())

    async def _client(self, browser_r, browser_w) -> None:
        app_r, app_w = await asyncio.open_connection("127.0.0.1", self.app_port)
        await asyncio.gather(self._pipe(browser_r, app_w, count=False), self._pipe(app_r, browser_w, count=True))

    async def _pipe(self, reader, writer, count: bool) -> None:
        try:
            while chunk := await reader.read(65536):
                if count:
                    self.bytes += len(chunk)
                writer.write(chunk)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()


# Timed inside the page, not by polling from Python: a poll of the DOM costs tens of milliseconds
# itself, so a polled first token read 0.25-0.5 s from run to run.
FIRST_TOKEN = """(button) => {
  const tokens = () => document.querySelectorAll('#generated-text .token').length;
  const before = tokens();
  window.firstTokenMs = null;
  document.querySelector(button).addEventListener('click', () => {
    const clicked = performance.now();
    const seen = new MutationObserver(() => {
      if (tokens() > 1 && tokens() !== before) {
        window.firstTokenMs = performance.now() - clicked;
        seen.disconnect();
      }
    });
    seen.observe(document.querySelector('#generated-text'), {childList: true, subtree: true, characterData: true});
  }, {capture: true, once: true});
}"""


# Where the person waits: a poll from Python lands tens of milliseconds after the frame that showed the view
# (each poll is a round trip that runs SEEN), so the clock starts on the trigger's own event and stops in the
# first animation frame where the view is drawn anew: each of `needs` is a new element or shows a new text
# (an HTML output may keep its elements), and `more` (a predicate on `arg`) holds.
CLOCK = """([trigger, kind, tab, needs, arg]) => {
  const seen = %s, more = %s;
  const shown = (sel) => Array.from(document.querySelectorAll(sel), (e) => e.textContent).join('|');
  const before = needs.map((sel) => [document.querySelector(sel), shown(sel)]);
  window.drawnMs = null;
  document.querySelector(trigger).addEventListener(kind, (event) => {
    const frame = () => {
      // the whole tab is walked only once its new outputs are there: a walk each frame took ~5 ms of the
      // page's main thread, on the cores the server shares with chromium here
      const fresh = needs.every((sel, k) => { const e = document.querySelector(sel);
        return e && (e !== before[k][0] || shown(sel) !== before[k][1]); });
      const s = fresh && more(arg) ? seen(tab) : null;
      if (s && s.busy === 0 && s.blank.length === 0 && s.plots.every((p) => p.data > 0 || p.notes > 0)) {
        window.drawnMs = performance.now() - event.timeStamp;
        return;
      }
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  }, {capture: true, once: true});
}"""
STREAMED = "(tokens) => document.querySelectorAll('#generated-text .token').length >= tokens"
# The Tokens tab draws our BPEs' panels in the page as the text is typed (ui/tokens.js): `tokenize` is drawn
# then; the rest wait dimmed for the server's answer, which `tokenize_answered` waits for too
ANSWERED = "() => !document.querySelector('#tokens-chips .panel.pending')"


def arm(page, trigger: str, kind: str, tab: str, needs: list[str], more: str = "() => true", arg=None) -> None:
    """Start the in-page clock on the next `kind` event at `trigger`; `clocked` reads it."""
    page.evaluate(CLOCK % (SEEN, more), [trigger, kind, tab, needs, arg])


def clocked(page) -> float:
    """The in-page clock's seconds, once the view it waits for is drawn."""
    page.wait_for_function("() => window.drawnMs !== null", timeout=120_000)
    return page.evaluate("window.drawnMs") / 1000


def drawn(page, tab: str, needs: list[str]) -> bool:
    seen = page.evaluate(SEEN, tab)
    return (seen["busy"] == 0 and not seen["blank"] and all(p["data"] > 0 or p["notes"] > 0 for p in seen["plots"])
            and all(page.query_selector(sel) for sel in needs))


def measure(browser, url: str, network: Relay, name: str, i: int, lang: str = "en") -> dict:
    if name == "switch_language_128":
        return measure_switch(browser, url, network, i, lang)
    if name == "forward_stage_128":
        return measure_stage(browser, url, network, i, lang)
    if name == "forward_stage_llm_64":
        return measure_stage(browser, url, network, i, lang, SMOLLM2, 50)
    if name == "classify_review":
        return measure_review(browser, url, network, i, lang)
    tab, inputs, button, needs, streamed = ACTIONS[name]
    context = browser.new_context(viewport=PROJECTOR)
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.goto(f"{url}/?" + urlencode({"tab": tab, **START.get(name, {}), "lang": lang}))  # wait for its view first
    page.locator(f"#tab-{tab}").wait_for()
    deadline = time.monotonic() + 120
    while not drawn(page, tab, needs) and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    page.wait_for_timeout(500)
    # armed before the text is typed: the Tokens tab runs on the typing itself
    typed = list(inputs)[0]
    more = (STREAMED, 80) if streamed else (ANSWERED,) if name == "tokenize_answered" else ()
    arm(page, button or typed, "click" if button else "input", tab, needs, *more)
    for selector, value in inputs.items():
        page.locator(selector).first.fill(value(i))
    network.bytes = 0
    if streamed:  # the page notes when the click lands and when the first new token is drawn
        page.evaluate(FIRST_TOKEN, button)
    if button:
        page.locator(button).click()
    else:  # tokenize runs as the text changes
        page.locator(typed).first.press("End")
    result = {"s": clocked(page)}
    page.wait_for_timeout(300)  # let the last bytes land
    result["mb"] = network.bytes / 1e6
    if streamed:
        first = page.evaluate("window.firstTokenMs")
        result["first_token_s"] = first / 1000 if first is not None else result["s"]
        result["bytes_per_token"] = network.bytes / 80
    context.close()
    return result


# Drawn for this review: the strip's first sentence is the one typed for this run ("Review {i}.") and the running
# chart has a point per sentence of the strip (a strip or chart of an earlier text does not count)
REVIEW_DRAWN = """(marker) => {
  const sentences = document.querySelectorAll('#sentiment-strip .sentence');
  const chart = document.querySelector('#sentiment-running .js-plotly-plot');
  return sentences.length > 1 && sentences[0].textContent.includes(marker) && !!chart && !!chart.data
    && chart.data.length > 0 && (chart.data[0].x || []).length === sentences.length;
}"""
REVIEW_TIMEOUT_S = 60


def measure_review(browser, url: str, network: Relay, i: int, lang: str) -> dict:
    """Seconds from the click on Run until the strip and the running chart of this 700-word review are drawn.

    The page opens on a short text (no strip), so no strip or chart is there before the click; each wait,
    for the short text's verdict and then for this review's strip and chart, has its own REVIEW_TIMEOUT_S."""
    tab, inputs, button, needs, _ = ACTIONS["classify_review"]
    context = browser.new_context(viewport=PROJECTOR)
    page = context.new_page()
    page.set_default_timeout(1000 * REVIEW_TIMEOUT_S)
    page.goto(f"{url}/?" + urlencode({"tab": tab, **START["classify_review"], "lang": lang}))

    def wait(done, what: str) -> None:
        deadline = time.monotonic() + REVIEW_TIMEOUT_S
        while not done():
            if time.monotonic() > deadline:
                context.close()
                raise TimeoutError(f"classify_review: {what} not drawn within {REVIEW_TIMEOUT_S} s")
            page.wait_for_timeout(20)

    wait(lambda: drawn(page, tab, ["#sentiment-tokens span"]), "the link's short text")
    page.wait_for_timeout(500)
    for selector, value in inputs.items():
        page.locator(selector).first.fill(value(i))
    network.bytes = 0
    arm(page, button, "click", tab, needs, REVIEW_DRAWN, f"Review {i}.")
    page.locator(button).click()
    result = {"s": clocked(page)}
    page.wait_for_timeout(300)  # let the last bytes land
    context.close()
    return {**result, "mb": network.bytes / 1e6}


# the attention grid's title is in the language that was asked for (Chinese has Han characters)
TITLE_IN = """(lang) => { const title = document.querySelector('#attention-grid .gtitle');
  return !!title && /[\u3400-\u9fff]/.test(title.textContent) === (lang === 'zh-CN'); }"""


def measure_switch(browser, url: str, network: Relay, i: int, lang: str) -> dict:
    """Seconds from a click on the other language until the 128-token attention view is drawn in it."""
    other = "en" if lang == "zh-CN" else "zh-CN"
    context = browser.new_context(viewport=PROJECTOR)
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.goto(f"{url}/?tab=attention&lang={lang}&text={quote_plus(text(i, 110))}")
    needs = ACTIONS["attention_128"][3]
    deadline = time.monotonic() + 120
    while not (drawn(page, "attention", needs) and page.evaluate(TITLE_IN, lang)) and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    page.wait_for_timeout(500)
    network.bytes = 0
    arm(page, "#lang", "click", "attention", needs, TITLE_IN, other)
    page.locator("#lang").get_by_text(NAMES[other], exact=True).click()
    result = {"s": clocked(page)}
    page.wait_for_timeout(300)
    context.close()
    return {**result, "mb": network.bytes / 1e6}


STAGE_TITLE = """(stage) => (document.querySelector('#forward-diagram .forward-title')?.textContent || '')
  .startsWith(stage)"""
STAGE_NEEDS = ["#forward-heatmap .js-plotly-plot", "#forward-diagram .forward-title"]  # the title: new each stage


def measure_stage(browser, url: str, network: Relay, i: int, lang: str, model: str = "shakespeare-lm (language model)",
                  words: int = 110) -> dict:
    """Seconds from a click on "Next stage" (embedding -> layer norm of layer 0) until that stage is drawn, on a
    text of `words` words (110: 128 tokens of the Shakespeare LM; 50: ~64 of SmolLM2's) whose walk the page
    already ran (a stage re-slices it)."""
    context = browser.new_context(viewport=PROJECTOR)
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.goto(f"{url}/?" + urlencode({"tab": "forward", "model": model,
                                      "text": text(i, words), "stage": "embed", "follow": "5", "lang": lang}))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (drawn(page, "forward", STAGE_NEEDS)
                                               and page.evaluate(STAGE_TITLE, "2. ")):
        page.wait_for_timeout(100)
    page.wait_for_timeout(500)
    network.bytes = 0
    arm(page, "#forward-next", "click", "forward", STAGE_NEEDS, STAGE_TITLE, "3. ")
    page.locator("#forward-next").click()
    result = {"s": clocked(page)}
    page.wait_for_timeout(300)
    context.close()
    return {**result, "mb": network.bytes / 1e6}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model-dir", default=None)
    parser.add_argument("--lang", default="en", choices=["en", "zh-CN"], help="the language every page opens in")
    parser.add_argument("--llm-dir", default=None, help="the real LLMs' folder, for the *_llm_* actions")
    every = [*ACTIONS, "switch_language_128", "forward_stage_128", "forward_stage_llm_64"]
    parser.add_argument("--only", nargs="+", choices=every, default=every, help="these actions only")
    args = parser.parse_args(argv)
    if not args.llm_dir:  # SmolLM2's views are never drawn without it: each would wait out its whole timeout
        if asked := [name for name in args.only if "_llm" in name and args.only != every]:
            parser.error(f"{', '.join(asked)} need the real LLMs: --llm-dir")
        args.only = [name for name in args.only if "_llm" not in name]

    from playwright.sync_api import sync_playwright

    models = args.model_dir or model_dir(Path(tempfile.mkdtemp()))
    port = free_port()
    llms = ("--llm-dir", args.llm_dir) if args.llm_dir else ()
    process, startup_s = start_app(port, "--model-dir", str(models), *llms)
    network = Relay(port)  # the browser talks to the app through it
    url = f"http://127.0.0.1:{network.port}"
    runs: dict[str, list[dict]] = {name: [] for name in args.only}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for r in range(args.repeats):
                for k, name in enumerate(runs):
                    runs[name].append(measure(browser, url, network, name, 1000 * r + 10 * k, args.lang))
                    print(name, {k: round(v, 3) for k, v in runs[name][-1].items()}, flush=True)
            browser.close()
    finally:
        process.terminate()
        process.wait(timeout=30)

    result = {"startup_s": round(startup_s, 2), "repeats": args.repeats, "lang": args.lang}
    for name, values in runs.items():
        result[f"{name}_s"] = round(statistics.median(v["s"] for v in values), 2)
        result[f"{name}_mb"] = round(statistics.median(v["mb"] for v in values), 3)
    if "generate_80" in runs:
        result["generate_80_first_token_s"] = round(statistics.median(v["first_token_s"] for v in runs["generate_80"]), 2)
        result["generate_80_bytes_per_token"] = round(statistics.median(v["bytes_per_token"] for v in runs["generate_80"]))
    result["load_average_1min"] = round(os.getloadavg()[0], 2)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
