"""The Concepts tab: six textbook ideas, each a live experiment on transformer_core.

Handlers validate, call `transformer_core.analysis.concepts`, and hand the result to
`views.concepts`; every number on the page is computed when the button is pressed.
"""

from __future__ import annotations

import gradio as gr
import pandas as pd

from lab import concepts as use
from ui.common import View, handler
from views import concepts as views
from views.kit import placeholder


def _table(rows: list[list], headers: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=headers)


# 1 ------------------------------------------------------------------------------------------

INTRO_1 = """**Self-attention is a weighted average.** Each row of X is one word's vector. Every
vector is compared with every other by a dot product; softmax turns each row of scores into
weights that are positive and sum to 1; output yᵢ is the weighted sum of the value vectors.
So every output lies *between* the values (inside the dotted outline). In the parameter-free
version the values are the inputs themselves (q = k = v = x); with projections the model
chooses what to compare (q = x W_q, k = x W_k) and what to pass on (v = x W_v). The numbers
come from `attend`, the function every model here calls."""

X_DEFAULT = "2 0\n0 1\n1 1"
WQ_DEFAULT, WK_DEFAULT, WV_DEFAULT = "1 0\n0 2", "1 1\n0 1", "0 1\n1 0"


@handler
def weighted_average(x_text, use_projections, wq_text, wk_text, wv_text, scaled):
    wa = use.weighted_average(x_text, use_projections, wq_text, wk_text, wv_text, scaled)
    labels = views.vector_labels(len(wa.y), "y")
    headers = ["output", *[f"dim {j + 1}" for j in range(wa.y.shape[1])]]
    return (views.weights_figure(wa), views.vectors_figure(wa), views.weighted_sums(wa),
            _table(views.matrix_rows(wa.y, labels), headers))


# 2 ------------------------------------------------------------------------------------------

INTRO_2 = """**Why divide by √d.** The dot product of a random query and key with unit-size entries
is a sum of d products, so its spread grows like √d. Fed raw to softmax, the largest score
wins almost everything: the top weight goes to 1 and the others to 0 (*saturation*). The
softmax's gradient, the matrix diag(p) − p pᵀ, then shrinks towards 0, so almost nothing flows
back to the queries and keys and learning stalls. Dividing the scores by √d gives them the same
spread at every d: the top weight and the gradient stay put. Curves: mean over 256 random
queries (band: 10th–90th percentile) against the chosen number of random keys, through `attend`."""


@handler
def scaling(d, n_keys, seed):
    points, chosen = use.scaling(d, n_keys, seed)
    return (views.scaling_figure(points, chosen.d), views.chosen_d_figure(chosen),
            _table(views.scaling_rows(points), views.SCALING_HEADERS))


# 3 ------------------------------------------------------------------------------------------

INTRO_3 = """**Attention ignores order.** Attention compares every word with every word and takes a
weighted average, a sum, which does not care in which order its terms come. So an encoder given
no position information returns, for a shuffled sentence, exactly the same vectors, only
shuffled (the bars for *no positions* are zero), and a classifier that averages them gives
exactly the same verdict. Add position vectors and every output changes. Both rows use the
same weights; *no positions* is the same class built with `positions="none"`. The model is the
shipped sentiment classifier when it is installed, otherwise a small untrained one (seed 0)."""

SENTENCE_DEFAULT = "the plot was dull but the acting was wonderful"


@handler
def order(sentence, seed):
    summary, variants, labels, names = use.order(sentence, seed)
    return (summary, views.order_figure(variants, labels),
            _table(views.verdict_rows(variants, names), views.verdict_headers(names)))


# 4 ------------------------------------------------------------------------------------------

INTRO_4 = """**Positions.** Because attention ignores order, each position gets a vector added to its
token's embedding. The sinusoidal table of the original paper gives dimension pair i a clock of
its own frequency: fast in the first columns, slower and slower to the right, so every position
has a distinct pattern. Its dot products depend only on the distance between positions (bright
diagonal, fading away from it). Beside it, the table our shipped language model *learned* from
Shakespeare (one row per position, nothing imposed)."""


@handler
def positions(n_positions, d_model):
    (pe, similarity), learned, note = use.positions(n_positions, d_model)
    sinusoidal = views.positions_figure(pe, similarity, "sinusoidal encoding (fixed formula)")
    if learned is None:
        return sinusoidal, placeholder("learned positions: not available yet"), note
    title, table, learned_similarity = learned
    return sinusoidal, views.positions_figure(table, learned_similarity, title), note


# 5 ------------------------------------------------------------------------------------------

INTRO_5 = """**Multi-head costs nothing extra.** An attention layer of width d has W_q, W_k, W_v, each
d×d (plus a bias of d), whatever the number of heads: heads only cut the width into n_head slices
of d/n_head. The output projection W_o that mixes the heads adds another d×d. So the count is
4(d² + d) for 1, 2, 4 or 8 heads alike. Each count is `sum(p.numel())` of a real
`MultiHeadAttention`. Below: every shipped model's parameters by component (all layers summed,
`*` stands for the layer number); each TOTAL equals `sum(p.numel() for p in model.parameters())`."""


@handler
def parameters(d_model):
    counts, tables, problems = use.parameters(d_model)
    rows = [row for name, table in tables.items() for row in views.parameter_rows(name, table)]
    note = "No shipped checkpoints found in `{}`.".format(use.store.model_dir()) if not rows and not problems else ""
    if problems:
        note = "Could not count:\n" + "\n".join(problems)
    return (views.head_figure(counts), _table(views.head_rows(counts), views.HEAD_HEADERS),
            _table(rows, views.PARAM_HEADERS), note)


# 6 ------------------------------------------------------------------------------------------

INTRO_6 = """**Tracing the tensors.** One forward pass of the original encoder-decoder, shrunk until
every number fits on a screen: d_model 8, 2 heads of 4, one layer, feed-forward 8→32→8,
vocabulary 5 (untrained, matrices drawn with the seed from N(0, 0.4²) so the numbers are big
enough to follow). A batch of 2 source rows of 3 tokens and 2 target rows of 2 tokens. The
decoder reads token 0 (begin) then the target shifted right (teacher forcing) and must predict
the target itself. Steps are listed in the order the model computed them, down to each token's
cross-entropy −log p(target), with and without label smoothing (which mixes a little of every
class into the target)."""

SRC_DEFAULT, TGT_DEFAULT = "1 2 3\n4 3 2", "2 3\n1 4"


@handler
def trace(src_text, tgt_text, label_smoothing, seed, follow_row=0, follow_position=1):
    run, b, t = use.trace(src_text, tgt_text, label_smoothing, seed, follow_row, follow_position)
    return (_table(views.step_rows(run), views.STEP_HEADERS), _table(views.loss_rows(run), views.LOSS_HEADERS),
            views.follow_token(run, b, t), views.step_values(run))


# layout ---------------------------------------------------------------------------------------

def build() -> View:
    with gr.Tab("Concepts", id="concepts") as tab:
        gr.Markdown("Six ideas every transformer course teaches, each run live on our own code. "
                    "Change a number and press the section's button.")

        with gr.Accordion("1. Self-attention is a weighted average", open=True):
            gr.Markdown(INTRO_1)
            with gr.Row():
                x_text = gr.Textbox(X_DEFAULT, lines=4, label="X: one vector per line")
                with gr.Column():
                    use_projections = gr.Checkbox(False, label="use projections W_q, W_k, W_v")
                    scaled = gr.Checkbox(False, label="divide scores by √d")
                wq = gr.Textbox(WQ_DEFAULT, lines=3, label="W_q (d rows)")
                wk = gr.Textbox(WK_DEFAULT, lines=3, label="W_k (d rows)")
                wv = gr.Textbox(WV_DEFAULT, lines=3, label="W_v (d rows)")
            run_1 = gr.Button("Compute attention", variant="primary")
            inputs_1 = [x_text, use_projections, wq, wk, wv, scaled]
            gr.Examples([[X_DEFAULT, False, WQ_DEFAULT, WK_DEFAULT, WV_DEFAULT, False],
                         ["3 0\n2.5 0.5\n0 3\n-2 -2", False, WQ_DEFAULT, WK_DEFAULT, WV_DEFAULT, False],
                         [X_DEFAULT, True, WQ_DEFAULT, WK_DEFAULT, WV_DEFAULT, False],
                         ["1 0 0\n0 1 0\n0 0 1\n1 1 1", False, "", "", "", True]], inputs_1)
            with gr.Row():
                fig_weights, fig_vectors = gr.Plot(label="weights"), gr.Plot(label="vectors")
            sums, y_table = gr.Markdown(), gr.Dataframe(label="outputs y", interactive=False)
            outputs_1 = [fig_weights, fig_vectors, sums, y_table]

        with gr.Accordion("2. Why divide by √d", open=True):
            gr.Markdown(INTRO_2)
            with gr.Row():
                d = gr.Slider(2, 1024, 64, step=1, label="d (dimension of queries and keys)")
                n_keys = gr.Slider(2, 64, 16, step=1, label="number of keys")
                seed_2 = gr.Number(0, precision=0, label="seed", minimum=0)
            run_2 = gr.Button("Sample and compare", variant="primary")
            inputs_2 = [d, n_keys, seed_2]
            gr.Examples([[4, 16, 0], [512, 16, 0], [1024, 64, 0]], inputs_2)
            fig_scaling, fig_rows = gr.Plot(label="against d"), gr.Plot(label="six queries' weights at this d")
            scaling_table = gr.Dataframe(headers=views.SCALING_HEADERS, label="means over queries", interactive=False)
            outputs_2 = [fig_scaling, fig_rows, scaling_table]

        with gr.Accordion("3. Attention ignores order", open=True):
            gr.Markdown(INTRO_3)
            with gr.Row():
                sentence = gr.Textbox(SENTENCE_DEFAULT, label="sentence", scale=4)
                seed_3 = gr.Number(0, precision=0, label="shuffle seed", minimum=0, scale=1)
            run_3 = gr.Button("Shuffle and encode", variant="primary")
            inputs_3 = [sentence, seed_3]
            gr.Examples([[SENTENCE_DEFAULT, 0], ["not bad at all , truly a good film", 1],
                         ["a good film , not a bad one", 2]], inputs_3)
            order_note, fig_order = gr.Markdown(), gr.Plot(label="outputs compared token by token")
            verdicts = gr.Dataframe(label="verdicts", interactive=False)
            outputs_3 = [order_note, fig_order, verdicts]

        with gr.Accordion("4. Positions", open=True):
            gr.Markdown(INTRO_4)
            with gr.Row():
                n_positions = gr.Slider(2, 256, 64, step=1, label="positions")
                d_pos = gr.Slider(4, 256, 64, step=2, label="d_model (sinusoidal)")
            run_4 = gr.Button("Draw positions", variant="primary")
            inputs_4 = [n_positions, d_pos]
            gr.Examples([[64, 64], [256, 128], [16, 16]], inputs_4)
            fig_sin, fig_learned, lm_note = gr.Plot(label="sinusoidal"), gr.Plot(label="learned"), gr.Markdown()
            outputs_4 = [fig_sin, fig_learned, lm_note]

        with gr.Accordion("5. Multi-head costs nothing extra", open=True):
            gr.Markdown(INTRO_5)
            d_heads = gr.Dropdown([64, 128, 256, 512, 768], value=128, label="d_model")
            run_5 = gr.Button("Count parameters", variant="primary")
            gr.Examples([[128], [768]], [d_heads])
            with gr.Row():
                fig_heads = gr.Plot(label="one attention layer")
                head_table = gr.Dataframe(headers=views.HEAD_HEADERS, interactive=False)
            model_table = gr.Dataframe(headers=views.PARAM_HEADERS, label="shipped models", interactive=False)
            model_note = gr.Markdown()
            outputs_5 = [fig_heads, head_table, model_table, model_note]

        with gr.Accordion("6. Tracing the tensors", open=True):
            gr.Markdown(INTRO_6)
            with gr.Row():
                src_text = gr.Textbox(SRC_DEFAULT, lines=2, label="source ids (batch rows, 0..4)")
                tgt_text = gr.Textbox(TGT_DEFAULT, lines=2, label="target ids (batch rows, 0..4)")
                smoothing = gr.Slider(0.0, 0.5, 0.1, step=0.05, label="label smoothing")
                seed_6 = gr.Number(0, precision=0, label="model seed", minimum=0)
            with gr.Row():
                follow_row = gr.Number(0, precision=0, label="follow batch row", minimum=0)
                follow_position = gr.Number(1, precision=0, label="follow target position", minimum=0)
            run_6 = gr.Button("Run and trace", variant="primary")
            inputs_6 = [src_text, tgt_text, smoothing, seed_6, follow_row, follow_position]
            gr.Examples([[SRC_DEFAULT, TGT_DEFAULT, 0.1, 0, 0, 1], [SRC_DEFAULT, TGT_DEFAULT, 0.0, 0, 1, 0],
                         ["1 2 3\n1 2 3", "4 4\n4 4", 0.3, 1, 0, 0]], inputs_6)
            steps = gr.Dataframe(headers=views.STEP_HEADERS, label="steps", interactive=False)
            losses = gr.Dataframe(headers=views.LOSS_HEADERS, label="loss per token", interactive=False)
            followed = gr.Markdown()
            values = gr.Code(label="every value, in order", lines=20, max_lines=40)
            outputs_6 = [steps, losses, followed, values]

    sections = [(run_1, weighted_average, inputs_1, outputs_1, "concepts_weighted_average"),
                (run_2, scaling, inputs_2, outputs_2, "concepts_scaling"),
                (run_3, order, inputs_3, outputs_3, "concepts_order"),
                (run_4, positions, inputs_4, outputs_4, "concepts_positions"),
                (run_5, parameters, [d_heads], outputs_5, "concepts_parameters"),
                (run_6, trace, inputs_6, outputs_6, "concepts_trace")]
    for button, fn, inputs, outputs, api_name in sections:
        button.click(fn, inputs, outputs, api_name=api_name)
        tab.select(fn, inputs, outputs, api_visibility="private")  # fill every section when the tab opens

    def every_section(*values):
        """All six sections at once, for a link or lecture step that opens this tab. A section whose
        inputs it cannot take says so in a warning and is left as it was: the other five still draw."""
        results, start = [], 0
        for _, fn, inputs, outputs, _ in sections:
            try:
                results += fn(*values[start: start + len(inputs)])
            except gr.Error as e:
                gr.Warning(e.message)
                results += [gr.skip() for _ in outputs]
            start += len(inputs)
        return results

    return View(every_section, [c for s in sections for c in s[2]], [c for s in sections for c in s[3]], "concepts")
