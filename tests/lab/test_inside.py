"""The "Inside an LLM" use cases (lab/inside.py) on the real LLMs' tiny stand-ins (tests/lab/conftest.py) and the
shipped Shakespeare LM: each experiment's numbers, the flow's clamps and its heads ranked by their push."""

import numpy as np
import pytest

from i18n import render
from lab import inside, llms
from lab.policy import InputError
from views import inside as views
from views.kit import axis_text


@pytest.fixture
def made(llm_dir):
    for llm in llms.LLMS.values():
        llms.make(llm, llm_dir)
    return llm_dir


def test_rotary_against_learned_positions(made):
    run = inside.rotary("the cat sat on the mat", 300)
    assert run.change[inside.SMOLLM2].max() < 1e-3 < run.change[inside.LEARNED_LM].max()
    assert "256" in str(run.notice)  # the Shakespeare LM was moved less, and it is said


def test_kv_cache_and_the_heads_that_share_one(made):
    kv = inside.kv_cache()
    assert set(kv) == {inside.SMOLLM2, inside.GEMMA3} and all(shared < unshared for shared, unshared in kv.values())
    shared = inside.shared_heads("the cat sat", 99)
    assert shared.layer == 1 and shared.heads == [0, 1] and "Layer" in str(shared.notice)  # clamped, and said
    names = [a["text"] for a in views.shared_heads_figure(shared).layout["annotations"] if a.get("textangle") != 90]
    assert names == ["H0<br>kv0", "H1<br>kv0"]  # as the Attention grid names them: the key/value head under
    axes = views.shared_heads_figure(shared).layout  # and the tokens on its axes: a head's keys below it
    assert list(axes["yaxis"]["ticktext"]) == list(axis_text(shared.labels))
    assert list(axes["xaxis"]["ticktext"]) == list(axis_text(shared.labels)) * 2


def test_the_sink_and_the_norms_on_a_real_llm_stand_in(made):
    sink = inside.sink(inside.GEMMA3, "abc abc")
    assert ((0 <= sink.share) & (sink.share <= 1)).all() and len(sink.before) == len(sink.after) == 5
    norms = inside.norms(None, "the cat sat")
    assert norms.cosine.shape == norms.mean_over_rms.shape and norms.name == inside.SMOLLM2


def test_gemmas_local_layers_stay_within_their_window(made):
    run = inside.reach()
    assert run.n_tokens > 512 and run.window == 5
    assert max(run.farthest[i] for i in run.local_layers) <= 4


def test_the_figures_name_each_model_as_a_person_does_in_the_pages_language(made):
    from views import inside as views

    # (they wrote the checkpoints' folder names: "smollm2-135m-instruct: the first token's share ...")
    sink = views.sink_figure(inside.sink(inside.GEMMA3, "abc abc"), "zh-CN")
    assert sink.layout.title.text.startswith("Gemma 3 270M：")
    assert views.norms_figure(inside.norms(None, "the cat sat"), "en").layout.title.text.startswith("SmolLM2-135M-Instruct:")
    kinds = {inside.SMOLLM2: "rotary", inside.LEARNED_LM: "learned"}
    rotary = views.rotary_figure(inside.rotary("the cat sat", 10).change, 10, kinds, "zh-CN")
    assert [trace.name for trace in rotary.data] == ["SmolLM2-135M-Instruct：旋转位置编码", "莎士比亚语言模型（从零训练）：学到的位置编码"]
    kv = inside.kv_cache()
    bars = views.kv_figure(kv, {inside.SMOLLM2: (3, 9), inside.GEMMA3: (1, 4)}, "en")
    assert list(bars.data[0].y) == ["SmolLM2-135M-<br>Instruct", "Gemma 3 270M"] and bars.data[0].orientation == "h"
    assert bars.layout.xaxis.range[1] > max(max(pair) for pair in kv.values()) / 1024  # room for the longest label


def test_the_flow_clamps_and_ranks_its_heads_by_their_push_on_the_prediction():
    run = inside.flow("shakespeare-lm", "ROMEO: But soft, what light through yonder window breaks?")
    notices = []
    token, threshold, routes, heads = inside.flow_routes(run, inside.LAST, 0.001, notices)
    assert token == len(run.labels) - 1 and threshold == 0.005 and notices == []  # the slider's end: the last token
    assert [push for *_, push in heads] == sorted((push for *_, push in heads), reverse=True)
    inside.flow_routes(run, 500, 0.05, notices)
    assert notices  # a position the text does not have is clamped, and said
    with pytest.raises(InputError):
        inside.flow_routes(run, 3, "a lot")
    layer, head, token, promoted, suppressed = inside.flow_head(run, 99, 99, 3)
    assert (layer, head) == (5, 5) and len(promoted) == len(suppressed) == 8
    assert np.all(np.diff([v for _, v in promoted]) <= 0)


def test_a_heads_bars_are_labelled_by_their_words_alone_and_keep_a_repeated_word_apart():
    from views import inside as views

    promoted, suppressed = [(" the", 2.0), (" a", 1.5)], [(" the", -1.0), ("ing", -0.5)]
    figure = views.head_bars(3, 1, " cat", promoted, suppressed)
    assert list(figure.layout.yaxis.ticktext) == ["'ing'", "' the'", "' a'", "' the'"]  # it read "0:'ing'"
    assert list(figure.data[0].y) == [0, 1, 2, 3] and list(figure.data[0].x) == [-0.5, -1.0, 1.5, 2.0]


def test_the_flow_graphs_title_counts_its_edges_in_the_readers_words():
    from views import inside as views

    run = inside.flow("shakespeare-lm", "ROMEO: But soft, what light")
    token, threshold, routes, _ = inside.flow_routes(run, inside.LAST, 0.05)
    title = lambda shown, lang: views.flow_figure(run, shown, token, threshold, lang).layout.title.text  # noqa: E731
    assert ": 1 edge of at least" in title(routes[:1], "en")  # it said "1 edges"
    assert f": {len(routes)} edges of at least" in title(routes, "en") and len(routes) > 1
    assert "：1 条边，每条不小于" in title(routes[:1], "zh-CN")


def test_the_flow_on_an_llm_not_made_yet_is_the_shipped_lms_and_says_why(llm_dir):
    # the tab opens on SmolLM2: in a fresh app's first minutes (or offline) its graph was an error
    run = inside.flow(inside.SMOLLM2, "ROMEO: But soft, what light")
    assert run.name == inside.LEARNED_LM and "".join(run.labels).startswith("ROMEO")
    assert str(run.notice).startswith("SmolLM2-135M-Instruct is not ready here (not made yet: run")
    assert "莎士比亚语言模型（从零训练）的信息流" in render(run.notice, "zh-CN")
    from ui import inside as tab  # the page's handler keeps its answers: not the stand-in's once SmolLM2 is made

    assert "not ready" in tab.flow(inside.SMOLLM2, "ROMEO: But soft, what light", inside.LAST, 0.05)[0]
    llms.make(llms.SMOLLM2, llm_dir)
    made = inside.flow(inside.SMOLLM2, "ROMEO: But soft, what light")
    assert made.name == inside.SMOLLM2 and str(made.notice) == ""
    assert "not ready" not in tab.flow(inside.SMOLLM2, "ROMEO: But soft, what light", inside.LAST, 0.05)[0]
