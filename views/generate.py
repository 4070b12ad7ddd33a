"""Pictures of decoding: tokens coloured by their probability, one step's candidate
distribution through every sampling stage, and the beam-search tree.

Pure functions of what the core recorded (`StepRecord`, `BeamResult`); nothing here
runs a model or re-derives a probability.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from i18n import t
from transformer_core.decoding.beam import BeamResult, Candidate
from transformer_core.decoding.sampling import STAGES, StepRecord

KEPT, CUT, CHOSEN, BEST = "#4f46e5", "#d1d5db", "#f97316", "#f97316"
# the stages' names over their columns: five or six columns share about 240 px on a 390-px phone, where plotly's
# 16-px subplot titles ran into each other
STAGE_TITLE_PX = 13
# the foot of the step's title's first line, below the plot's label at the top left: plotly anchors a title of two
# lines by its first, and the second goes below it, above the stages' titles
TITLE_FOOT_PX = 52
LABELLED_STEPS = 12  # beyond this many steps only the winning path is labelled


def show(piece: str) -> str:
    """A token's text made visible: spaces and newlines drawn as ␣ and ⏎."""
    return piece.replace(" ", "␣").replace("\n", "⏎") or "∅"


def highlighted_tokens(prompt: str, pieces: list[str], probs: list[float]) -> list[tuple[str, float | None]]:
    """HighlightedText value: the prompt uncoloured, then each generated piece with its
    probability when chosen (the darker, the surer the model was). A newline is drawn as ↵
    and then breaks the line, so the text reads as it was written."""
    return [(prompt.replace("\n", "↵\n"), None),
            *zip((p.replace("\n", "↵\n") for p in pieces), (round(p, 3) for p in probs))]


def stage_bars(record: StepRecord, label: Callable[[int], str], stages: tuple[str, ...] = STAGES,
               lang: str = "en") -> go.Figure:
    """One step's top candidates (rows) through each stage (columns).

    A bar is the candidate's probability after that stage; a token a stage cuts keeps a
    grey bar of the height it had just before, so you see what was removed; the chosen
    token is orange.
    """
    names = [f"{show(label(t))} ({t})" for t in record.candidates]
    titles = [t("sampling.left", lang, stage=t(f"sampling.stage.{s}", lang), n=record.kept[s]) for s in stages]
    fig = make_subplots(rows=1, cols=len(stages), shared_yaxes=True, subplot_titles=titles, horizontal_spacing=0.02)
    for col, stage in enumerate(stages, start=1):
        index = STAGES.index(stage)
        before = record.probs[STAGES[index - 1]] if index else record.probs[stage]
        after = record.probs[stage]
        heights, colours, hover = [], [], []
        for token, b, a in zip(record.candidates, before, after):
            cut = a == 0
            heights.append(b if cut else a)
            colours.append(CUT if cut else CHOSEN if token == record.chosen else KEPT)
            hover.append(t("sampling.cut_here", lang) if cut and b > 0 else t("sampling.cut_earlier", lang) if cut
                         else f"p = {a:.4f}")
        fig.add_trace(
            go.Bar(x=heights, y=names, orientation="h", marker_color=colours, customdata=hover,
                   hovertemplate=t("sampling.bar_hover", lang, stage=stage), showlegend=False),
            row=1, col=col,
        )
        fig.update_xaxes(range=[0, max(1e-9, *heights) * 1.1], showticklabels=False, row=1, col=col)
    fig.update_yaxes(autorange="reversed")
    fig.update_annotations(font_size=STAGE_TITLE_PX)
    height = 170 + 28 * len(names)
    fig.update_layout(
        title=dict(text=t("sampling.step_title", lang, step=record.step, token=repr(show(label(record.chosen))),
                          p=record.chosen_prob, raw=record.chosen_raw_prob),
                   y=1 - TITLE_FOOT_PX / height, yref="container", yanchor="bottom"),
        height=height, margin=dict(l=10, r=10, t=140, b=10), bargap=0.25,
    )
    return fig


def _paths(result: BeamResult) -> dict[tuple[int, int], list[int]]:
    """Token path of every kept node: (step, slot) -> generated tokens so far."""
    paths, previous = {}, {0: []}
    for step, candidates in enumerate(result.steps):
        current = {}
        for c in candidates:
            if c.status == "kept":
                current[c.slot] = previous[c.parent] + [c.token]
                paths[(step, c.slot)] = current[c.slot]
        previous = current
    return paths


def best_path(result: BeamResult) -> list[Candidate]:
    """The candidates, step by step, that make up the winning hypothesis."""
    paths, best, out = _paths(result), result.best.tokens, []
    for step, candidates in enumerate(result.steps[: len(best)]):
        for c in candidates:
            if c.status != "pruned" and c.token == best[step] and paths.get((step - 1, c.parent), []) == best[:step]:
                out.append(c)
                break
    return out


def beam_highlights(prompt: str, result: BeamResult, label: Callable[[int], str]) -> list[tuple[str, float | None]]:
    """HighlightedText value of the winning beam, each token with its own probability p(token | beam so far)."""
    path = best_path(result)
    return highlighted_tokens(prompt, [label(c.token) for c in path], [math.exp(c.logprob) for c in path])


def _shown(candidates: list[Candidate], width: int) -> list[Candidate]:
    """Every kept or finished candidate and the `width` best pruned ones (the near misses)."""
    pruned = [c for c in candidates if c.status == "pruned"][:width]
    return [c for c in candidates if c.status != "pruned"] + pruned


def beam_tree(result: BeamResult, label: Callable[[int], str], width: int, lang: str = "en") -> go.Figure:
    """The beam tree: x = step, one column of candidates per step ranked by cumulative log-prob.

    Kept extensions are indigo dots joined to their parent beam, pruned ones grey, finished
    ones (eos) green diamonds; the winning hypothesis is traced in orange.
    """
    paths = _paths(result)
    best = result.best.tokens
    few = len(result.steps) <= LABELLED_STEPS
    fig = go.Figure()
    edges = {"kept": ([], []), "pruned": ([], []), "best": ([], [])}
    points = {"kept": [], "pruned": [], "finished": []}
    y_of = {(-1, 0): 0.0}  # the prompt is the root, at step -1
    for step, candidates in enumerate(result.steps):
        shown = sorted(_shown(candidates, width), key=lambda c: -c.cumulative)
        for rank, c in enumerate(shown):
            x, y = step, -rank
            parent = (step - 1, c.parent)
            path = paths.get(parent, []) + [c.token]
            on_best = path == best[: len(path)]
            kind = "best" if on_best and c.status != "pruned" else "kept" if c.status != "pruned" else "pruned"
            xs, ys = edges[kind]
            xs += [step - 1, x, None]
            ys += [y_of[parent], y, None]
            points[c.status].append((x, y, c, on_best))
            if c.status == "kept":
                y_of[(step, c.slot)] = y
    styles = {"kept": dict(color=KEPT, width=1.5), "pruned": dict(color=CUT, width=1, dash="dot"),
              "best": dict(color=BEST, width=3)}
    for kind in ("pruned", "kept", "best"):
        xs, ys = edges[kind]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=styles[kind], hoverinfo="skip", showlegend=False))
    fig.add_trace(go.Scatter(x=[-1], y=[0], mode="markers+text", text=[t("sampling.prompt", lang)], textposition="middle left",
                             marker=dict(color="black", size=10), hoverinfo="skip", showlegend=False))
    markers = {"kept": dict(color=KEPT, size=9), "pruned": dict(color=CUT, size=6),
               "finished": dict(color="#16a34a", size=11, symbol="diamond")}
    for status, pts in points.items():
        if not pts:
            continue
        fig.add_trace(go.Scatter(
            x=[p[0] for p in pts], y=[p[1] for p in pts],
            mode="markers+text",
            # label the winning path, and every kept node while the tree is small enough to read
            text=[show(label(p[2].token)) if p[3] or (few and status != "pruned") else "" for p in pts],
            textposition="top center",
            marker=dict(**markers[status], line=dict(color=[BEST if p[3] else "white" for p in pts], width=2)),
            customdata=[[show(label(p[2].token)), p[2].logprob, p[2].cumulative] for p in pts],
            hovertemplate=t("sampling.node_hover", lang, status=t(f"sampling.status.{status}", lang)),
            name=t(f"sampling.status.{status}", lang),
        ))
    rows = max((len(_shown(c, width)) for c in result.steps), default=1)
    fig.update_xaxes(title=t("sampling.tree_x", lang), dtick=1 if few else 5, zeroline=False)
    fig.update_yaxes(title=t("sampling.tree_y", lang), showticklabels=False, zeroline=False)
    fig.update_layout(height=220 + 34 * rows, margin=dict(l=10, r=10, t=40, b=10),
                      title=t("sampling.tree_title", lang, width=width, steps=len(result.steps)),
                      legend=dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom"))
    return fig
