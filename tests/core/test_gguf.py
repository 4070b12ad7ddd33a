"""Import from GGUF (weights/gguf.py): tiny files written here with llama.cpp's own writer (the `gguf` package), in
the layouts its converter writes (a llama's q/k rows permuted, a byte-level BPE with merges; Gemma's pieces with
scores and byte fallback), read back into our DecoderLM; and files that are missing, cut short or foreign.
The real SmolLM2 and Gemma files are checked against transformers in benchmarks/llm.py."""

from dataclasses import replace

import gguf
import pytest
import torch
from core_models import modern_lm
from gguf_files import byte_level_vocab, write
from random_models import GEMMA, LLAMA

from transformer_core.weights.gguf import GGUFImportError, read_gguf

@pytest.fixture(scope="module")
def llama_file(tmp_path_factory):
    model = modern_lm(LLAMA, vocab_size=len(byte_level_vocab()[0]), tie_embeddings=True)
    path = tmp_path_factory.mktemp("gguf") / "llama.gguf"
    write(path, model, "llama")
    return model, path


def test_a_llama_file_reads_back_into_the_same_model_with_its_q_and_k_rows_put_back(llama_file):
    model, path = llama_file
    read = read_gguf(path)
    eps = read.model.config.layer_norm_eps  # stored as a float32
    assert replace(read.model.config, layer_norm_eps=model.config.layer_norm_eps) == model.config
    assert eps == pytest.approx(model.config.layer_norm_eps)
    ids = torch.randint(0, model.config.vocab_size, (1, 16))
    assert torch.allclose(read.model(ids), model(ids), atol=1e-5)
    assert read.model.head.weight is read.model.embed.tok.weight  # no output matrix in the file: tied


def test_a_gemma_file_reads_back_with_its_local_layers_and_norms(tmp_path):
    model = modern_lm(GEMMA, vocab_size=275, tie_embeddings=True, sliding_window=5, global_every=6,
                      rope_local_base=10_000.0)
    path = tmp_path / "gemma.gguf"
    write(path, model, "gemma3")
    read = read_gguf(path)
    c = read.model.config
    assert (c.qk_norm, c.sandwich_norm, c.scale_embeddings, c.sliding_window, c.global_every) == (True, True, True, 5, 6)
    ids = torch.randint(0, 275, (1, 12))
    assert torch.allclose(read.model(ids), model(ids), atol=1e-5)


def test_quantised_blocks_are_dequantised_by_the_gguf_package(tmp_path):
    model = modern_lm(LLAMA, vocab_size=len(byte_level_vocab()[0]), tie_embeddings=True)
    path = tmp_path / "q8.gguf"
    write(path, model, "llama", quantise="Q8_0")
    read = read_gguf(path)
    w, w_read = model.layers[0].ff.w_1.weight, read.model.layers[0].ff.w_1.weight
    assert 0 < (w - w_read).abs().max() < 0.02 * w.abs().max()  # 8-bit blocks: close, not equal
    ids = torch.randint(0, model.config.vocab_size, (1, 10))
    assert torch.equal(read.model(ids).argmax(-1), model(ids).argmax(-1))


def test_the_byte_level_tokenizer_splits_digits_and_keeps_typed_control_tokens_as_text(llama_file):
    _, path = llama_file
    tokenizer = read_gguf(path).tokenizer
    assert tokenizer.is_byte_level and tokenizer.kind == "byte-level BPE"
    ids = tokenizer.encode("the cat in 2023")
    assert [tokenizer.decode([i]) for i in ids][-4:] == ["2", "0", "2", "3"]  # llama.cpp's "smollm": \p{N} alone
    typed = tokenizer.encode("<|im_start|>the")
    assert tokenizer.token_to_id("<|im_start|>") not in typed and tokenizer.decode(typed) == "<|im_start|>the"


def test_the_sentencepiece_tokenizer_adds_bos_merges_in_file_order_and_falls_back_to_bytes(tmp_path):
    model = modern_lm(GEMMA, vocab_size=275, tie_embeddings=True, sliding_window=5, global_every=6)
    path = tmp_path / "gemma.gguf"
    tokens = write(path, model, "gemma3")
    tokenizer = read_gguf(path).tokenizer
    pieces = lambda text: [tokens[i] for i in tokenizer.encode(text)]  # noqa: E731
    assert pieces("abc abc") == ["<bos>", "abc", "▁abc"]
    assert pieces("bcd") == ["<bos>", "bc", "d"]  # "bc" stands before "cd" in the file, so it merges first
    assert pieces("é\n\nab") == ["<bos>", "<0xC3>", "<0xA9>", "\n\n", "ab"]  # bytes of what no piece holds
    assert pieces("<start_of_turn>")[1:] != ["<start_of_turn>"]  # typed, it is text
    assert tokenizer.decode(tokenizer.encode("ab  ab é")[1:]) == "ab  ab é"


@pytest.mark.parametrize("damage", ["missing", "cut short", "not gguf", "other architecture"])
def test_a_file_that_cannot_be_read_is_named_with_its_reason(llama_file, tmp_path, damage):
    _, good = llama_file
    path = tmp_path / "bad.gguf"
    if damage == "cut short":
        path.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    elif damage == "not gguf":
        path.write_bytes(b"PK\x03\x04 a zip file, not a model" * 10)
    elif damage == "other architecture":
        w = gguf.GGUFWriter(str(path), "bert")
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
    reason = {"missing": "no GGUF file", "cut short": "cut short", "not gguf": "not a GGUF file",
              "other architecture": "'bert'"}[damage]
    with pytest.raises(GGUFImportError, match=reason) as refused:
        read_gguf(path)
    assert str(path.name) in str(refused.value)
