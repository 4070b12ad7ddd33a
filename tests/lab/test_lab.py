"""The use cases, without Gradio: one input policy, runs kept for re-slicing, caches that share one computation."""

import json
import multiprocessing
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import lab
from lab import concepts, live, policy, sentiment, tokens, translation
from lab.cache import ViewCache, clear_all

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """These models are tiny: on a busy 2-core machine two torch threads fighting made a small
    translation ~30x slower (5 s instead of 0.17 s). The use cases' results do not depend on it."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_no_use_case_imports_gradio():
    assert "gradio" not in {m.split(".")[0] for m in sys.modules if m.startswith("lab")}
    import importlib

    for name in ("attention", "concepts", "generation", "live", "masking", "sentiment", "tokens", "translation"):
        module = importlib.import_module(f"lab.{name}")
        assert not any(getattr(v, "__module__", "").startswith("gradio") for v in vars(module).values())


def test_every_lab_module_imports_in_a_fresh_interpreter_without_gradio():
    """The in-process check above cannot see Gradio that another test already imported: this one starts clean."""
    script = (
        "import importlib, json, pkgutil, sys\n"
        "import lab\n"
        "names = sorted(m.name for m in pkgutil.iter_modules(lab.__path__))\n"
        "for name in names:\n"
        "    importlib.import_module('lab.' + name)\n"
        "print(json.dumps({'modules': names, 'ui': sorted(m for m in sys.modules if m.split('.')[0] in "
        "('gradio', 'ui', 'views'))}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["modules"] == sorted(p.stem for p in (ROOT / "lab").glob("*.py") if p.stem != "__init__")
    assert found["ui"] == []  # neither Gradio nor the app's ui/ or views/ packages


def test_the_policy_cuts_and_clamps_with_notices_and_refuses_what_it_cannot_read():
    text, notice = policy.truncate("a" * 6000)
    assert len(text) == policy.MAX_CHARS and "6,000 characters" in notice
    notices = []
    assert policy.clamp(9, 0, 3, "Head", notices) == 3 and notices == ["Head can be 0 to 3; used 3."]
    assert policy.clamp("2", 0, 3, "Head") == 2
    with pytest.raises(policy.InputError, match="whole number"):
        policy.clamp("two", 0, 3, "Head")


def test_an_attention_run_is_computed_once_and_re_sliced(monkeypatch):
    run = lab.attention_run("shakespeare-lm", "To be, or not to be")
    calls = []
    monkeypatch.setattr(lab.attention, "_compute", lambda *a: calls.append(a))
    again = lab.attention_run("shakespeare-lm (language model)", "To be, or not to be")  # label or name
    assert again is run and calls == []
    notices = []
    layer, head, weights = run.head(99, -3, notices)
    assert (layer, head) == (run.shape[0] - 1, 0) and len(notices) == 2
    np.testing.assert_allclose(weights.sum(-1), 1, rtol=1e-5)


def test_concurrent_equal_requests_share_one_computation():
    cache, calls = ViewCache(size=4), []

    def slow():
        calls.append(1)
        time.sleep(0.2)
        return object()

    results = []
    threads = [threading.Thread(target=lambda: results.append(cache.get("k", slow))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len({id(r) for r in results}) == 1


def test_tokens_use_case_says_in_one_line_when_a_tokenizer_cannot_read_the_text():
    text, tokenized, _ = tokens.tokenize("Hello world")
    digits = [t for t in tokenized if "translate-copy" in t.label]
    assert digits and digits[0].problem and "cannot represent" in digits[0].problem
    assert any(t.spans and not t.problem for t in tokenized)


def test_sentiment_use_case_reads_the_same_text_the_same_way_and_links_to_its_attention():
    run = sentiment.classify("A moving, beautifully acted film.")
    assert set(run.probs) == {"negative", "positive"} and len(run.labels) == len(run.grad_x_input)
    assert "model=sentiment+%28classifier%29" in sentiment.attention_link(run)
    with pytest.raises(policy.InputError):
        sentiment.classify("   ")


def test_translation_use_case_drops_spaces_a_digit_model_cannot_read_and_cuts_long_sources():
    run = translation.translation("reverse", "1 2 3 4 5")
    assert run.output == "54321" and run.attn["cross"].shape[-1] == 6  # 5 digits + </s>
    assert run.layer(translation.AUTO_LAYER) == run.sharpest_layer()
    long = translation.translation("copy", "1" * 40)
    assert "reads at most 31" in long.notice


def test_concepts_use_case_checks_numbers_before_computing():
    with pytest.raises(policy.InputError, match="d must be a number"):
        concepts.scaling(float("nan"), 16, 0)
    points, chosen = concepts.scaling(64, 16, 0)
    assert chosen.d == 64 and len(points) > 1


# ---------------------------------------------------------------- policy


def test_the_policy_repairs_lone_surrogates_and_says_how_many():
    text, notice = policy.truncate("a\ud800b\udfffc")
    assert text == "a\ufffdb\ufffdc" and text.encode("utf-8")  # encodable now
    assert "2 lone surrogate(s)" in notice
    assert policy.truncate("clean text") == ("clean text", "")
    text, notice = policy.truncate("\ud800" + "x" * 5000)  # repaired and cut: both said
    assert len(text) == policy.MAX_CHARS and "1 lone surrogate(s)" in notice and "5,001 characters" in notice
    run = lab.attention_run("shakespeare-lm", "Hi \udc80 there")  # a use case reads the repaired text
    assert "1 lone surrogate(s)" in run.notice
    assert run.q_labels == [t.text for t in lab.store.tokenizer("shakespeare-lm").tokens("Hi \ufffd there")]


def test_the_policy_clamps_every_kind_of_number_and_says_what_it_used():
    notices = []
    assert policy.clamp(None, 1, 9, "Width", notices) == 1
    assert policy.clamp("", 1, 9, "Width", notices) == 1
    assert policy.clamp(float("inf"), 1, 9, "Width", notices) == 9
    assert policy.clamp(-float("inf"), 1, 9, "Width", notices) == 1
    assert policy.clamp(2.6, 1, 9, "Width", notices) == 3  # a fraction is rounded, and that is said too
    assert notices == ["Width was empty; used 1.", "Width was empty; used 1.", "Width can be 1 to 9; used 9.",
                       "Width can be 1 to 9; used 1.", "Width can be 1 to 9; used 3."]
    quiet = []
    assert policy.clamp("4", 1, 9, "Width", quiet) == 4 and policy.clamp(5.0, 1, 9, "Width", quiet) == 5
    assert quiet == []  # nothing changed, nothing said
    with pytest.raises(policy.InputError, match="Width must be a whole number from 1 to 9"):
        policy.clamp(float("nan"), 1, 9, "Width")


def test_the_policy_keeps_the_first_or_last_tokens_and_refuses_text_the_tokenizer_cannot_represent():
    bpe = lab.store.tokenizer("shakespeare-lm")
    ids = bpe.encode("one two three four five six")
    first, last = (policy.fit_tokens(bpe, "one two three four five six", 3, keep=k) for k in ("first", "last"))
    assert first.ids == ids[:3] and "the first 3 are used" in first.notice
    assert last.ids == ids[-3:] and "the last 3 are used" in last.notice
    assert last.labels == [bpe.decode([i]) for i in ids[-3:]]
    assert policy.fit_tokens(bpe, "one two", 3).notice == ""
    with pytest.raises(policy.InputError, match="type at least 2"):
        policy.fit_tokens(bpe, "one", 5, min_tokens=2)
    digits = lab.store.tokenizer("translate-copy")  # an alphabet of digits
    with pytest.raises(policy.InputError, match="cannot represent any of this text"):
        policy.fit_tokens(digits, "hello", 10)
    assert policy.fit_tokens(digits, "h3llo", 10).ids  # one known token is enough to draw


# ---------------------------------------------------------------- store


@pytest.fixture
def no_hub(monkeypatch):
    """Every way the store could reach the Hugging Face Hub, recorded instead of taken."""
    import huggingface_hub

    from transformer_core.weights import hub

    asked = []

    def offline(what):
        def ask(*args, **kwargs):
            asked.append((what, args, kwargs))
            raise huggingface_hub.errors.LocalEntryNotFoundError("offline, and not in the local cache")
        return ask

    monkeypatch.setattr(hub, "snapshot_download", offline("snapshot"))
    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline("snapshot"))
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", offline("file"))
    monkeypatch.setattr(lab.store, "hub_reachable", lambda timeout=3.0: asked.append(("reachable",)) or False)
    return asked


@pytest.mark.parametrize("name", ["no-such-model", "assets/sentiment", "./sentiment-copy", "../elsewhere/sentiment",
                                  "models/lm"])
def test_the_store_names_the_folder_it_looked_in_and_never_asks_the_hub(no_hub, name):
    looked_in = str(lab.store.model_dir() / name)
    for load in (lab.store.load, lab.store.model):
        with pytest.raises(lab.store.CheckpointError) as error:
            load(name)
        assert looked_in in str(error.value)
    with pytest.raises(lab.store.CheckpointError, match="config.json"):
        lab.store.config(name)
    with pytest.raises(policy.InputError, match="pick one from the list"):  # a use case says it in its words
        lab.attention_run(name, "To be")
    assert no_hub == []


def test_the_store_loads_each_checkpoint_once_and_says_what_a_half_written_one_lacks(tmp_path, no_hub):
    import random_models

    from transformer_core import save_checkpoint

    save_checkpoint(random_models.lm(), tmp_path / "no-tokenizer")  # weights and config, no tokenizer.json
    (tmp_path / "no-weights").mkdir()
    (tmp_path / "no-weights" / "config.json").write_text(json.dumps({"arch": "DecoderLM"}))
    lab.store.set_model_dir(tmp_path)
    try:
        assert lab.store.checkpoints() == {"no-tokenizer (language model)": "no-tokenizer",
                                           "no-weights (language model)": "no-weights"}
        with pytest.raises(lab.store.CheckpointError, match="tokenizer.json"):
            lab.store.load("no-tokenizer")  # a TokenizerError, reported as the checkpoint's problem
        assert lab.store.model("no-tokenizer") is lab.store.model("no-tokenizer")  # loaded once, shared
        with pytest.raises(lab.store.CheckpointError, match="model.safetensors"):
            lab.store.model("no-weights")
    finally:
        lab.store.set_model_dir(lab.store.DEFAULT_MODEL_DIR)
    assert no_hub == []
    assert "shakespeare-lm" in lab.store.checkpoints().values()
    assert "cheat-causal" not in lab.store.checkpoints().values()  # the masking lesson's broken models, unless asked
    assert "cheat-causal" in lab.store.checkpoints(include_cheats=True).values()



def test_gpt2_unreachable_is_said_and_generation_falls_back_to_the_shipped_model(no_hub, monkeypatch):
    from lab import generation

    monkeypatch.setattr(lab.store, "_gpt2_loaded", None)
    with pytest.raises(lab.store.CheckpointError, match="needs the Hugging Face Hub or a copy in the local"):
        lab.store.gpt2()
    assert no_hub[0] == ("reachable",) and no_hub[1][2]["local_files_only"]  # offline: only the local cache asked
    model, tokenizer, notice = generation.load(generation.GPT2)
    assert model is lab.store.model("shakespeare-lm") and "Using the shipped Shakespeare model" in notice
    with pytest.raises(policy.InputError, match="needs the Hugging Face Hub"):
        lab.attention_run(lab.attention.GPT2_LABEL, "Hello")
    with pytest.raises(policy.InputError, match="Unknown model 'gpt3'"):
        generation.load("gpt3")


# ---------------------------------------------------------------- cache


def test_an_exception_reaches_every_waiter_and_is_not_kept():
    cache, calls, started = ViewCache(size=4), [], threading.Event()

    def failing():
        calls.append(1)
        started.set()
        time.sleep(0.3)
        raise ValueError("the model ran out of memory")

    outcomes = []

    def ask():
        try:
            outcomes.append(cache.get("k", failing))
        except ValueError as e:
            outcomes.append(e)

    first = threading.Thread(target=ask)
    first.start()
    started.wait(5)
    waiters = [threading.Thread(target=ask) for _ in range(5)]
    for t in waiters:
        t.start()
    for t in [first, *waiters]:
        t.join(10)
    assert len(calls) == 1 and len(outcomes) == 6
    assert all(isinstance(o, ValueError) and "out of memory" in str(o) for o in outcomes)
    assert cache.get("k", lambda: "fine now") == "fine now"  # the failure was not kept: the next call computes
    assert cache.get("k", lambda: "not asked") == "fine now"


def test_the_cache_keeps_the_most_recently_used_results_up_to_its_size():
    cache, calls = ViewCache(size=2), []

    def compute(key):
        return lambda: calls.append(key) or key.upper()

    assert cache.get("a", compute("a")) == "A" and cache.get("b", compute("b")) == "B"
    assert cache.get("a", compute("a")) == "A"  # a hit: "a" is now the most recent
    assert cache.get("c", compute("c")) == "C"  # over the size: "b", the least recent, goes
    assert calls == ["a", "b", "c"]
    assert cache.get("a", compute("a")) == "A" and calls == ["a", "b", "c"]
    assert cache.get("b", compute("b")) == "B" and calls == ["a", "b", "c", "b"]
    assert (cache.hits, cache.misses) == (2, 4)
    cache.clear()
    cache.get("a", compute("a"))
    assert calls[-1] == "a"


def test_a_stream_is_shared_with_late_comers_and_a_closed_stream_answers_its_waiters():
    cache, calls = ViewCache(size=4), []

    def produce():
        calls.append(1)
        for i in range(3):
            time.sleep(0.1)
            yield [i]

    first = cache.stream("k", produce, keep=list)
    assert next(first) == [0]
    late = []
    waiter = threading.Thread(target=lambda: late.extend(cache.stream("k", produce, keep=list)))
    waiter.start()
    assert list(first) == [[1], [2]]
    waiter.join(5)
    assert late == [[2]] and len(calls) == 1  # only the end, from the one run

    stopped = cache.stream("s", produce)
    next(stopped)
    answers = []
    waiter = threading.Thread(target=lambda: answers.append(list(cache.stream("s", produce))))
    hits = cache.hits
    waiter.start()
    deadline = time.monotonic() + 5
    while cache.hits == hits and time.monotonic() < deadline:  # until the waiter waits on the running stream
        time.sleep(0.01)
    stopped.close()  # the person closed the page mid-stream
    waiter.join(5)
    assert not waiter.is_alive() and answers == [[[0], [1], [2]]]  # the waiter took over instead of hanging


# ---------------------------------------------------------------- attention


def test_attention_labels_are_the_tokens_and_each_model_attends_as_its_kind_allows():
    text = "The acting was wonderful."
    lm = lab.attention_run("shakespeare-lm", text)
    assert lm.q_labels == lm.k_labels == [t.text for t in lab.store.tokenizer("shakespeare-lm").tokens(text)]
    n = len(lm.q_labels)
    assert lm.group == "decoder" and lm.shape[2:] == (n, n) and lm.notice == ""
    future = np.triu(np.ones((n, n), dtype=bool), 1)
    assert np.all(lm.attn[..., future] == 0)  # a language model never reads ahead
    np.testing.assert_allclose(lm.attn.sum(-1), 1, rtol=1e-5)
    np.testing.assert_allclose(lm.rollout.sum(-1), 1, rtol=1e-5)

    classifier = lab.attention_run("sentiment (classifier)", text)
    assert classifier.group == "encoder" and classifier.q_labels == [
        t.text for t in lab.store.tokenizer("sentiment").tokens(text)]
    assert classifier.attn[..., np.triu(np.ones(classifier.shape[2:], dtype=bool), 1)].max() > 0.01  # both ways

    fallback = lab.attention_run("shakespeare-lm", text, "cross")
    assert "has no cross-attention" in fallback.notice and fallback.group == "decoder"
    np.testing.assert_array_equal(fallback.attn, lm.attn)
    with pytest.raises(policy.InputError, match="Type some text"):
        lab.attention_run("shakespeare-lm", "   ")



def test_every_offered_checkpoint_reads_its_own_example_text():
    offered = lab.attention.models()
    assert list(offered.values())[-1] == "gpt2" and len(offered) == len(lab.store.checkpoints()) + 1
    for label, name in list(offered.items())[:-1]:
        text = lab.attention.example_text(name)
        run = lab.attention_run(label, text)
        assert run.model == name and run.shape[2] > 1
        if lab.store.arch(name) == "EncoderDecoder":  # a translator gets a source of its own task
            assert run.notice.startswith("Translation: **")
            assert "".join(run.k_labels[:-1]).replace(" ", "") == text.replace(" ", "")
        else:
            assert run.notice == ""
    assert lab.attention.example_text("translate-copy-sinusoidal") == lab.attention.TRANSLATOR_EXAMPLES["copy"]
    assert lab.attention.example_text("translate-pig-latin") == lab.attention.TRANSLATOR_EXAMPLES["pig_latin"]


def test_attention_slices_clamp_the_query_and_leave_the_kept_run_alone(monkeypatch):
    run = lab.attention_run("shakespeare-lm", "To be, or not to be")
    n_layer, n_head, n = run.shape[:3]
    notices = []
    layer, head, weights = run.head(1, 2, notices)
    assert (layer, head) == (1, 2) and notices == []
    np.testing.assert_array_equal(weights, run.attn[1, 2])
    query, rows = run.query(999, notices)
    assert query == n - 1 and notices == [f"Query token can be 0 to {n - 1}; used {n - 1}."]
    np.testing.assert_array_equal(rows, run.attn[:, :, n - 1])
    with pytest.raises(policy.InputError, match="Layer must be a whole number"):
        run.head("top", 0)

    # a request whose text is cut shares the kept run, and its notice does not stick to that run
    monkeypatch.setattr(lab.attention, "MAX_DRAWN_TOKENS", 8)  # keeps the 5,000-character run small
    long = lab.attention_run("shakespeare-lm", "ab " * 2000 + "tail")
    assert "6,004 characters" in long.notice and "the first" in long.notice
    calls = []
    monkeypatch.setattr(lab.attention, "_compute", lambda *a: calls.append(a))
    exact = lab.attention_run("shakespeare-lm", ("ab " * 2000)[: policy.MAX_CHARS])  # what the long one read
    assert calls == [] and exact.attn is long.attn
    assert "characters" not in exact.notice  # only the kept run's own token notice


def test_translation_and_attention_read_a_spaced_digit_source_the_same_way():
    spaced = "1 2 3 4 5 6 7 8 9"
    run = translation.translation("reverse", spaced)
    assert (run.source, run.output, run.notice) == ("123456789", "987654321", "")
    for group in ("encoder", "decoder", "cross"):
        drawn = lab.attention_run("translate-reverse", spaced, group)
        np.testing.assert_array_equal(drawn.attn, run.attn[group])  # one reading: the same weights
        assert "Translation: **987654321**" in drawn.notice
    cross = lab.attention_run("translate-reverse (translator)", spaced, "cross")
    assert cross.k_labels == [*"123456789", "</s>"] and cross.q_labels == ["<s>", *"987654321"]
    assert cross.rollout is None  # no rollout through cross-attention
    with pytest.raises(policy.InputError, match="'x'"):
        lab.attention_run("translate-reverse", "1 2 x")


def test_the_sharpest_layer_is_where_each_task_shows_its_lesson():
    copy = translation.translation("copy", "31415926")
    reverse = translation.translation("reverse", "31415926")
    assert (copy.output, reverse.output) == ("31415926", "62951413")
    # the shipped models put their lesson in different layers: the choice must follow the weights
    assert (copy.sharpest_layer(), reverse.sharpest_layer()) == (0, 1)
    n = len(copy.source)
    diagonal = copy.attn["cross"][copy.sharpest_layer()].mean(0)[:n, :n].argmax(-1)
    anti = reverse.attn["cross"][reverse.sharpest_layer()].mean(0)[:n, :n].argmax(-1)
    np.testing.assert_array_equal(diagonal, np.arange(n))
    np.testing.assert_array_equal(anti, np.arange(n)[::-1])
    for auto in (translation.AUTO_LAYER, "-1", " -1 "):
        assert reverse.layer(auto) == 1
    notices = []
    assert reverse.layer(5, notices) == 1 and notices == ["Layer can be 0 to 1; used 1."]
    assert reverse.layer("0") == 0


# ---------------------------------------------------------------- translation


@pytest.mark.parametrize("task, source, target", [
    ("copy", "3 1 4 1 5", "31415"), ("reverse", "123456", "654321"), ("sort", "52819330", "01233589"),
    ("pig_latin", "She pet the dog.", "Eshay etpay ethay ogday.")])
def test_each_task_translates_and_keeps_what_each_token_was_written_from(task, source, target):
    run = translation.translation(task, source)
    assert run.output == target and run.task == task and run.notice == ""
    assert run.written[-1] == run.codec.eos and run.codec.text(run.written[:-1]) == target
    np.testing.assert_array_equal(run.probs.argmax(-1), run.written)  # greedy: each token the most likely
    np.testing.assert_allclose(run.probs.sum(-1), 1, rtol=1e-5)
    assert run.attn["cross"].shape[2:] == (len(run.labels["reads"]), len(run.labels["source"]))
    assert run.labels["writes"][-1] == "⟨/s⟩" and run.labels["reads"][0] == "⟨s⟩"


def test_translation_beam_width_is_clamped_with_a_notice_and_bad_tasks_and_sources_are_refused():
    run = translation.translation("reverse", "9876", 99)
    assert run.output == "6789" and run.beam is not None and "Beam width can be 1 to 8; used 8." in run.notice
    assert translation.translation("reverse", "9876", 1).beam is None
    with pytest.raises(policy.InputError, match="Task must be one of"):
        translation.translation("rot13", "abc")
    with pytest.raises(policy.InputError, match="Type a source"):
        translation.translation("pig_latin", "   ")


def test_length_generalisation_scores_both_position_kinds_on_each_length(monkeypatch):
    monkeypatch.setattr(translation, "LENGTHS", range(9, 13))
    curves, longest = translation.length_generalisation(0)  # clamped to 1 source per length
    assert longest == 10 and set(curves) == set(translation.POSITION_MODELS)
    for scores in curves.values():
        assert list(scores) == [9, 10, 11, 12] and all(s in (0.0, 1.0) for s in scores.values())
    assert curves["learned positions"][9] == 1.0  # inside the training lengths the copy model is right


# ---------------------------------------------------------------- masking

TEXT = "To be, or not to be, that is the question"


def test_a_window_wider_than_the_text_is_narrowed_with_a_notice_everywhere_it_is_drawn():
    n = len(lab.store.tokenizer(lab.masking.LM).encode("To be or"))
    run = lab.masking_run("To be or", "To", "dilated_window", 16, 16, "0", True)
    assert f"Window width can be 1 to {n - 1}; used {n - 1}." in run.notice
    assert f"Dilation can be 1 to {n - 1}; used {n - 1}." in run.notice
    assert run.runs == ["causal (as trained)", f"dilated window w={n - 1}, dilation={n - 1}, causal"]
    titles = [title for title, _ in run.gallery]
    assert f"sliding window w={n - 1}" in titles and f"dilated window w={n - 1}, d={n - 1}" in titles
    quiet = lab.masking_run(TEXT, "To be", "sliding_window", 3, 2, "0", True)
    assert quiet.notice == ""  # in range: nothing to say


@pytest.mark.parametrize("kind", lab.masking.EFFECT_KINDS)
def test_each_mask_hides_exactly_what_it_says_and_changes_the_reading_accordingly(kind):
    from transformer_core import build_mask

    run = lab.masking_run(TEXT, "To be", kind, 2, 2, "0", True)
    n = len(run.labels)
    trained, chosen = run.runs
    allowed = build_mask(kind, n, w=2, dilation=2, global_tokens=[0], causal=True).allowed.numpy()
    assert np.all(run.attn[chosen][..., ~allowed] == 0)  # nothing where the mask hides
    np.testing.assert_allclose(run.attn[chosen].sum(-1), 1, rtol=1e-5)
    assert run.losses[chosen].shape == (n - 1,) and run.top_probs[chosen].shape == (n, lab.masking.TOP_K)
    if kind == "causal":  # the mask it was trained with: the very same reading
        np.testing.assert_array_equal(run.attn[chosen], run.attn[trained])
        np.testing.assert_array_equal(run.losses[chosen], run.losses[trained])
    else:
        assert not np.allclose(run.losses[chosen], run.losses[trained])
    if kind == "none":  # the only one of these that lets a token read ahead
        assert run.attn[chosen][..., np.triu(np.ones((n, n), dtype=bool), 1)].max() > 0.01


def test_the_gallery_and_bad_mask_settings():
    run = lab.masking_run(TEXT, "To be", "causal", 3, 2, "0, 4", False)
    n, n_b = len(run.labels), len(run.labels_b)
    masks = dict(run.gallery)
    assert len(run.gallery) == 7 and masks["padding"].allowed.shape == (2, n, n)
    assert masks["padding"].allowed[1, :, n_b:].sum() == 0  # the second text's padding is never read
    assert masks["global [0, 4] + window w=3"].allowed[:, 4].all()  # everyone reads a global token
    with pytest.raises(policy.InputError, match="Mask must be one of"):
        lab.masking_run(TEXT, "To be", "diagonal", 3, 2, "0", True)
    with pytest.raises(policy.InputError, match="positions like"):
        lab.masking_run(TEXT, "To be", "global_window", 3, 2, "zero", True)
    for empty in ("", None):
        with pytest.raises(policy.InputError, match="second text of the padding batch is empty"):
            lab.masking_run(TEXT, empty, "causal", 3, 2, "0", True)


def test_the_cheating_demo_shows_a_copier_that_cannot_predict():
    results, histories, notice = lab.cheating("To be, or not to be, that is", 0)
    assert notice == "New tokens can be 1 to 60; used 1."
    honest, copier = results
    assert (honest.title, copier.title) == tuple(lab.masking.CHEATERS)
    assert set(histories) == set(lab.masking.CHEATERS) and copier.final_train_loss == histories[copier.title][-1][
        "train_loss"]
    # trained with no mask it "learned" by reading the answer: tiny training loss, hopeless honest loss
    assert copier.final_train_loss < honest.final_train_loss and copier.honest_loss > honest.honest_loss
    assert all(len(r.continuation) > 0 for r in results)


# ---------------------------------------------------------------- generation


@pytest.fixture
def shipped_lm():
    from lab import generation

    model, tokenizer, notice = generation.load(generation.SHIPPED)
    assert notice == ""
    return generation, model, tokenizer


def ask(generation, tokenizer, prompt="ROMEO:", mode="sample", max_new=6, seed=7, top_k=0, width=4, **knobs):
    """check() with the knobs this file varies; the rest at ordinary values."""
    knobs = {"temperature": 0.9, "top_p": 0.95, "min_p": 0.0, "repetition_penalty": 1.0, **knobs}
    return generation.check(generation.SHIPPED, tokenizer, lab.store.model("shakespeare-lm").config.max_len, prompt,
                            mode, knobs["temperature"], top_k, knobs["top_p"], knobs["min_p"],
                            knobs["repetition_penalty"], max_new, seed, width=width)


def test_generation_check_clamps_every_knob_and_says_so(shipped_lm):
    generation, model, tokenizer = shipped_lm
    request = ask(generation, tokenizer, max_new=500, seed=2**40, top_k=-3, width=99)
    assert (request.max_new_tokens, request.width, request.config.top_k, request.config.seed) == (
        200, 8, 0, 2**32 - 1)
    assert request.notices == ("New tokens can be 1 to 200; used 200.", "Beam width can be 1 to 8; used 8.",
                               "Top-k can be 0 to 1000000; used 0.", "Seed can be 0 to 4294967295; used 4294967295.")
    beam = ask(generation, tokenizer, mode="beam", max_new=500)
    assert beam.max_new_tokens == 40 and "New tokens (beam search) can be 1 to 40; used 40." in beam.notices
    long = ask(generation, tokenizer, prompt="word " * 400, mode="beam", max_new=40)
    room = model.config.max_len - 40  # beam search keeps prompt and new tokens in the context
    assert len(long.prompt_ids) == room and long.prompt_ids == tuple(tokenizer.encode("word " * 400)[-room:])
    assert f"only its last {room} tokens are used" in long.notices[-1]
    empty = ask(generation, tokenizer, prompt="", mode="greedy", temperature=5)
    assert empty.prompt_text == "\n" and empty.config.temperature == 0.0 and empty.notices == (
        "The prompt is empty, so the text starts from a new line.",)
    for bad, message in (({"mode": "nucleus"}, "Decoding must be one of"), ({"top_p": 0.0}, "slider back"),
                         ({"temperature": "hot"}, "slider back")):
        with pytest.raises(policy.InputError, match=message):
            ask(generation, tokenizer, **bad)


def test_a_seeded_generation_equals_itself_and_concurrent_equal_requests_share_one_run(shipped_lm, monkeypatch):
    generation, model, tokenizer = shipped_lm
    request = ask(generation, tokenizer, max_new=8)
    streamed = list(generation.generation(model, tokenizer, request))
    assert len(streamed) == 8 and len(streamed[-1].ids) == len(request.prompt_ids) + 8
    clear_all()  # computed again, not served: the seed alone makes it the same text
    assert generation.sampled(model, tokenizer, request).ids == streamed[-1].ids
    assert generation.sampled(model, tokenizer, ask(generation, tokenizer, max_new=8, seed=8)).ids != streamed[-1].ids

    clear_all()
    calls, sample_steps = [], generation.sample_steps

    def slow_steps(*args):
        calls.append(1)
        for session in sample_steps(*args):
            time.sleep(0.05)  # long enough for every request to arrive while it runs
            yield session

    monkeypatch.setattr(generation, "sample_steps", slow_steps)
    results = []
    threads = [threading.Thread(target=lambda: results.append(generation.sampled(model, tokenizer, request)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(calls) == 1 and len(results) == 4
    assert all(r.ids == streamed[-1].ids for r in results)
    assert len({id(r) for r in results}) == 4  # each caller its own copy to extend


def test_step_continues_a_copy_of_the_session_and_ends_where_generation_ends(shipped_lm):
    generation, model, tokenizer = shipped_lm
    request = ask(generation, tokenizer, max_new=5, repetition_penalty=1.2)
    session, seen = None, []
    for _ in range(5):
        before = None if session is None else (list(session.ids), len(session.records), session.rng_state.clone())
        extended = generation.step(model, tokenizer, request, session)
        if session is not None:  # the caller's session is as it was
            assert (session.ids, len(session.records)) == before[:2] and session.rng_state.equal(before[2])
            assert extended.ids[:-1] == session.ids
        seen.append(extended)
        session = extended
    assert [len(s.records) for s in seen] == [1, 2, 3, 4, 5]
    assert session.ids == generation.sampled(model, tokenizer, request).ids  # the same random stream
    other = ask(generation, tokenizer, max_new=5, seed=99)
    restarted = generation.step(model, tokenizer, other, session)  # a changed setting starts over
    assert len(restarted.records) == 1 and restarted.ids[: restarted.n_prompt] == list(other.prompt_ids)


def test_beam_search_of_width_one_is_greedy_and_wider_beams_rank_their_hypotheses(shipped_lm):
    generation, model, tokenizer = shipped_lm
    greedy = generation.sampled(model, tokenizer, ask(generation, tokenizer, mode="greedy", max_new=6))
    one = generation.beam(model, ask(generation, tokenizer, mode="beam", max_new=6, width=1))
    assert one.best.tokens == greedy.ids[greedy.n_prompt:]
    wide = generation.beam(model, ask(generation, tokenizer, mode="beam", max_new=6, width=4))
    assert len(wide.steps) == 6 and 1 < len(wide.hypotheses) <= 4
    scores = [h.score for h in wide.hypotheses]
    assert scores == sorted(scores, reverse=True) and wide.best.logprob >= one.best.logprob - 1e-6


def test_attention_while_generating_keeps_one_row_per_new_token_of_the_greedy_text(shipped_lm):
    generation, model, tokenizer = shipped_lm
    run = lab.generation_run("shakespeare-lm", "ROMEO:", 99)
    assert "New tokens can be 1 to 40; used 40." in run.notice and len(run.rows) == 40
    assert [r.shape[-1] for r in run.rows] == [run.n_prompt + s for s in range(40)]
    greedy = generation.sampled(model, tokenizer, ask(generation, tokenizer, mode="greedy", max_new=40))
    assert run.continuation == tokenizer.decode(greedy.ids[greedy.n_prompt:])  # one greedy text, two use cases
    with pytest.raises(policy.InputError, match="needs a language model"):
        lab.generation_run("sentiment", "A fine film", 5)


# ---------------------------------------------------------------- sentiment

SPECIAL = {"[CLS]", "[SEP]"}


def strongest(run, sign: int, k: int = 3) -> set[str]:
    """The k word tokens (specials left out) pushing hardest toward positive (sign 1) or negative (-1)."""
    scored = [(sign * float(g), label.strip())
              for label, g in zip(run.labels, run.grad_x_input) if label not in SPECIAL]
    return {word for _, word in sorted(scored, reverse=True)[:k]}


@pytest.mark.parametrize("text, verdict, sign, words", [
    ("A dull, boring and badly written mess.", "negative", -1, {"dull", "boring", "badly", "mess"}),
    ("A wonderful, moving and beautifully acted film.", "positive", 1, {"wonderful", "moving", "beautifully"})])
def test_both_classifiers_give_a_verdict_and_the_tokens_that_drove_it(text, verdict, sign, words):
    runs = sentiment.compare(text)
    assert [r.model for r in runs] == ["sentiment", "sentiment-pretrained"]  # picker order
    for run in runs:
        assert max(run.probs, key=run.probs.get) == verdict and sum(run.probs.values()) == pytest.approx(1)
        assert run.labels == [t.text for t in lab.store.tokenizer(run.model).tokens(text)]
        assert len(run.grad_x_input) == len(run.rollout) == len(run.labels) == run.attn.shape[-1]
        assert strongest(run, sign) & words, (run.model, run.labels, run.grad_x_input)
        assert run.read_text == text and run.notice == ""
    assert sentiment.classify(text, "pre-trained + fine-tuned (22.6M)") is runs[1]  # label or name: one run
    assert "model=sentiment-pretrained+%28classifier%29" in sentiment.attention_link(runs[1])


def test_sentiment_says_what_it_cut_and_when_there_are_no_words():
    long = sentiment.classify(" ".join(["good"] * 300))
    assert "300 tokens; the model reads at most 128" in long.notice and len(long.labels) == 128
    assert long.read_text == " ".join(["good"] * 128)  # the part the link hands to the Attention tab
    emoji = sentiment.classify("👍🎉!!!", "sentiment-pretrained")
    assert "no letters or digits" in emoji.notice
    with pytest.raises(policy.InputError, match="No classifier 'sentiment-huge'"):
        sentiment.classify("fine", "sentiment-huge")


def test_only_installed_classifiers_are_offered_and_compared(tmp_path):
    (tmp_path / "sentiment").symlink_to(lab.store.DEFAULT_MODEL_DIR / "sentiment", target_is_directory=True)
    lab.store.set_model_dir(tmp_path)
    try:
        assert sentiment.classifiers() == {"trained from scratch (5.8M)": "sentiment"}
        (only,) = sentiment.compare("Not bad at all.")
        assert only.model == "sentiment"
        with pytest.raises(policy.InputError, match="No classifier"):
            sentiment.classify("Not bad at all.", "sentiment-pretrained")
        (tmp_path / "sentiment").unlink()
        with pytest.raises(policy.InputError, match="No sentiment classifier in"):
            sentiment.classify("Not bad at all.")
        assert sentiment.compare("Not bad at all.") == []
    finally:
        lab.store.set_model_dir(lab.store.DEFAULT_MODEL_DIR)


# ---------------------------------------------------------------- tokens


def test_every_tokenizer_gives_ids_character_spans_and_byte_spans():
    text = "Hi 😍 π!"
    data = text.encode("utf-8")
    char_at_byte = [i for i, c in enumerate(text) for _ in c.encode("utf-8")]  # byte offset -> its character
    read, views, notice = tokens.tokenize(text)
    assert (read, notice) == (text, "")
    files = {p.read_bytes() for p in lab.store.DEFAULT_MODEL_DIR.glob("*/tokenizer.json")}
    assert len(views) == len(files)  # models sharing a tokenizer file share one panel
    shared = next(v for v in views if "shakespeare-lm" in v.label)
    assert shared.label.startswith("cheat-causal, cheat-nomask, shakespeare-bpe, shakespeare-lm · byte-level BPE")
    for view in views:
        name = view.label.split(",")[0].split(" ·")[0]
        tokenizer = lab.store.tokenizer(name)
        assert [s.id for s in view.spans] == tokenizer.encode(text), view.label
        real = [s for s in view.spans if s.text not in SPECIAL]
        assert real[0].byte_start == 0 and real[-1].byte_end == len(data)
        assert all(a.byte_end == b.byte_start or b.byte_start == a.byte_end + 1  # a skipped space at most
                   for a, b in zip(real, real[1:])), view.label
        for s in real:  # each token's characters are the characters of its bytes
            assert (s.start, s.end) == (char_at_byte[s.byte_start], char_at_byte[s.byte_end - 1] + 1), (view.label, s)
    emoji = [s for s in shared.spans if s.start == 3]
    assert len(emoji) == 4 and [s.byte_end - s.byte_start for s in emoji] == [1, 1, 1, 1]  # 4 bytes, 1 character
    assert shared.spans[0].id == lab.store.tokenizer("shakespeare-lm").token_to_id("H")


def test_a_tokenizer_is_flagged_only_when_most_of_the_text_is_unknown_to_it():
    def problem(text):
        return next(v for v in tokens.tokenize(text)[1] if v.label.startswith("translate-copy")).problem

    assert problem("31415926x") == "" and problem("x1") == ""  # half or fewer unknown: drawn, [UNK] chips and all
    assert "2 of its 3 tokens would be [UNK]" in problem("xy1")
    assert tokens.tokenize("") == ("", [], "")


def test_merge_replay_clamps_k_and_ends_at_the_tokenizers_own_encoding():
    bpe = lab.store.tokenizer(tokens.REPLAY_MODEL)
    text = "Shall I compare thee to a summer's day?"
    read, k, spans, last = tokens.replay(text, 10**9)
    assert k == len(bpe.merges) and [s.id for s in spans] == bpe.encode(text) and last == bpe.merges[-1]
    _, k, spans, last = tokens.replay(text, -5)
    assert k == 0 and last is None and len(spans) == len(text.encode("utf-8"))  # one token per byte
    _, k, spans, last = tokens.replay(text, 1)
    assert last == bpe.merges[0] and len(spans) < len(text.encode("utf-8"))
    assert tokens.merge_text("Ġthe") == " the"
    text, training, notice = tokens.scratch("low lower " * 300)
    assert len(text) == tokens.SCRATCH_MAX_CHARS and "3,000 characters" in notice and training is not None
    assert tokens.scratch(None) == ("", None, "")


def test_a_model_folder_without_readable_tokenizers_is_said_plainly(tmp_path):
    lab.store.set_model_dir(tmp_path)
    try:
        with pytest.raises(policy.InputError, match="No readable tokenizer.json"):
            tokens.tokenize("hello")
        (tmp_path / "broken").mkdir()
        (tmp_path / "broken" / "tokenizer.json").write_text("{not json")
        (tmp_path / "chars").mkdir()
        (tmp_path / "chars" / "tokenizer.json").write_bytes(
            (lab.store.DEFAULT_MODEL_DIR / "shakespeare-char" / "tokenizer.json").read_bytes())
        _, views, notice = tokens.tokenize("hello")
        assert [v.label.split(" ·")[0] for v in views] == ["chars"] and "Skipped broken" in notice
    finally:
        lab.store.set_model_dir(lab.store.DEFAULT_MODEL_DIR)


# ---------------------------------------------------------------- concepts


def test_the_weighted_average_is_softmax_of_dot_products_then_a_weighted_sum():
    plain = concepts.weighted_average("1 0\n0 1\n1 1", False, "", "", "", False)
    x = torch.tensor([[1.0, 0], [0, 1], [1, 1]])
    torch.testing.assert_close(plain.attn, torch.softmax(x @ x.T, -1))
    torch.testing.assert_close(plain.y, plain.attn @ x)
    w_q, w_k, w_v = "1 0\n0 2", "0 1\n1 0", "1 1\n0 1"
    projected = concepts.weighted_average("1 0\n0 1\n1 1", True, w_q, w_k, w_v, True)
    q, k, v = (x @ torch.tensor(m) for m in ([[1.0, 0], [0, 2]], [[0.0, 1], [1, 0]], [[1.0, 1], [0, 1]]))
    torch.testing.assert_close(projected.attn, torch.softmax(q @ k.T / 2**0.5, -1))
    torch.testing.assert_close(projected.y, projected.attn @ v)
    with pytest.raises(policy.InputError, match="W_q needs 2 rows"):
        concepts.weighted_average("1 0\n0 1", True, "1 0 0", w_k, w_v, False)
    with pytest.raises(policy.InputError, match="at most 8 short rows"):
        concepts.weighted_average("1 " * 2000, False, "", "", "", False)


def test_word_order_is_invisible_without_positions_and_visible_with_them():
    summary, variants, labels, names = concepts.order("the film was not good at all", 0)
    assert "the shipped `sentiment` classifier" in summary and names == ["negative", "positive"]
    none, learned = variants
    assert (none.name, learned.name) == ("no positions", "with positions")
    assert none.mismatch.max() < 1e-4 and torch.allclose(none.probs, none.probs_shuffled, atol=1e-5)
    assert learned.mismatch.max() > 0.1 and not torch.allclose(learned.probs, learned.probs_shuffled, atol=1e-5)
    shuffled = summary.split("**")[1].split()
    assert [label.strip() for label in labels] == shuffled  # one token per word here, in the shuffled order
    with pytest.raises(policy.InputError, match="2 to 40 words"):
        concepts.order("alone", 0)


def test_positions_and_parameter_counts_come_from_the_shipped_models():
    import transformer_core as tc

    (sinusoidal, similarity), (title, learned, _), note = concepts.positions(16, 8)
    assert note == "" and title.startswith("learned positions of shakespeare-lm (first 16 of")
    torch.testing.assert_close(sinusoidal, tc.sinusoidal_encoding(16, 8))
    torch.testing.assert_close(similarity, sinusoidal @ sinusoidal.T)
    torch.testing.assert_close(learned, lab.store.model("shakespeare-lm").embed.pos.weight[:16].detach())
    counts, tables, problems = concepts.parameters(64)
    assert len({c.total for c in counts}) == 1 and problems == []  # more heads, the same parameters
    assert sorted(tables) == concepts.shipped_models() == sorted(lab.store.checkpoints(include_cheats=True).values())
    for name in ("shakespeare-lm", "translate-copy"):
        assert sum(row.params for row in tables[name]) == sum(p.numel() for p in lab.store.model(name).parameters())


def test_the_trace_follows_a_row_and_position_inside_the_batch_only():
    run, row, position = concepts.trace("1 2 3\n4 3 2", "2 3\n1 4", 0.1, 0, 1, 1)
    assert (row, position) == (1, 1) and run.targets.shape == (2, 2) and run.label_smoothing == 0.1
    with pytest.raises(policy.InputError, match="position to follow must be a number from 0 to 1"):
        concepts.trace("1 2 3\n4 3 2", "2 3\n1 4", 0.1, 0, 1, 2)
    with pytest.raises(policy.InputError, match="label smoothing must be a number from 0 to 0.5"):
        concepts.trace("1 2 3\n4 3 2", "2 3\n1 4", 0.9, 0)


# ---------------------------------------------------------------- live training


def test_a_second_live_run_is_refused_while_one_trains_and_the_slot_frees_when_it_ends():
    slot, threads = live.LiveTraining(), torch.get_num_threads()
    running = slot.run("copy", "tiny", 50, 60, poll=0.1)
    next(running)  # the child process is started and holds the slot
    assert slot.busy
    with pytest.raises(policy.InputError) as refused:
        next(slot.run("reverse", "tiny", 50, 60))
    assert str(refused.value) == live.BUSY
    *_, last = running
    assert not slot.busy and last.model is not None and last.codec is not None
    assert 0 <= live.held_out_score(last.model, last.codec, "copy", 5) <= 1
    assert [step for step, _ in last.losses] == list(range(1, 51)) and [c[0] for c in last.checks] == [50]
    assert torch.get_num_threads() == threads  # trained in its own process, with its own thread count
    with pytest.raises(policy.InputError, match="pig latin takes far longer"):
        next(slot.run("pig_latin", "tiny", 50, 60))
    assert not slot.busy


class _Messages(list):
    """A stand-in for the child's queue when `_train` runs in this process."""

    def put(self, message):
        self.append(message)


@pytest.mark.parametrize("score, steps, stops_at, checks", [(0.99, 1000, 50, [50]), (0.98, 100, 100, [50, 100])])
def test_live_training_stops_at_the_first_check_that_reaches_99_percent(monkeypatch, score, steps, stops_at, checks):
    monkeypatch.setattr(live, "exact_match", lambda *args: score)  # the held-out score each check sees
    messages, threads = _Messages(), torch.get_num_threads()
    try:
        live._train("copy", "tiny", steps, 60, messages)
    finally:
        torch.set_num_threads(threads)  # _train sets the child's thread count
    kinds = [m[0] for m in messages]
    assert kinds[-1] == "done" and "error" not in kinds
    assert max(m[1] for m in messages if m[0] == "loss") == stops_at
    assert [m[1] for m in messages if m[0] == "check"] == checks


def test_a_live_run_that_cannot_start_frees_the_slot_and_says_why(monkeypatch):
    spawn = multiprocessing.get_context("spawn")

    class Unstartable(spawn.Process):
        def start(self):
            raise OSError("cannot start a process: resource temporarily unavailable")

    monkeypatch.setattr(live, "mp", SimpleNamespace(get_context=lambda method=None: SimpleNamespace(
        Queue=spawn.Queue, Process=Unstartable)))
    slot = live.LiveTraining()
    with pytest.raises(OSError, match="resource temporarily unavailable"):
        next(slot.run("copy", "tiny", 50, 60))
    assert not slot.busy  # or every later Train press would hear "busy" until the app restarts
