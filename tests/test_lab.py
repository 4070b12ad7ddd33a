"""The use cases, without Gradio: one input policy, runs kept for re-slicing, caches that share one computation."""

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import lab
from lab import concepts, policy, sentiment, tokens, translation
from lab.cache import ViewCache, clear_all

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _fresh_views():
    """Overrides conftest's fixture of the same name, which imports ui.common (and with it Gradio):
    here only lab's caches are cleared, so running this file alone never imports Gradio."""
    clear_all()
    if "ui.common" in sys.modules:  # the whole suite ran a ui test before: clear its caches too
        sys.modules["ui.common"].clear_caches()


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
    monkeypatch.setattr(hub, "snapshot_download", lambda *a, **k: asked.append(("snapshot", a, k)))
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda *a, **k: asked.append(("snapshot", a, k)))
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", lambda *a, **k: asked.append(("file", a, k)))
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
    waiter = threading.Thread(target=lambda: answers.append(pytest.raises(RuntimeError, list,
                                                                          cache.stream("s", produce))))
    hits = cache.hits
    waiter.start()
    while cache.hits == hits:  # until the waiter is waiting on the running stream
        time.sleep(0.01)
    stopped.close()  # the person closed the page mid-stream
    waiter.join(5)
    assert not waiter.is_alive() and answers  # the waiter got an answer instead of hanging
    assert list(cache.stream("s", produce)) == [[0], [1], [2]]  # and nothing half-done was kept
