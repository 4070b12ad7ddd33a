"""The Tokens tab: what the model actually sees.

Lesson: before any attention happens, text is cut into tokens and each token
becomes an id. The same sentence costs a different number of tokens under a
character tokenizer and under each model's byte-level BPE; BPE learns its
vocabulary by merging the most frequent adjacent pair, again and again, and a
real BPE's merge list can be replayed one merge at a time.
"""

from __future__ import annotations

import gradio as gr

from lab import tokens as use
from lab.policy import MAX_CHARS, InputError
from ui.common import cached, View, handler
from views import tokens as views

EMPTY_HINT = "Type or paste some text above (or click an example) to see its tokens."

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
]


@cached
@handler
def tokenize(text: str | None) -> tuple[str, str]:
    """Main endpoint: how every shipped tokenizer cuts a text into tokens: (notice, HTML with one panel of
    chips, ids and counts per tokenizer).

    Args:
        text: the text to tokenize (at most 5,000 characters are read)
    """
    text, tokenized, notice = use.tokenize(text)
    if not text:
        return notice, views.hint(EMPTY_HINT)
    return notice, views.panels([views.tokenizer_panel(t.label, text, t.spans, t.problem) for t in tokenized])


@cached
@handler
def replay(text: str | None, k: float) -> tuple[str, str]:
    """(summary, chips) of `text` under only the first k merges of the shipped Shakespeare BPE."""
    text, k, spans, merge = use.replay(text, k)
    if not text:
        return "", views.hint(EMPTY_HINT)
    bpe = use.replay_tokenizer()
    summary = (f"After **{k:,}** of {len(bpe.merges):,} merges: **{views.plural(len(spans), 'token')}** "
               f"({views.plural(len(text.encode('utf-8')), 'byte')} at 0 merges, "
               f"{views.plural(len(bpe.tokens(text)), 'token')} with all merges).")
    if merge:
        left, right = merge
        shown = [views.visible(use.merge_text(piece)).replace("`", "'") for piece in (left, right, left + right)]
        summary += " Merge #{:,} joined `{}` + `{}` → `{}`.".format(k, *shown)
    return summary, views.token_chips(text, spans)


@handler
def train_scratch(text: str | None):
    """Train BPE from scratch on `text`: (notice, slider at the last step, merge table, curve, chips)."""
    text, training, notice = use.scratch(text)
    if training is None:
        return (notice or "Type a short text, or click the sailor rhyme.", gr.Slider(maximum=1, value=0),
                [], views.vocab_curve([0], 0), views.hint("Nothing to train on yet."))
    n = len(training.steps)
    curve, chips = scratch_step(text, n)
    return notice, gr.Slider(maximum=max(n, 1), value=n), views.merge_rows(training.steps), curve, chips


@cached
@handler
def scratch_step(text: str | None, k: float):
    """(vocabulary curve with step k marked, chips of the text after k merges)."""
    text, training, _ = use.scratch(text)
    if training is None:
        return views.vocab_curve([0], 0), views.hint("Nothing to train on yet.")
    k = use.scratch_merges(training, k)
    return views.vocab_curve(training.vocab_sizes, k), views.piece_chips(training.segmentation(k))


def build() -> View:
    with gr.Tab("Tokens", id="tokens"):
        gr.Markdown("## What does the model actually see?\nType text and see the tokens each shipped "
                    "tokenizer cuts it into. Hover a chip for the characters and UTF-8 bytes it covers.",
                    elem_classes=["lecture-hide"])
        text = gr.Textbox(label=f"Text (up to {MAX_CHARS:,} characters)", lines=3, value=EXAMPLES[1][0],
                          elem_id="tokens_text")
        with gr.Column(elem_classes=["lecture-hide"]):
            gr.Examples(EXAMPLES, inputs=[text], label="Examples: English, Shakespeare, a rare word, numbers, "
                                                       "code, emoji, Chinese")
        notice = gr.Markdown()
        chips = gr.HTML(css_template=views.CHIP_CSS, elem_id="tokens-chips")
        with gr.Accordion("What am I looking at?", open=False):
            gr.Markdown(
                "Each chip is one token: its text (`·` is a space, `↵` a newline) and, small, its id -- the "
                "number the model really reads. The same id always gets the same colour. The character "
                "tokenizer spends one token per character and knows only the characters of Shakespeare "
                "(anything else is `[UNK]`). A byte-level BPE never fails: it falls back to UTF-8 bytes, so "
                "an emoji or a Chinese character may become several tokens, each showing its bytes as "
                "`\\xNN`. Fewer characters per token means the model sees less text in the same context.")
        gr.on(triggers=None, fn=tokenize, inputs=[text], outputs=[notice, chips], api_name="tokenize")
        view = View(tokenize, [text], [notice, chips], "tokenize")

        gr.Markdown("### Merge replay: the Shakespeare BPE, one merge at a time\n"
                    "At k = 0 every UTF-8 byte is its own token. The BPE learned its merges in order, most "
                    "frequent pair first; replaying the first k of them glues bytes into ever longer pieces, "
                    "and with all of them you get exactly the tokens shown above.")
        try:
            n_merges = len(use.replay_tokenizer().merges)
        except InputError:
            n_merges = 1  # the app still starts; the replay handler says what is missing
        k = gr.Slider(0, n_merges, value=50, step=1, label=f"Use the first k of {n_merges:,} merges",
                      elem_id="replay_k")
        replay_summary = gr.Markdown()
        replay_chips = gr.HTML(css_template=views.CHIP_CSS)
        gr.on(triggers=None, fn=replay, inputs=[text, k], outputs=[replay_summary, replay_chips],
              api_name="replay_merges")

        gr.Markdown("### BPE from scratch")
        with gr.Accordion("What am I looking at?", open=False):
            gr.Markdown(
                "Start with single characters. At each step, count every adjacent pair inside a word and "
                "merge the most frequent one into a new token (ties: the pair seen first). Merges never "
                "cross a space. The vocabulary (distinct tokens in the text) first **grows** -- each merge "
                "adds a token while its parts are still used elsewhere -- then **shrinks**, as parts stop "
                "being used on their own, until every word is a single token.")
        scratch_text = gr.Textbox(label=f"Text to learn from (up to {use.SCRATCH_MAX_CHARS:,} characters)", lines=3,
                                  value=SAILOR, elem_id="scratch_text")
        gr.Examples([[SAILOR], [EXAMPLES[1][0]]], inputs=[scratch_text])
        scratch_notice = gr.Markdown()
        step = gr.Slider(0, 1, value=0, step=1, label="Merge step k (segmentation after k merges)",
                         elem_id="scratch_step")
        scratch_chips = gr.HTML(css_template=views.CHIP_CSS)
        with gr.Row():
            curve = gr.Plot(label="Vocabulary size vs merge step")
            merges = gr.Dataframe(headers=["step", "pair", "count", "new token", "vocabulary"], label="Merges",
                                  interactive=False, max_height=320)
        gr.on(triggers=None, fn=train_scratch, inputs=[scratch_text],
              outputs=[scratch_notice, step, merges, curve, scratch_chips], api_name="bpe_from_scratch")
        step.change(scratch_step, [scratch_text, step], [curve, scratch_chips], api_name="bpe_step")
    return view
