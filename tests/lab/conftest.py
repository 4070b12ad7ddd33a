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


@pytest.fixture(scope="module")
def modern_store(tmp_path_factory):
    """A model folder holding the shipped checkpoints and two tiny modern decoders (serving.modern_checkpoints:
    "tiny-llama", grouped-query attention; "tiny-gemma", also a sliding-window layer), set for the module."""
    import serving
    from lab import store

    folder = tmp_path_factory.mktemp("modern")
    for entry in serving.model_dir(tmp_path_factory.mktemp("shipped")).iterdir():
        (folder / entry.name).symlink_to(entry.resolve())
    names = serving.modern_checkpoints(folder)
    before = store.model_dir()
    store.set_model_dir(folder)
    yield names
    store.set_model_dir(before)
