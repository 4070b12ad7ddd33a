import pytest
import torch


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture(autouse=True)
def _fresh_views():
    """Each test computes its own views: none is served from another test's cache."""
    from lab.cache import clear_all
    from ui.common import clear_caches

    clear_all()
    clear_caches()
