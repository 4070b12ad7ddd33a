"""Shared by the use-case tests."""

import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """These models are tiny: on a busy 2-core machine two torch threads fighting made a small
    translation ~30x slower (5 s instead of 0.17 s). The use cases' results do not depend on it."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
