"""The Translate tab's use case: a translation re-read in one traced pass."""

import numpy as np
import pytest

from lab import live, policy, translate


def test_translation_use_case_drops_spaces_a_digit_model_cannot_read_and_cuts_long_sources():
    run = translate.translation("reverse", "1 2 3 4 5")
    assert run.output == "54321" and run.attn["cross"].shape[-1] == 6  # 5 digits + </s>
    assert run.layer(translate.AUTO_LAYER) == run.sharpest_layer()
    long = translate.translation("copy", "1" * 40)
    assert "reads at most 31" in long.notice


@pytest.mark.parametrize("task, source, target", [
    ("copy", "3 1 4 1 5", "31415"), ("reverse", "123456", "654321"), ("sort", "52819330", "01233589"),
    ("pig_latin", "She pet the dog.", "Eshay etpay ethay ogday.")])
def test_each_task_translates_and_keeps_what_each_token_was_written_from(task, source, target):
    run = translate.translation(task, source)
    assert run.output == target and run.task == task and run.notice == ""
    assert run.written[-1] == run.codec.eos and run.codec.text(run.written[:-1]) == target
    np.testing.assert_array_equal(run.probs.argmax(-1), run.written)  # greedy: each token the most likely
    np.testing.assert_allclose(run.probs.sum(-1), 1, rtol=1e-5)
    assert run.attn["cross"].shape[2:] == (len(run.labels["reads"]), len(run.labels["source"]))
    assert run.labels["writes"][-1] == "⟨/s⟩" and run.labels["reads"][0] == "⟨s⟩"


def test_translation_beam_width_is_clamped_with_a_notice_and_bad_tasks_and_sources_are_refused():
    run = translate.translation("reverse", "9876", 99)
    assert run.output == "6789" and run.beam is not None and "Beam width can be 1 to 8; used 8." in run.notice
    assert translate.translation("reverse", "9876", 1).beam is None
    with pytest.raises(policy.InputError, match="Task must be one of"):
        translate.translation("rot13", "abc")
    with pytest.raises(policy.InputError, match="Type a source"):
        translate.translation("pig_latin", "   ")


def test_length_generalisation_scores_both_position_kinds_on_each_length(monkeypatch):
    monkeypatch.setattr(translate, "LENGTHS", range(9, 13))
    curves, longest = translate.length_generalisation(0)  # clamped to 1 source per length
    assert longest == 10 and set(curves) == set(translate.POSITION_MODELS)
    for scores in curves.values():
        assert list(scores) == [9, 10, 11, 12] and all(s in (0.0, 1.0) for s in scores.values())
    assert curves["learned positions"][9] == 1.0  # inside the training lengths the copy model is right


@pytest.mark.parametrize("task, text, says", [
    ("pig_latin", "这只动物没有过马路", "Latin letters"), ("copy", "这只动物", "digits 0-9"),
    ("sort", "abc", r"digits 0-9 \(for English words, pick Pig Latin\)")])  # a sentence typed under a digits task
def test_a_source_outside_the_tasks_alphabet_says_in_one_line_what_the_task_takes(task, text, says):
    with pytest.raises(policy.InputError, match=says) as refused:
        translate.translation(task, text)
    assert "\n" not in str(refused.value)


class _Slot:
    """A stand-in for the training slot: it reports two moments of a run, then hands back a shipped model."""

    def __init__(self):
        self.asked = None

    def run(self, task, size, steps, seconds):
        self.asked = (task, size, steps, seconds)
        yield live.Progress(losses=[(10, 2.0)], seconds=30.0)
        yield live.Progress(losses=[(10, 2.0), (steps, 0.1)], checks=[(steps, 0.5)], seconds=40.0)
        model, codec = translate._load("translate-copy")
        yield live.Progress(losses=[(steps, 0.1)], seconds=41.0, model=model, codec=codec)


def test_a_live_run_clamps_its_steps_and_time_reports_how_far_it_is_and_ends_with_its_translation():
    slot = _Slot()
    *training, done = translate.train_live(slot, "copy", "tiny", 10**6, 1, "1 2 3")
    assert slot.asked == ("copy", "tiny", live.STEPS[1], live.SECONDS[0])  # into the slot's limits, quietly
    assert [t.done for t in training] == [1.0, 1.0] and training[0].step == 10 and training[0].last_check is None
    assert training[1].last_check == 0.5
    assert done.run.output == "123" and 0 <= done.accuracy <= 1 and done.step == live.STEPS[1]
    first = translate.LiveRun(live.Progress(losses=[(300, 1.0)], seconds=12.0), 3000, 60.0)
    assert first.done == pytest.approx(0.2)  # the time (12 of 60 s) is further along than the steps (300 of 3000)
    with pytest.raises(policy.InputError, match="Model size must be one of"):
        next(translate.train_live(slot, "copy", "huge", 100, 60, "1"))


def test_a_live_run_refuses_a_source_its_task_cannot_read_before_it_trains():
    slot = _Slot()
    for source in ("这部电影", "", "\u200b"):
        with pytest.raises(policy.InputError):
            next(translate.train_live(slot, "copy", "tiny", 100, 60, source))
    assert slot.asked is None  # refused before the class waits for a run


def test_a_translation_is_sliced_by_group_layer_and_head_and_says_what_it_moved():
    run = translate.translation("copy", "1 2 3")
    group, layer, head, moved = run.focus("encoder self-attention", 0, "head 99")
    assert (group, layer, head) == ("encoder", 0, run.attn["cross"].shape[1] - 1) and "head" in str(moved).lower()
    assert run.focus("cross-attention", translate.AUTO_LAYER, translate.HEADS[0])[1:3] == (run.sharpest_layer(), None)
    with pytest.raises(policy.InputError, match="cross-attention"):
        run.focus("sideways", 0, None)
