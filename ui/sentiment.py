"""Sentiment tab: a transformer classifier's verdict on a sentence, and which tokens drove it.

Lesson: an encoder reads the whole sentence at once, mean-pools its output
vectors and maps them to P(positive) / P(negative). Each token's share of the verdict
(shares that add up to its log-odds, as the page says in numbers) and attention rollout
are two ways to ask which tokens mattered; they need not agree.
With two classifiers installed, Compare sets a pair side by side, a lesson in the text's language: in English
what pre-training on a large corpus adds, in Chinese whether a head trained on English labels reads Chinese.
A whole review is read sentence by sentence: a strip of its sentences coloured by their own
verdicts, and the running verdict, show how the review's verdict forms; clicking a sentence
shows its tokens and attention.
"""

from __future__ import annotations

import gradio as gr

from i18n import render, t
from lab import sentiment as use
from lab.policy import notice
from ui import events
from ui.handlers import cached, Action, handler, when_typed
from ui.i18n import choice, language, text as _
from views import attention as attention_views
from views import sentiment as views

METHODS = ("share of the verdict", "attention rollout")
# Examples below the results (a click must show its verdict on the first screen, a phone's too), in the page's
# language: a Chinese student first meets Chinese sentences, an English visitor English ones
EXAMPLES = {
    "en": [
        ["A moving, beautifully acted film.", METHODS[0]],
        ["This movie is not good.", METHODS[0]],
        ["Not bad at all, I enjoyed every minute.", METHODS[0]],
        ["The acting was great but the plot was a mess.", METHODS[0]],
        ["Oh great, another two hours of my life I will never get back.", METHODS[0]],
        ["The film was released in 2004 and runs for 95 minutes.", METHODS[1]],
        ["Ce film est magnifique, je l'ai adoré.", METHODS[0]],
        ["👍🎉!!!", METHODS[0]],
        [use.REVIEW, METHODS[0]],
    ],
    "zh-CN": [
        ["这部电影太棒了！", METHODS[0]],
        ["还行吧，不算太差。", METHODS[0]],
        ["这本书写得很好，值得一读，推荐！", METHODS[0]],
        ["质量太差了，非常失望。", METHODS[0]],
        ["虽然价格有点贵，但是质量真的很好。", METHODS[0]],
        ["一点也不好吃，再也不来了。", METHODS[0]],
        ["这部电影二〇〇四年上映，片长九十五分钟。", METHODS[1]],
        ["Not bad at all, I enjoyed every minute.", METHODS[0]],
        [use.REVIEW_ZH, METHODS[0]],
    ],
}
# only the page's language's examples show (html[lang] is set by ui/i18n.py on load and on a switch)
CSS = """
html[lang=zh-CN] #sentiment-examples-en, html:not([lang=zh-CN]) #sentiment-examples-zh-CN { display: none; }
"""
# A click on a sentence of the strip hands its number to the server (gr.HTML's js_on_load and trigger).
PICK_SENTENCE = ("element.addEventListener('click', (e) => { const s = e.target.closest('[data-sentence]'); "
                 "if (s) trigger('click', {sentence: Number(s.dataset.sentence)}); });")
AUTO = ""  # the picker's "by the text's language": no classifier chosen
SHOW_COMPARE = "(on) => { if (on) document.querySelector('#sentiment-compare')?.scrollIntoView({block: 'start'}); }"
# after a click: the verdict comes into view if it is off the screen (an example clicked below the results)
SHOW_VERDICT = """() => { const v = document.querySelector('#sentiment-verdict');
  const r = v && v.getBoundingClientRect();
  if (r && (r.top < 0 || r.top > innerHeight - 80)) v.scrollIntoView({block: 'start', behavior: 'instant'}); }"""


def _scores(run: use.SentimentRun, method: str):
    """(the scores the tokens are coloured by, whether they are signed: the shares of the verdict)."""
    signed = method != METHODS[1]
    return (run.shares if signed else run.rollout), signed


@cached
@handler
def classify(text: str | None, method: str, grid: bool = False, model: str | None = None, lang: str = "en"):
    """A sentiment classifier's verdict on a text and which tokens drove it: (P(label), notices, tokens
    coloured by contribution as HTML, per-token bars, attention grid, link to the Attention tab).

    Args:
        text: a sentence about a movie
        method: "share of the verdict" (signed shares that add up to the log-odds) or "attention rollout"
            (what was read)
        grid: also draw the attention of every layer and head (else that output is empty; the page asks for it
            while its box is open)
        model: which classifier (the picker's choice, kept in session state; API callers, and the picker's
            "by the text's language", get the reader of the text's language that measured best on its test set)
    """
    return _drawn(use.classify(text, model), method, grid, lang)


@cached
@handler
def classify_sentence(text: str | None, method: str, sentence: int, grid: bool = False, model: str | None = None,
                      lang: str = "en"):
    """A whole review's verdict (as `classify`), with the tokens and attention of one of its sentences.

    Args:
        text: a review longer than one sentence (a short text is read whole, as by `classify`)
        method: "share of the verdict" (signed shares that add up to the sentence's log-odds) or "attention
            rollout" (what was read)
        sentence: which sentence's tokens to show, from 1
        grid: also draw the attention of every layer and head of that sentence (else that output is empty)
        model: which classifier (the picker's choice, kept in session state; API callers, and the picker's
            "by the text's language", get the reader of the text's language that measured best on its test set)
    """
    return _drawn(use.classify(text, model, sentence), method, grid, lang)


def _drawn(run: use.SentimentRun, method: str, grid: bool, lang: str) -> tuple:
    scores, signed = _scores(run, method)
    return (
        {verdict_name(label, lang): p for label, p in run.probs.items()},
        _method_line(run, lang),
        "\n\n".join(t("common.warning", lang, text=render(n, lang)) for n in [run.notice] if n),
        views.token_html(run.labels, scores, signed, lang, (run.base, run.log_odds)),
        views.score_bars(run.labels, scores, signed, t("sentiment.per_token", lang, method=method_name(method, lang)),
                         lang),
        attention_views.layer_head_grid(run.attn, run.labels, run.labels, t("sentiment.grid_title", lang), lang)
        if grid else None,
        t("sentiment.open_in_attention", lang, link=use.attention_link(run) + f"&lang={lang}"),
        *_review(run, lang),
    )


def _method_line(run: use.SentimentRun, lang: str) -> str:
    """Who read the text and, of a long one, how the verdict was reached: a line under the verdict."""
    document = run.document
    read_by = t("sentiment.read_by", lang, model=render(use.label_of(run.name), lang))
    return read_by + (f"  \n*{t(document.method_id, lang, **document.method_params)}*" if document else "")


def _review(run: use.SentimentRun, lang: str) -> tuple:
    """The review's parts of the tab: (its box shown or hidden, the strip, the sentence picker, the
    running verdict, which sentence is shown); of a short text, the box hidden."""
    document = run.document
    if document is None:
        return gr.Column(visible=False), "", gr.Slider(visible=False), None, ""
    texts = [s.text for s in document.sentences]
    p = [s.probs["positive"] for s in document.sentences]
    shown = document.sentences[run.sentence]
    return (gr.Column(visible=True), views.sentence_strip(texts, p, run.sentence, lang),
            gr.Slider(minimum=1, maximum=max(len(texts), 2), value=run.number, step=1, visible=True),
            views.running_chart(texts, p, list(document.running), lang),
            t("sentiment.sentence_shown", lang, i=run.number, n=len(texts), label=verdict_name(shown.label, lang),
              p=shown.probs["positive"]))


def verdict_name(label: str, lang: str) -> str:
    """A class ("positive") in the reader's language."""
    return t(f"sentiment.label.{label}", lang)


def method_name(method: str, lang: str) -> str:
    return t("sentiment.method.rollout" if method == METHODS[1] else "sentiment.method.grad", lang)


@cached
@handler
def compare(text: str | None, method: str, lang: str = "en"):
    """The text's Compare pair on the same text: what the pair teaches, then each classifier's verdict, token
    contributions and attention, side by side, then what to look for. English text: trained from scratch and
    pre-trained; Chinese text: the multilingual-e5 heads trained on Chinese and English labels and on English
    labels only. A pair with fewer installed classifiers than the tab has columns leaves the rest blank."""
    columns = []
    pair = use.compare(text)
    for label, run in pair:
        scores, signed = _scores(run, method)
        verdict = run.verdict
        document = run.document
        strip = "" if document is None else views.sentence_strip(
            [s.text for s in document.sentences], [s.probs["positive"] for s in document.sentences], run.sentence, lang)
        columns.append((t("sentiment.column", lang, label=render(label, lang), verdict=verdict_name(verdict, lang),
                          p=run.probs[verdict])
                        + (f"  \n*{t(document.method_id, lang, **document.method_params)}*" if document else "")
                        + (f"  \n{render(run.notice, lang)}" if run.notice else ""),
                        strip, views.token_html(run.labels, scores, signed, lang, (run.base, run.log_odds)),
                        attention_views.layer_head_grid(run.attn, run.labels, run.labels, render(label, lang), lang)))
    columns += [("", "", "", None)] * (len(use.compared()) - len(columns))
    lesson = use.compare_lesson(text)
    heading = t(f"sentiment.compare.{lesson}", lang, first=render(pair[0][0], lang),
                second=render(pair[-1][0], lang)) if pair else ""
    note = t(f"sentiment.compare_note.{lesson}", lang) if lesson in use.COMPARED else ""
    return heading, notice(), *[part for column in columns for part in column], note


def build(lang: gr.State | None = None) -> Action:
    lang = language(lang)
    installed = list(use.classifiers().items())
    compared = list(use.compared())
    with gr.Tab(_("tab.sentiment"), id="sentiment"):
        with gr.Row():
            with gr.Column(scale=2):
                # two lines and no info line: on a phone the verdict must fit on the first screen below the inputs
                # (how a long text is read is said in the explainer, and under the verdict when it happens)
                text = gr.Textbox(label=_("sentiment.text"), lines=2, placeholder=_("sentiment.placeholder"))
                # a dropdown, not radio buttons: four classifiers in a row push the Run button off a projector's
                # first screen; first "by the text's language" (""): the text picks the classifier, so a Chinese
                # review is read by a Chinese one on either page, while a classifier chosen by hand is kept (and
                # says when it cannot read the text). Its values are checkpoint names: a link names the model,
                # whatever its label says in either language.
                model = gr.Dropdown([(_("reading.auto"), AUTO), *((choice(label)[0], name) for label, name in installed)],
                                    value=AUTO, label=_("sentiment.classifier"),
                                    elem_id="sentiment-classifier")  # its link key (ui/links.LINK_KEYS)
                comparing = gr.Checkbox(False, label=_("sentiment.compare_toggle"), elem_id="compare",
                                        visible=len(compared) > 1)
                button = gr.Button(_("sentiment.run"), variant="primary", elem_id="sentiment-run")
            with gr.Column(scale=1):
                probs = gr.Label(label=_("sentiment.verdict"), num_top_classes=2, elem_id="sentiment-verdict")
                # the tokens right under the verdict they add up to (a projector shows both on its first screen)
                tokens = gr.HTML(label=_("sentiment.tokens"), elem_id="sentiment-tokens")
                method_line = gr.Markdown(elem_id="sentiment-method")  # who read it; how a long text's verdict was reached
                method = gr.Radio([(_("sentiment.method.grad"), METHODS[0]), (_("sentiment.method.rollout"), METHODS[1])],
                                  value=METHODS[0], label=_("sentiment.colour_by"), elem_id="colour_tokens_by")
                link = gr.Markdown()
        notices = gr.Markdown()
        # below the results, so that on a phone the verdict is on the first screen; one table per language
        sets = {}
        for code, rows in EXAMPLES.items():
            with gr.Column(elem_classes=["lecture-hide"], elem_id=f"sentiment-examples-{code}"):
                sets[code] = events.examples(rows, [text, method], label=_("common.examples"))
        with gr.Column(visible=False, elem_id="sentiment-review") as review_box:
            gr.Markdown(_("sentiment.review_box"))
            strip = gr.HTML(elem_id="sentiment-strip", js_on_load=PICK_SENTENCE)
            running = gr.Plot(label=_("sentiment.running_label"), show_label=False, elem_id="sentiment-running")
            sentence = gr.Slider(1, 2, value=1, step=1, label=_("sentiment.sentence"), elem_id="sentiment-sentence")
            shown = gr.Markdown(elem_id="sentiment-shown")
        bars = gr.Plot(label=_("sentiment.bars"), show_label=False, elem_id="sentiment-bars")
        with gr.Accordion(_("sentiment.attention_box"), open=False) as attention_box:
            grid = gr.Plot(label=_("common.attention"), elem_id="sentiment-grid")
        # Whether the grid is asked for: only while its box is open. Of a short review's answer it is 127 kB of
        # 133, which a hall of students typing their own sentences would each be sent and never see.
        grid_asked = gr.Checkbox(False, visible=False, label=_("sentiment.attention_box"),
                                 elem_id="sentiment-grid-asked")
        with gr.Accordion(_("common.what"), open=False, elem_classes=["lecture-hide"]):
            gr.Markdown(_("sentiment.explainer"))
            gr.Markdown(_("sentiment.long_text", **use.LIMITS))
        # the chosen classifier travels as session state, so the API keeps classify(text, method, grid)
        chosen = gr.State(AUTO)
        inputs = [text, method, grid_asked, chosen, lang]
        outputs = [probs, method_line, notices, tokens, bars, grid, link, review_box, strip, sentence, running, shown]
        clicked_run = events.on(button.click, classify, inputs, outputs, api_name="classify")
        typed = when_typed(classify, len(outputs))  # the events below run it with nobody pressing the button
        one_sentence = [text, method, sentence, grid_asked, chosen, lang]
        events.on(sentence.release, classify_sentence, one_sentence, outputs, api_name="classify_sentence")
        clicked = events.on(strip.click, picked, None, sentence, api_name=False, queue=False)
        events.on(clicked.then, classify_sentence, one_sentence, outputs, api_name=False)
        # chained here, after the button, so the public endpoint keeps the plain name "classify"
        runs = [clicked_run, events.on(text.submit, classify, inputs, outputs, api_name=False)]
        runs += [events.on(made.load_input_event.then, classify, inputs, outputs, api_name=False) for made in sets.values()]
        for run in runs:
            run.then(None, None, None, js=SHOW_VERDICT)
        events.on(method.input, typed, inputs, outputs, api_name=False)
        picked_model = events.on(model.change, lambda name: name, model, chosen, api_name=False, queue=False)
        events.on(picked_model.then, typed, inputs, outputs, api_name=False)
        # opened: the grid is asked for, and drawn; closed: no longer asked for (in the page, no request)
        opened = attention_box.expand(None, None, grid_asked, js="() => true", queue=False)
        events.on(opened.then, typed, inputs, outputs, api_name=False)
        attention_box.collapse(None, None, grid_asked, js="() => false", queue=False)

        also = ()
        if len(compared) > 1:
            with gr.Accordion(_("sentiment.compare_box"), open=False, elem_id="sentiment-compare") as compare_box:
                compare_heading = gr.Markdown(elem_id="sentiment-compare-heading")  # the pair and its lesson
                compare_notice = gr.Markdown()
                parts = []
                with gr.Row():
                    for label in compared:
                        with gr.Column():  # each grid's title names its classifier
                            parts += [gr.Markdown(), gr.HTML(elem_classes=["compare-strip"]), gr.HTML(),
                                      gr.Plot(label=_("common.attention"), show_label=False)]
                # after the figures (on a projector, they come first): ticked, every reading fills them anyway
                compare_button = gr.Button(_("sentiment.compare_run"))
                compare_note = gr.Markdown()
            compare_in, compare_out = [text, method, lang], [compare_heading, compare_notice, *parts, compare_note]
            events.on(compare_button.click, compare, compare_in, compare_out, api_name="classify_compare")
            events.on(compare_box.expand, when_typed(compare, len(compare_out)), compare_in, compare_out, api_name=False)
            # ticked by hand, by a link (`compare=1`) or by a lecture step: the section opens, runs, comes into view
            ticked = events.on(comparing.change, lambda on: gr.Accordion(open=on), comparing, compare_box,
                               api_name=False, queue=False)
            events.on(ticked.then, compare_if, [comparing, *compare_in], compare_out, api_name=False).then(
                None, comparing, None, js=SHOW_COMPARE)
            # while it is ticked, every reading of the text fills the comparison too, with no second button
            for run in runs:
                events.on(run.then, compare_if, [comparing, *compare_in], compare_out, api_name=False)
            also = ((compare_if, [comparing, *compare_in], compare_out),)  # a link or a language switch redraws it
    return Action(typed, inputs, outputs, "classify", also)


def compare_if(on: bool, text: str | None, method: str, lang: str = "en"):
    """`compare` when the Compare box is ticked and a text is typed; nothing changes otherwise."""
    if on and (text or "").strip():
        return compare(text, method, lang)
    return tuple(gr.skip() for _ in range(3 + 4 * len(use.compared())))


def picked(event: gr.EventData) -> int:
    """The number of the sentence clicked in the strip."""
    return int(getattr(event, "sentence", 1) or 1)
