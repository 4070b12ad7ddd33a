"""Sentiment tab: a transformer classifier's verdict on a sentence, and which tokens drove it.

Lesson: an encoder reads the whole sentence at once, mean-pools its output
vectors and maps them to P(positive) / P(negative). Gradient x input and
attention rollout are two ways to ask which tokens mattered; they need not agree.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import urlencode

import gradio as gr

from transformer_core import CheckpointError
from transformer_core.sentiment import explain
from transformer_core.tokenization import TokenizerError
from ui import store
from ui.common import truncate
from views import attention as attention_views
from views import sentiment as views

MODEL = "sentiment"
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
**What am I looking at?** A small transformer encoder (5.8M parameters, trained by us on 8.5k movie-review
sentences with a larger pre-trained model as its teacher; 78% right on held-out ones) reads your text. It turns each token into a vector, lets the
tokens attend to each other for a few layers, **averages** the final vectors and maps the average to two probabilities.

*Gradient × input* asks: if this token's embedding were faded out, how far would the score move
towards positive (green) or negative (red)? *Attention rollout* follows attention (plus the residual
path) through every layer and says how much of each token ends up in the averaged vector (blue) — it
shows what was **read**, not which way it pushed. The two often disagree: attention is not explanation.

Try the examples: negation (it misses both "not good" and "not bad at all": the word outweighs the
"not"), contrast ("great but ... a mess"), sarcasm (a model of this size mostly misses it; this one it
gets, so ask which tokens did it), a neutral fact, and French (the training data is English, so it guesses).
"""


def _has_letters(text: str) -> bool:
    return any(unicodedata.category(c)[0] in "LN" for c in text)


def attention_link(text: str) -> str:
    """Markdown link that opens the Attention tab on this model and text (query-parameter state)."""
    return f"[Open this text in the Attention tab →](?{urlencode({'tab': 'attention', 'model': MODEL, 'text': text})})"


def classify(text: str | None, method: str):
    """Text -> (P(label) dict, notices, coloured tokens, per-token bars, attention grid, link)."""
    text, notice = truncate(text)
    if not text.strip():
        raise gr.Error("Type a sentence to classify, or click one of the examples.")
    try:
        model, tokenizer = store.model(MODEL), store.tokenizer(MODEL)
    except (CheckpointError, TokenizerError) as error:
        raise gr.Error(f"The sentiment model is not available: {error}") from error
    verdict = explain(model, tokenizer, text)
    notices = [notice] if notice else []
    if verdict.truncated:
        read_tokens = len(verdict.tokens)
        notices.append(f"The text has {read_tokens + verdict.truncated} tokens; the model reads at most "
                       f"{read_tokens}, so only the first {read_tokens} were classified.")
    if not _has_letters(text):
        notices.append("The text has no letters or digits: the model saw only punctuation, symbols or emoji, "
                       "which its training sentences rarely contain, so treat the verdict as a guess.")
    labels = [span.text for span in verdict.tokens]
    signed = method != METHODS[1]
    scores = verdict.grad_x_input if signed else verdict.rollout
    read_text = text[: verdict.tokens[-1].end]
    return (
        verdict.probs,
        "\n\n".join(f"⚠️ {n}" for n in notices),
        views.token_html(labels, scores, signed),
        views.score_bars(labels, scores, signed, f"{method} per token"),
        attention_views.layer_head_grid(verdict.attn, labels, labels, "Attention: every layer and head"),
        attention_link(read_text),
    )


def build() -> None:
    with gr.Tab("Sentiment", id="sentiment"):
        with gr.Row():
            with gr.Column(scale=2):
                text = gr.Textbox(label="Text", lines=3, placeholder="Type a sentence about a movie ...")
                method = gr.Radio(list(METHODS), value=METHODS[0], label="Colour tokens by")
                button = gr.Button("Classify", variant="primary")
                examples = gr.Examples(EXAMPLES, [text, method])
            with gr.Column(scale=1):
                probs = gr.Label(label="Verdict", num_top_classes=2)
                link = gr.Markdown()
        notices = gr.Markdown()
        tokens = gr.HTML(label="Tokens coloured by contribution")
        bars = gr.Plot(label="Score per token")
        with gr.Accordion("Attention in every layer and head", open=False):
            grid = gr.Plot()
        with gr.Accordion("What am I looking at?", open=False):
            gr.Markdown(EXPLAINER)
        outputs = [probs, notices, tokens, bars, grid, link]
        button.click(classify, [text, method], outputs, api_name="classify")
        # chained here, after the button, so the public endpoint keeps the plain name "classify"
        examples.load_input_event.then(classify, [text, method], outputs, api_name=False)
        text.submit(classify, [text, method], outputs, api_name=False)
        method.input(classify, [text, method], outputs, api_name=False)
