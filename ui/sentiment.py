"""Sentiment tab: a transformer classifier's verdict on a sentence, and which tokens drove it.

Lesson: an encoder reads the whole sentence at once, mean-pools its output
vectors and maps them to P(positive) / P(negative). Gradient x input and
attention rollout are two ways to ask which tokens mattered; they need not agree.
With two classifiers installed, Compare shows what pre-training on a large corpus adds.
"""

from __future__ import annotations

import gradio as gr

from lab import sentiment as use
from lab.policy import notice
from ui.common import cached, View, handler
from views import attention as attention_views
from views import sentiment as views

METHODS = ("gradient × input", "attention rollout")
EXAMPLES = [
    ["A moving, beautifully acted film.", METHODS[0]],
    ["This movie is not good.", METHODS[0]],
    ["Not bad at all, I enjoyed every minute.", METHODS[0]],
    ["The acting was great but the plot was a mess.", METHODS[0]],
    ["Oh great, another two hours of my life I will never get back.", METHODS[0]],
    ["The film was released in 2004 and runs for 95 minutes.", METHODS[1]],
    ["Ce film est magnifique, je l'ai adoré.", METHODS[0]],
    ["👍🎉!!!", METHODS[0]],
]
EXPLAINER = """
**What am I looking at?** A transformer encoder reads your text. It turns each token into a vector,
lets the tokens attend to each other for a few layers, **averages** the final vectors and maps the
average to two probabilities. *Trained from scratch* (5.8M parameters) learned from 8.5k movie-review
sentences only, with a larger pre-trained model as its teacher; *pre-trained + fine-tuned* started
from all-MiniLM-L6-v2, which had read about a billion sentence pairs before it ever saw a review.

*Gradient × input* asks: if this token's embedding were faded out, how far would the score move
towards positive (green) or negative (red)? *Attention rollout* follows attention (plus the residual
path) through every layer and says how much of each token ends up in the averaged vector (blue) — it
shows what was **read**, not which way it pushed. The two often disagree: attention is not explanation.

Try the examples: negation ("not good", "not bad at all"), contrast ("great but ... a mess"),
sarcasm, a neutral fact, and French (the training data is English, so it guesses).
"""
COMPARE_NOTE = """**What pre-training gave.** Both models have the same shape of head: mean-pooled encoder
vectors into two classes. The from-scratch model learned every word's meaning from 8.5k labelled sentences, so
a word it met mostly in negative reviews stays negative whatever surrounds it ("not bad"). The pre-trained
encoder had already learned, from a huge unlabelled corpus, how words combine — that "not" flips what follows,
that "but" shifts the weight to the second half — and fine-tuning only had to map that knowledge to two labels.
Compare the token contributions: the pre-trained model's negations and contrasts carry weight of their own."""


SHOW_COMPARE = "(on) => { if (on) document.querySelector('#sentiment-compare')?.scrollIntoView({block: 'start'}); }"


def _scores(run: use.SentimentRun, method: str):
    signed = method != METHODS[1]
    return (run.grad_x_input if signed else run.rollout), signed


@cached
@handler
def classify(text: str | None, method: str, model: str | None = None):
    """A sentiment classifier's verdict on a text and which tokens drove it: (P(label), notices, tokens
    coloured by contribution as HTML, per-token bars, attention grid, link to the Attention tab).

    Args:
        text: a sentence about a movie
        method: "gradient × input" (signed contributions) or "attention rollout" (what was read)
        model: which classifier (the picker's choice, kept in session state; API callers get the first installed)
    """
    run = use.classify(text, model)
    scores, signed = _scores(run, method)
    return (
        run.probs,
        "\n\n".join(f"⚠️ {n}" for n in [run.notice] if n),
        views.token_html(run.labels, scores, signed),
        views.score_bars(run.labels, scores, signed, f"{method} per token"),
        attention_views.layer_head_grid(run.attn, run.labels, run.labels, "Attention: every layer and head"),
        f"[Open this text in the Attention tab →]({use.attention_link(run)})",
    )


@cached
@handler
def compare(text: str | None, method: str):
    """Every installed classifier on the same text: verdicts, token contributions and attention, side by side."""
    runs = use.compare(text)
    columns = []
    for label, run in zip(use.classifiers(), runs):
        scores, signed = _scores(run, method)
        verdict = max(run.probs, key=run.probs.get)
        columns.append((f"**{label}**: {verdict} ({run.probs[verdict]:.0%})" + (f"  \n{run.notice}" if run.notice else ""),
                        views.token_html(run.labels, scores, signed),
                        attention_views.layer_head_grid(run.attn, run.labels, run.labels, label)))
    return notice(), *[part for column in columns for part in column]


def build() -> View:
    installed = list(use.classifiers())
    with gr.Tab("Sentiment", id="sentiment"):
        with gr.Row():
            with gr.Column(scale=2):
                text = gr.Textbox(label="Text", lines=3, placeholder="Type a sentence about a movie ...")
                model = gr.Radio(installed, value=installed[0] if installed else None, label="Classifier",
                                 elem_id="sentiment-classifier")  # its link key (ui/state.LINK_KEYS)
                comparing = gr.Checkbox(False, label="Compare both classifiers side by side", elem_id="compare",
                                        visible=len(installed) > 1)
                with gr.Row(equal_height=True):
                    method = gr.Radio(list(METHODS), value=METHODS[0], label="Colour tokens by", scale=3)
                    button = gr.Button("Classify", variant="primary", scale=1, elem_id="sentiment-run")
                with gr.Column(elem_classes=["lecture-hide"]):
                    examples = gr.Examples(EXAMPLES, [text, method])
            with gr.Column(scale=1):
                probs = gr.Label(label="Verdict", num_top_classes=2)
                tokens = gr.HTML(label="Tokens coloured by contribution", elem_id="sentiment-tokens")
                link = gr.Markdown()
        notices = gr.Markdown()
        bars = gr.Plot(label="Score per token", show_label=False)
        with gr.Accordion("Attention in every layer and head", open=False) as attention_box:
            grid = gr.Plot()
        with gr.Accordion("What am I looking at?", open=False, elem_classes=["lecture-hide"]):
            gr.Markdown(EXPLAINER)
        # the chosen classifier travels as session state, so the API keeps classify(text, method)
        chosen = gr.State(installed[0] if installed else None)
        inputs, outputs = [text, method, chosen], [probs, notices, tokens, bars, grid, link]
        button.click(classify, inputs, outputs, api_name="classify")
        # chained here, after the button, so the public endpoint keeps the plain name "classify"
        examples.load_input_event.then(classify, inputs, outputs, api_name=False)
        text.submit(classify, inputs, outputs, api_name=False)
        method.input(classify, inputs, outputs, api_name=False)
        model.change(lambda name: name, model, chosen, api_name=False, queue=False).then(
            classify, inputs, outputs, api_name=False)
        attention_box.expand(classify, inputs, outputs, api_name=False)

        if len(installed) > 1:
            with gr.Accordion("Compare: trained from scratch vs pre-trained + fine-tuned", open=False,
                              elem_id="sentiment-compare") as compare_box:
                compare_button = gr.Button("Compare the classifiers on this text")
                compare_notice = gr.Markdown()
                parts = []
                with gr.Row():
                    for label in installed:
                        with gr.Column():  # each grid's title names its classifier
                            parts += [gr.Markdown(), gr.HTML(), gr.Plot(label=f"Attention: {label}", show_label=False)]
                gr.Markdown(COMPARE_NOTE)  # after the verdicts: on a projector, the figures come first
            compare_button.click(compare, [text, method], [compare_notice, *parts], api_name="classify_compare")
            compare_box.expand(compare, [text, method], [compare_notice, *parts], api_name=False)
            # ticked by hand, by a link (`compare=1`) or by a lecture step: the section opens, runs, comes into view
            comparing.change(lambda on: gr.Accordion(open=on), comparing, compare_box, api_name=False,
                             queue=False).then(compare_if, [comparing, text, method], [compare_notice, *parts],
                                               api_name=False).then(None, comparing, None, js=SHOW_COMPARE)
    return View(classify, inputs, outputs, "classify")


def compare_if(on: bool, text: str | None, method: str):
    """`compare` when the Compare box is ticked; nothing changes otherwise."""
    return compare(text, method) if on else tuple(gr.skip() for _ in range(1 + 3 * len(use.classifiers())))
