"""Shared by the use-case tests."""

import pytest
import torch
from gguf_files import byte_level_vocab, write
from random_models import GEMMA, LLAMA, modern_lm

from lab import llms, store


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

    folder = tmp_path_factory.mktemp("modern")
    for entry in serving.model_dir(tmp_path_factory.mktemp("shipped")).iterdir():
        (folder / entry.name).symlink_to(entry.resolve())
    names = serving.modern_checkpoints(folder)
    before = store.model_dir()
    store.set_model_dir(folder)
    yield names
    store.set_model_dir(before)


# the real LLMs' stand-ins: tiny GGUF files of their architectures, made into an LLM folder as lab/llms.py makes them
CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
          "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """Where the data module would have put each LLM's wheel contents: a tiny GGUF of its architecture (the
    llama one with a ChatML template) and its licence files."""
    root = tmp_path_factory.mktemp("sources")
    smol, gemma = root / "smollm2", root / "gemma3"
    smol.mkdir(), gemma.mkdir()
    tokens, _ = byte_level_vocab()
    write(smol / llms.SMOLLM2.gguf, modern_lm(LLAMA, vocab_size=len(tokens), tie_embeddings=True), "llama",
          chat_template=CHATML)
    (smol / "LICENSE").write_text("Apache-2.0")
    write(gemma / llms.GEMMA3.gguf, modern_lm(GEMMA, vocab_size=275, tie_embeddings=True, sliding_window=5,
                                             global_every=6, max_len=4096), "gemma3")
    for name in llms.GEMMA3.licence_files:
        (gemma / name).write_text(name)
    return {"smollm2": smol, "gemma3": gemma}


@pytest.fixture
def llm_dir(tmp_path, sources, monkeypatch):
    from transformer_core.training import data

    for source, folder in sources.items():
        monkeypatch.setattr(data, source, lambda folder=folder: folder)
    store.set_llm_dir(tmp_path / "llms")
    yield tmp_path / "llms"
    store.set_llm_dir(None)
