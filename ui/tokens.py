"""The Tokens tab: what the model actually sees.

Lesson: before any attention happens, text is cut into tokens and each token
becomes an id. The same sentence costs a different number of tokens under a
character tokenizer and under each model's byte-level BPE; BPE learns its
vocabulary by merging the most frequent adjacent pair, again and again, and a
real BPE's merge list can be replayed one merge at a time.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import gradio as gr
import pandas as pd
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from i18n import LANGUAGES, catalogue, plural, render, t
from lab import store
from lab import tokens as use
from lab.policy import MAX_CHARS
from ui import events
from ui.handlers import cached, Action, handler
from ui.i18n import language, text as _
from views import tokens as views

MERGE_COLUMNS = ("step", "pair", "count", "new_token", "vocabulary")
SAILOR = ("a sailor went to sea sea sea to see what he could see see see "
          "but all that he could see see see was the bottom of the deep blue sea sea sea")

EXAMPLES = [
    ["The quick brown fox jumps over the lazy dog."],
    ["To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer"],
    ["antidisestablishmentarianism and pneumonoultramicroscopicsilicovolcanoconiosis"],
    ["In 1599 the Globe held 3,000 people; 2 + 2 = 4 and π ≈ 3.14159."],
    ["def attention(q, k, v):\n    return softmax(q @ k.T / d ** 0.5) @ v"],
    ["I love this film 😍🎬 — 10/10 👍🏽"],
    ["自然语言处理很有趣。"],
    [use.SEED_PAIR[0]],
    [use.SEED_PAIR[1]],
]


@cached
@handler
def tokenize(text: str | None, lang: str = "en") -> tuple[str, str]:
    """Main endpoint: how every shipped tokenizer cuts a text into tokens: (notice, HTML with one panel of
    chips, ids and counts per tokenizer).

    Args:
        text: the text to tokenize (at most 5,000 characters are read)
    """
    text, tokenized, notice = use.tokenize(text)
    if not text:
        return render(notice, lang), views.hint(t("tokens.empty_hint", lang))
    return render(notice, lang), views.panels([
        views.tokenizer_panel(render(k.label, lang), k.text, k.spans, render(k.problem, lang), lang)
        for k in tokenized])


# The page's half (app.py serves it in the head): our byte-level BPEs' chips drawn as the person types, from
# the merge tables at TABLES_PATH, fetched once and revalidated (a 304) on each later visit
PAGE_SCRIPT = Path(__file__).with_name("tokens.js")
TABLES_PATH = "/lab/tokenizers.json"


def page_tables() -> dict:
    """What ui/tokens.js needs to draw a panel exactly as `tokenize` does, for each tokenizer it can run
    (lab/tokens.page_tokenizers): its label and table, the panel's messages in every language, the cuts, and
    when a panel says its tokenizer cannot read the text."""
    return {"max_chars": MAX_CHARS, "chips_shown": views.CHIPS_SHOWN, "unknown": use.UNKNOWN, "unreadable": use.UNREADABLE,
            "messages": {lang: {key: catalogue(lang)[key] for key in views.PANEL_MESSAGES} for lang in LANGUAGES},
            "tokenizers": [{"label": {lang: render(label, lang) for lang in LANGUAGES}, **table}
                           for label, table in use.page_tokenizers()]}


_tables: dict = {}  # the last tables sent, with the model folder signature they were built at


def _tables_sent() -> tuple[bytes, bytes, str]:
    """(JSON, gzip'd JSON, its ETag) of `page_tables`, built again only when the model folder changes."""
    signature = store.folder_signature()
    if _tables.get("signature") != signature:
        body = json.dumps(page_tables(), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        _tables.update(signature=signature, sent=(body, gzip.compress(body, 6),
                                                  f'"{hashlib.sha256(body).hexdigest()[:32]}"'))
    return _tables["sent"]


async def serve_tables(request: Request) -> Response:
    """TABLES_PATH: the tables, gzip'd when the browser takes it; "no-cache" makes a later visit ask whether
    they changed (a model trained since) and get a 304 with no body when they did not."""
    body, zipped, etag = await run_in_threadpool(_tables_sent)
    headers = {"ETag": etag, "Cache-Control": "no-cache", "Vary": "Accept-Encoding"}
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    if "gzip" in request.headers.get("accept-encoding", ""):
        return Response(zipped, media_type="application/json", headers={**headers, "Content-Encoding": "gzip"})
    return Response(body, media_type="application/json", headers=headers)


ROUTES = [Route(TABLES_PATH, serve_tables)]


@cached
@handler
def cost_pair(lang: str = "en") -> str:
    """What the seeds' sentence costs each tokenizer in English and in Chinese: tokens each and their ratio."""
    (english, chinese), rows = use.cost_pair()
    return views.cost_table([(render(label, lang), views.counts(english, en), views.counts(chinese, zh))
                             for label, en, zh in rows], lang)


@cached
@handler
def replay(text: str | None, k: float, lang: str = "en") -> tuple[str, str]:
    """(summary, chips) of `text` under only the first k merges of a shipped BPE (the Chinese one for Chinese text)."""
    text, k, spans, merge, name = use.replay(text, k)
    if not text:
        return "", views.hint(t("tokens.empty_hint", lang))
    bpe = use.replay_tokenizer(name)
    summary = t("tokens.replay_summary", lang, k=k, n_merges=len(bpe.merges), bpe=name,
                tokens=plural(len(spans), "token", lang),
                bytes=plural(len(text.encode("utf-8")), "byte", lang),
                all_tokens=plural(len(bpe.tokens(text)), "token", lang))
    if merge:
        left, right = merge
        shown = [views.visible(use.merge_text(piece, name)).replace("`", "'") for piece in (left, right, left + right)]
        summary += t("tokens.replay_merge", lang, k=k, left=shown[0], right=shown[1], joined=shown[2])
    return summary, views.token_chips(text, spans, lang)


@handler
def train_scratch(text: str | None, lang: str = "en"):
    """Train BPE from scratch on `text`: (notice, slider at the last step, merge table, curve, chips)."""
    text, training, notice = use.scratch(text)
    if training is None:
        return (render(notice, lang) or t("tokens.scratch_empty", lang), gr.Slider(maximum=1, value=0),
                merge_table([], lang), views.vocab_curve([0], 0, lang), views.hint(t("tokens.scratch_nothing", lang)))
    n = len(training.steps)
    curve, chips = scratch_step(text, n, lang)
    return (render(notice, lang), gr.Slider(maximum=max(n, 1), value=n), merge_table(views.merge_rows(training.steps), lang),
            curve, chips)


def merge_table(rows: list[list], lang: str) -> pd.DataFrame:
    """The merge table with its headers in `lang`."""
    return pd.DataFrame(rows, columns=[t(f"tokens.merges.{h}", lang) for h in MERGE_COLUMNS])


@cached
@handler
def scratch_step(text: str | None, k: float, lang: str = "en"):
    """(vocabulary curve with step k marked, chips of the text after k merges)."""
    text, training, _ = use.scratch(text)
    if training is None:
        return views.vocab_curve([0], 0, lang), views.hint(t("tokens.scratch_nothing", lang))
    k = use.scratch_merges(training, k)
    return views.vocab_curve(training.vocab_sizes, k, lang), views.piece_chips(training.segmentation(k), lang)


def build(lang: gr.State | None = None) -> Action:
    lang = language(lang)
    with gr.Tab(_("tab.tokens"), id="tokens"):
        gr.Markdown(_("tokens.heading"), elem_classes=["lecture-hide"])
        text = gr.Textbox(label=_("tokens.text", max_chars=MAX_CHARS), lines=3, value=EXAMPLES[1][0],
                          elem_id="tokens_text")
        notice = gr.Markdown()
        chips = gr.HTML(css_template=views.CHIP_CSS, elem_id="tokens-chips")
        # below the chips: above them, on a projector and a phone, they pushed the tokens off the first screen
        with gr.Column(elem_classes=["lecture-hide"]):
            events.examples(EXAMPLES, inputs=[text], label=_("tokens.examples"))
        with gr.Accordion(_("common.what"), open=False):
            gr.Markdown(_("tokens.explainer"))
        # drawn on load by app.py, once the page's language is known (a load trigger here would draw it in English)
        # no progress overlay: the page draws our BPEs' panels at once and dims the others until this answer
        # replaces them all (ui/tokens.js)
        events.on(text.change, tokenize, [text, lang], [notice, chips], api_name="tokenize", show_progress="hidden")
        with gr.Accordion(_("tokens.cost_box"), open=True, elem_id="tokens-cost"):
            cost = gr.HTML(css_template=views.CHIP_CSS)
        # like the chips, it follows the reader's language
        events.on(None, cost_pair, [lang], cost, api_name="tokens_cost_pair")

        gr.Markdown(_("tokens.replay_heading"))
        # with no BPE installed the app still starts; the replay handler says what is missing
        k = gr.Slider(0, max(use.replay_merges(), 1), value=50, step=1, label=_("tokens.replay_k"), elem_id="replay_k")
        replay_summary = gr.Markdown()
        replay_chips = gr.HTML(css_template=views.CHIP_CSS)
        events.on(None, replay, [text, k, lang], [replay_summary, replay_chips], api_name="replay_merges")

        gr.Markdown(_("tokens.scratch_heading"))
        with gr.Accordion(_("common.what"), open=False):
            gr.Markdown(_("tokens.scratch_explainer"))
        scratch_text = gr.Textbox(label=_("tokens.scratch_text", max_chars=use.SCRATCH_MAX_CHARS), lines=3,
                                  value=SAILOR, elem_id="scratch_text")
        events.examples([[SAILOR], [EXAMPLES[1][0]]], inputs=[scratch_text], label=_("common.examples"))
        scratch_notice = gr.Markdown()
        step = gr.Slider(0, 1, value=0, step=1, label=_("tokens.scratch_step"), elem_id="scratch_step")
        scratch_chips = gr.HTML(css_template=views.CHIP_CSS)
        with gr.Row():
            curve = gr.Plot(label=_("tokens.vocab_plot"))
            merges = gr.Dataframe(merge_table([], "en"), label=_("tokens.merges"), interactive=False, max_height=320)
        events.on(None, train_scratch, [scratch_text, lang], [scratch_notice, step, merges, curve, scratch_chips],
                  api_name="bpe_from_scratch")
        events.on(step.change, scratch_step, [scratch_text, step, lang], [curve, scratch_chips], api_name="bpe_step")
    return Action(tokenize, [text, lang], [notice, chips], "tokenize",
                also=((cost_pair, [lang], [cost]),  # always visible: drawn in the reader's language too
                      (replay, [text, k, lang], [replay_summary, replay_chips]),
                      (train_scratch, [scratch_text, lang], [scratch_notice, step, merges, curve, scratch_chips])))
