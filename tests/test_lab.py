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
