"""Translate tab: task data, decoding, a short training run, the shipped models' attention, live training."""

import re
import time
from pathlib import Path

import gradio as gr
import pytest
import torch

from transformer_core import CheckpointError, save_checkpoint
from transformer_core.decoding.seq2seq import IGNORE, Codec, DecodingError, beam, exact_match, greedy, traced, translate
from transformer_core.training import data
from transformer_core.tasks import (
    SYMBOLS,
    TOY_LENGTHS,
    copy,
    examples,
    get_task,
    pig_latin,
    play_lines,
    random_sentence,
    reverse,
    sort,
    word_pool,
)
from transformer_core.training.translation import PER_TOKEN, build_model, fit, warm_start
from transformer_core.training.loop import TrainConfig
from lab import store
from lab.live import LiveTraining
from lab.policy import InputError
from figures import figures
from ui import translate as tab

ASSETS = Path(__file__).resolve().parents[2] / "assets"


@pytest.fixture(autouse=True)
def _one_thread():
    """One torch thread: on a shared 2-core machine two threads mostly wait for each other."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("source, target", [
    ("she pet the dog", "eshay etpay ethay ogday"),
    ("school", "oolschay"),  # the whole consonant cluster moves
    ("apple", "appleway"),  # vowel first: "way"
    ("rhythm", "ythmrhay"),  # y after the first letter is a vowel
    ("yellow", "ellowyay"),  # y first is a consonant
    ("queen", "eenquay"), ("squeal", "ealsquay"),  # qu moves as one unit
    ("hmm", "hmmay"),  # no vowel at all
    ("School", "Oolschay"), ("I", "Iway"), ("NASA", "ASANAY"), ("McBeth", "Ethmcbay"),  # capitals
    ("Dog, cat!", "Ogday, atcay!"), ("don't", "onday'tay"), ("Hello?  World.", "Ellohay?  Orldway."),  # punctuation
    ("didn't", "idnday'tay"), ("'Tis", "'Istay"), ("sea-change", "easay-angechay"),  # apostrophes, hyphens
    ("3rd of 1599", "3rday ofway 1599"), ("stay,--and", "aystay,--andway"),  # digits, dashes
])
def test_pig_latin_rules_on_tricky_words(source, target):
    assert pig_latin(source) == target


def test_toy_tasks_give_the_right_targets_on_lengths_1_to_10():
    assert (copy("3141"), reverse("3141"), sort("3141")) == ("3141", "1413", "1134")
    for name in ("copy", "reverse", "sort"):
        pairs = examples(name, "test", 300)
        assert all(TOY_LENGTHS[0] <= len(s) <= TOY_LENGTHS[1] and set(s) <= set(SYMBOLS) for s, _ in pairs)
        assert {len(s) for s, _ in pairs} == set(range(1, 11))
        assert all(sorted(s) == sorted(t) for s, t in pairs)  # same symbols, re-ordered
    assert examples("sort", "test", 50) == examples("sort", "test", 50)  # held-out sets are fixed
    assert examples("sort", "test", 50) != examples("sort", "validation", 50)


def _letter_runs(text: str) -> set[str]:
    return set(re.findall("[a-z]+", text.lower()))


def test_pig_latin_sentences_use_train_words_and_the_unseen_split_holds_new_ones(corpus):
    import random

    pool = corpus(word_pool)
    assert set(pool.seen).isdisjoint(pool.unseen) and len(pool.unseen) > 1000
    seen, unseen = set(pool.seen), set(pool.unseen)
    rng = random.Random(0)
    sentences = [random_sentence(rng) for _ in range(500)]
    for sentence in sentences:  # contractions add train words ("s", "t", ...): no letter run is an unseen word
        drawn = re.findall("[a-z0-9']+", sentence.lower())  # one per word drawn, however it is joined or typed
        assert 1 <= len(drawn) <= 10 and _letter_runs(sentence) <= seen
    text = "".join(sentences)
    # what people type is in the training stream: apostrophes, hyphens, digits, any mark mid-sentence
    assert all(mark in text for mark in ["'", "-", "--", "! ", "? ", ". "]) and re.search("[0-9]", text)
    assert {s[-1] for s in sentences} >= {",", ";", ":", "!", "?", "."}  # a line may end on any mark
    for source, target in examples("pig_latin", "unseen", 100):
        assert _letter_runs(source) & unseen
        assert target == pig_latin(source)


def test_play_lines_are_the_spoken_lines_of_the_test_plays_the_model_takes(monkeypatch):
    play = ("HAMLET\n\nACT I.\n\nScene I. Elsinore.\n\n[Enter Bernardo\nand Francisco,\nwith torches.]\n\nBer.\n"
            "Who's there?\nNay, answer me: stand--and unfold yourself.\n[Aside.] Not this one.\nLong live the king!\n"
            "Long live the king!\nA line too long to take, of eleven words, all of them.\nSCENE 2\nO, [brackets] no.\n"
            "Under the 2 moons & stars.\n")
    works = {"test": {"hamlet": play}, "train": {"other": "Ber.\nTrain text stays out."}}
    monkeypatch.setattr(data, "shakespeare_works", lambda split: works[split])
    assert play_lines("test") == ["Who's there?", "Nay, answer me: stand--and unfold yourself.", "Long live the king!"]


def test_warm_start_copies_every_weight_and_the_rows_of_the_tokens_both_vocabularies_hold(tmp_path):
    torch.manual_seed(0)
    old, old_codec = build_model(get_task("copy"), "tiny", max_len=160)  # digits only
    save_checkpoint(old, tmp_path / "old", old_codec.tokenizer)
    new, codec = build_model(get_task("pig_latin"), "tiny")
    fresh = {k: v.clone() for k, v in new.state_dict().items()}
    assert set(warm_start(new, codec, tmp_path / "old")) == set(get_task("pig_latin").symbols) - set(SYMBOLS)
    state, old_state = new.state_dict(), old.state_dict()
    assert all(torch.equal(state[k], v) for k, v in old_state.items() if k not in PER_TOKEN)
    for token in ["7", "</s>", "<s>", "a", "'"]:  # shared tokens keep their old rows (ids differ), new ones their own
        new_id, old_id = codec.tokenizer.token_to_id(token), old_codec.tokenizer.token_to_id(token)
        expected = fresh if old_id is None else old_state
        row = new_id if old_id is None else old_id
        assert all(torch.equal(state[k][new_id], expected[k][row]) for k in PER_TOKEN)
    with pytest.raises(CheckpointError, match="choose its --preset"):
        warm_start(build_model(get_task("pig_latin"), "small")[0], codec, tmp_path / "old")


def test_batches_follow_the_bos_eos_convention():
    codec = Codec(build_model(get_task("copy"), "tiny")[1].tokenizer)
    src, src_lengths, tgt_in, tgt_out = codec.batch([("12", "12"), ("3", "3")])
    assert src_lengths.tolist() == [3, 2]
    assert src[0].tolist() == [*codec.tokenizer.encode("12"), codec.eos] and src[1, 2] == codec.pad
    assert tgt_in[0].tolist() == [codec.bos, *codec.tokenizer.encode("12")]
    assert tgt_out[0].tolist() == [*codec.tokenizer.encode("12"), codec.eos]
    assert tgt_out[1, 2] == IGNORE  # padding carries no loss


def test_bad_sources_raise_clear_errors():
    model, codec = build_model(get_task("copy"), "tiny")
    with pytest.raises(DecodingError, match="empty"):
        translate(model, codec, "")
    with pytest.raises(DecodingError, match="'a'.*not in this model's vocabulary"):
        translate(model, codec, "12a")
    with pytest.raises(DecodingError, match="at most 31"):
        translate(model, codec, "1" * 40)


def test_greedy_equals_beam_width_1_and_batching_does_not_change_outputs():
    torch.manual_seed(1)
    model, codec = build_model(get_task("reverse"), "tiny")
    model.eval()
    sources = ["1", "982", "5550123", "0123456789"]
    src, src_lengths = codec.sources(sources)
    batched = greedy(model, src, src_lengths, codec.bos, codec.eos, max_new_tokens=12)
    for text, row in zip(sources, batched):
        one = codec.sources([text])[0]
        alone = greedy(model, one, torch.tensor([one.shape[1]]), codec.bos, codec.eos, max_new_tokens=12)[0]
        searched = beam(model, one, codec.bos, codec.eos, width=1, max_new_tokens=12).best.tokens
        assert row == alone == [t for t in searched if t != codec.eos]


def test_a_short_training_run_on_copy_reaches_90_percent_exact_match():
    task = get_task("copy")
    model, codec = build_model(task, "tiny")
    # CPU seconds, not wall seconds: on a shared machine the wall clock measures the neighbours
    t0 = time.process_time()
    fit(model, codec, task, TrainConfig(steps=150, lr=3e-3, min_lr=3e-4, warmup=40, eval_every=150, eval_batches=1),
        batch_size=64, progress=False)
    assert time.process_time() - t0 < 30
    assert exact_match(model, codec, examples(task, "test", 200)) >= 0.9


def test_shipped_copy_model_reads_the_diagonal():
    """Source = x_0..x_{n-1} </s> (positions 0..n); the decoder reads <s> x_0..x_{n-1} and at target
    position i writes x_i (i < n) or </s> (i = n): so target position i should attend to source
    position i, for every i = 0..n. Checked on the head average of the first decoder layer, the one
    that fetches the symbol (the second layer's cross-attention does other work)."""
    model, codec = store.model("translate-copy"), Codec(store.tokenizer("translate-copy"))
    on_diagonal = total = 0
    for source, _ in examples("copy", "test", 50):
        _, trace = traced(model, codec, source, translate(model, codec, source).ids)
        attn = trace.attention("cross")[0, 0].mean(0)  # (T, S), T == S == n + 1
        on_diagonal += int((attn.argmax(-1) == torch.arange(attn.shape[0])).sum())
        total += attn.shape[0]
    assert on_diagonal / total >= 0.95


@pytest.mark.parametrize("task, source, target", [("copy", "3 1 4 1 5", "31415"), ("reverse", "123456", "654321"),
                                                  ("sort", "5281933", "1233589"),
                                                  ("pig_latin", "She pet the dog.", "Eshay etpay ethay ogday."),
                                                  ("pig_latin", "I didn't see the 2 sea-horses!",  # typed as people do
                                                   "Iway idnday'tay eesay ethay 2 easay-orseshay!")])
def test_tab_translates_with_the_shipped_models(task, source, target):
    output, notice, table, figure, _ = figures(tab.translate(task, source, 1, "cross-attention", 1, "mean of heads"))
    rows = table.values.tolist()
    assert output == target and notice == ""
    assert [r[1] for r in rows][-1] == "⟨/s⟩" and all(0 <= r[2] <= 1 for r in rows)
    assert len(figure.data[0].z) == len(target) + 1  # one row per written token, </s> included


def test_tab_beam_search_and_bad_input():
    output, *_ , tree = figures(tab.translate("reverse", "9876", 4, "encoder self-attention", 0, "head 0"))
    assert output == "6789" and len(tree.data) > 1
    with pytest.raises(gr.Error, match="'x'"):
        tab.translate("copy", "12x", 1, "cross-attention", 0, "mean of heads")
    output, notice, *_ = figures(tab.translate("copy", "1" * 50, 1, "cross-attention", 0, "mean of heads"))
    assert "reads at most 31" in notice and len(output) <= 31  # over-long input is cut, with a notice
    with pytest.raises(gr.Error, match="Type a source"):
        tab.translate("pig_latin", "   ", 1, "cross-attention", 0, "mean of heads")


def _hold(slot: LiveTraining):
    """Take the training slot as a running job would, until the returned release is called."""
    assert slot._lock.acquire(blocking=False)
    return slot._lock.release


def test_live_training_refuses_a_second_concurrent_run():
    slot = LiveTraining()
    release = _hold(slot)
    assert slot.busy
    with pytest.raises(InputError, match="Another live training"):
        next(slot.run("copy", "tiny", 30, 10))
    release()
    assert not slot.busy


def test_live_training_stops_once_it_reaches_the_goal_and_runs_in_its_own_process(monkeypatch):
    threads = torch.get_num_threads()
    *_, last = LiveTraining().run("copy", "small", 1000, 120)
    assert last.reached_goal and last.checks[-1][1] >= 0.99
    assert last.losses[-1][0] < 1000  # stopped early, at a goal check
    assert last.losses[-1][0] % 50 == 0
    assert torch.get_num_threads() == threads  # the server's thread count was never touched
    assert exact_match(last.model, last.codec, examples("copy", "test", 100, seed=3)) >= 0.95


def test_live_training_in_the_tab_says_busy_and_never_touches_shipped_checkpoints(monkeypatch):
    slot = LiveTraining()
    monkeypatch.setattr(tab, "_live", slot)
    release = _hold(slot)
    with pytest.raises(gr.Error, match="Another live training"):
        tab.live_busy()
    with pytest.raises(gr.Error, match="Another live training"):
        next(tab.train_live("copy", "tiny", 50, 10, "123", "cross-attention", 0, "mean of heads"))
    release()

    before = {p: p.stat().st_mtime_ns for p in (ASSETS / "translate-copy").iterdir()}
    *_, last = tab.train_live("copy", "tiny", 50, 120, "123", "cross-attention", 0, "mean of heads",
                              progress=lambda *a, **k: None)
    status, curve, output, figure, fresh = last
    assert status.startswith("Done: ") and len(curve.data[0].x) >= 1
    assert tab.translate_fresh(fresh, "copy", "4 5", "cross-attention", 0, "mean of heads")[1] is not None
    assert {p: p.stat().st_mtime_ns for p in (ASSETS / "translate-copy").iterdir()} == before
