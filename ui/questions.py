"""Ask the hall tab: a lecturer asks, every student predicts on their own page, then the model's answer.

Layout and thin adapters over `lab.questions.HALL`. A student is their page's session; the lecturer's
secret stays in the lecturer's page state (server side), so no other page can count, reveal or close.
Answers and the counts are dictionary reads and writes: the counts skip the queue, and an answer has a queue
group of its own (ui/events.py), so a hall of 100 answering at once never waits behind a model run; the pages
refresh on timers only while a question is open.
"""

from __future__ import annotations

import uuid

import gradio as gr

from i18n import render, t
from lab.questions import HALL, QUESTIONS, QuestionError
from ui import events
from ui.handlers import Action
from ui.i18n import language, text as _
from views import questions as views
from views.kit import plain

LECTURER_EVERY_S = 1.0  # the count on the lecturer's page
STUDENT_EVERY_S = 2.0  # a student's page asking whether the answer is revealed


def _student(request: gr.Request | None) -> str:
    """A student is their page's session (an API call without one counts as a new student each time)."""
    return getattr(request, "session_hash", None) or uuid.uuid4().hex


def _prompt(question, lang: str) -> str:
    return f"**{plain(render(question.prompt, lang))}**"


def _failed(e: QuestionError, lang: str) -> str:
    return f"⚠️ {plain(render(e.args[0], lang))}"


def page_url(request: gr.Request | None) -> str:
    """This app's address as the lecturer's browser reached it (behind a proxy, as the proxy says: a Space's
    https address), so the link a student scans opens the same server."""
    if request is None:
        return "http://127.0.0.1:7860/"
    headers = request.headers
    host = headers.get("x-forwarded-host") or headers.get("host") or "127.0.0.1:7860"
    scheme = headers.get("x-forwarded-proto") or getattr(getattr(request, "url", None), "scheme", None) or "http"
    return f"{scheme.split(',')[0].strip()}://{host.split(',')[0].strip()}/"


def ask(question_id: str, held=None, lang: str = "en", request: gr.Request = None):
    """Open `question_id` for the hall: (the page's secret state, the question, the link in large type and as a
    QR code, the count, the timer on, no histogram, no verdict, the student's box hidden: this page is the
    lecturer's, projected). The page's previous question, if still open, closes: its answers go."""
    if held:
        try:
            HALL.close(*held)
        except QuestionError:
            pass  # already gone (expired)
    try:
        opened = HALL.open(question_id)
    except QuestionError as e:
        return None, _failed(e, lang), gr.skip(), "", gr.Timer(active=False), gr.skip(), "", gr.skip()
    url = f"{page_url(request)}?tab=questions&code={opened.code}"
    return ((opened.code, opened.secret), _prompt(opened.question, lang), views.hall_link(url, opened.code, lang),
            t("questions.answered", lang, n=0), gr.Timer(active=True), _result(None), "", gr.Group(visible=False))


def count(held, lang: str = "en"):
    """How many answered (the lecturer's page, every LECTURER_EVERY_S); the timer stops when the question is gone."""
    if not held:
        return gr.skip(), gr.Timer(active=False)
    try:
        return t("questions.answered", lang, n=HALL.count(*held)), gr.skip()
    except QuestionError as e:
        return _failed(e, lang), gr.Timer(active=False)


def reveal(held, lang: str = "en"):
    if not held:
        return gr.skip(), gr.skip(), gr.Timer(active=False)
    try:
        result = HALL.reveal(*held)
    except QuestionError as e:
        return _failed(e, lang), gr.skip(), gr.Timer(active=False)
    real = plain(views.shown(result.real, result.choices, lang))
    figure = views.histogram(result, None, lang)
    return t("questions.revealed", lang, n=result.n, real=real), _result(figure), gr.Timer(active=False)


def close(held, lang: str = "en"):
    if held:
        try:
            HALL.close(*held)
        except QuestionError as e:
            return None, _failed(e, lang), gr.Timer(active=False)
    return None, t("questions.closed", lang), gr.Timer(active=False)


def join(code: str, lang: str = "en", request: gr.Request = None):
    """A student opens the question `code`: its text, the answer inputs it takes, their answer, and the result
    if it has been revealed. The student's timer runs until the reveal."""
    if not (code or "").strip():  # the tab opened with no code (the lecturer's page): nothing to join yet
        return "", gr.Radio(visible=False), gr.Textbox(visible=False), "", _result(None), gr.Timer(active=False)
    try:
        seen = HALL.seen_by(code, _student(request))
    except QuestionError as e:
        return (_failed(e, lang), gr.Radio(visible=False), gr.Textbox(visible=False), "", _result(None),
                gr.Timer(active=False))
    number = seen.question.kind == "number"
    choices = [(plain(render(c, lang)), str(i)) for i, c in enumerate(seen.choices)]
    status, figure, timer = _status(seen, lang)
    return (_prompt(seen.question, lang), gr.Radio(choices, value=None, visible=not number),
            gr.Textbox(visible=number), status, figure, timer)


def _result(figure):
    """The hall's answers, on a student's page and the lecturer's: hidden until the reveal, so no empty plot waits
    on the screen."""
    return gr.Plot(figure, visible=figure is not None)


def _status(seen, lang: str):
    own = plain(views.shown(seen.own, seen.choices, lang)) if seen.own else ""
    mine = t("questions.recorded", lang, answer=own) if own else ""
    if seen.result is None:
        return "  \n".join(p for p in (mine, t("questions.waiting", lang)) if p), _result(None), gr.Timer(active=True)
    real = plain(views.shown(seen.result.real, seen.result.choices, lang))
    return ("  \n".join(p for p in (mine, t("questions.revealed", lang, n=seen.result.n, real=real)) if p),
            _result(views.histogram(seen.result, seen.own, lang)), gr.Timer(active=False))


def answer(code: str, picked: str | None, number: str | None, lang: str = "en", request: gr.Request = None):
    """Record the student's answer (a choice's index, or a number typed); say what was recorded or why not."""
    try:
        kind = HALL.seen_by(code, _student(request)).question.kind
        HALL.answer(code, _student(request), number if kind == "number" else picked)
        seen = HALL.seen_by(code, _student(request))
    except QuestionError as e:
        return _failed(e, lang)
    return _status(seen, lang)[0]


def student_tick(code: str, lang: str = "en", request: gr.Request = None):
    try:
        seen = HALL.seen_by(code, _student(request))
    except QuestionError as e:
        return _failed(e, lang), _result(None), gr.Timer(active=False)
    if seen.result is None:
        return gr.skip(), gr.skip(), gr.skip()
    return _status(seen, lang)


def build(lang: gr.State | None = None) -> Action:
    lang = language(lang)
    light = dict(queue=False, show_progress="hidden")
    with gr.Tab(_("questions.tab"), id="questions"):
        gr.Markdown(_("questions.intro"), elem_classes=["lecture-hide"])
        with gr.Group(elem_id="question-student") as student_box:
            with gr.Row(equal_height=True):
                code = gr.Textbox(label=_("questions.code"), max_length=12, elem_id="question-code", scale=2)
                join_button = gr.Button(_("questions.join"), elem_id="question-join", scale=1)
            prompt = gr.Markdown(elem_id="question-prompt")
            picked = gr.Radio([], label=_("questions.answer_label"), visible=False, elem_id="question-choice")
            number = gr.Textbox(label=_("questions.answer_label"), max_length=40, visible=False,
                                elem_id="question-number")
            send = gr.Button(_("questions.answer"), variant="primary", elem_id="question-send")
            status = gr.Markdown(elem_id="question-status")
            mine = gr.Plot(show_label=False, elem_id="question-result", visible=False)
            student_timer = gr.Timer(STUDENT_EVERY_S, active=False)
        with gr.Accordion(_("questions.lecturer"), open=False, elem_id="question-lecturer"):
            held = gr.State(None)  # (code, secret): this page's, never sent to another
            asked = gr.Dropdown([(_(f"questions.q.{q.id}", **q.params), q.id) for q in QUESTIONS.values()],
                                value=next(iter(QUESTIONS)), label=_("questions.pick"), elem_id="question-pick")
            with gr.Row():
                open_button = gr.Button(_("questions.open"), variant="primary", elem_id="question-open")
                reveal_button = gr.Button(_("questions.reveal"), elem_id="question-reveal")
                close_button = gr.Button(_("questions.close"), elem_id="question-close")
            shown = gr.Markdown(elem_id="question-shown")
            link = gr.HTML(elem_id="question-link")
            counted = gr.Markdown(elem_id="question-count")
            verdict = gr.Markdown(elem_id="question-verdict")  # apart from the count: a tick in flight may land after
            hall = gr.Plot(show_label=False, elem_id="question-hall", visible=False)  # shown by the reveal
            lecturer_timer = gr.Timer(LECTURER_EVERY_S, active=False)
        private = dict(api_visibility="private", **light)
        open_button.click(ask, [asked, held, lang], [held, shown, link, counted, lecturer_timer, hall, verdict,
                                                     student_box], **private)
        lecturer_timer.tick(count, [held, lang], [counted, lecturer_timer], **private)
        reveal_button.click(reveal, [held, lang], [verdict, hall, lecturer_timer], **private)
        close_button.click(close, [held, lang], [held, counted, lecturer_timer], **private)
        joined = [prompt, picked, number, status, mine, student_timer]
        events.on(join_button.click, join, [code, lang], joined, api_name="question_join", **light)
        events.on(code.submit, join, [code, lang], joined, api_name=False, **light)
        events.on(send.click, answer, [code, picked, number, lang], status, api_name="question_answer",
                  show_progress="hidden")
        student_timer.tick(student_tick, [code, lang], [status, mine, student_timer], **private)
    return Action(join, [code, lang], joined, "question_join")
