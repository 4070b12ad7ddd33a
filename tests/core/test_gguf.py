"""Import from GGUF (weights/gguf.py): tiny files written here with llama.cpp's own writer (the `gguf` package), in
the layouts its converter writes (a llama's q/k rows permuted, a byte-level BPE with merges; Gemma's pieces with
scores and byte fallback), read back into our DecoderLM; and files that are missing, cut short or foreign.
The real SmolLM2 and Gemma files are checked against transformers in benchmarks/llm.py."""

from dataclasses import replace

import gguf
import numpy as np
import pytest
import torch
from core_models import modern_lm
from random_models import GEMMA, LLAMA
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from transformer_core.weights.gguf import GGUFImportError, read_gguf

# ours -> the file's names within a block (llama.cpp's, as its converter writes them)
NAMES = {"norm_self": "attn_norm", "self_attn.w_q": "attn_q", "self_attn.w_k": "attn_k", "self_attn.w_v": "attn_v",
         "self_attn.w_o": "attn_output", "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
         "norm_self_out": "post_attention_norm", "norm_ff": "ffn_norm", "ff.w_1": "ffn_gate", "ff.w_3": "ffn_up",
         "ff.w_2": "ffn_down", "norm_ff_out": "post_ffw_norm"}
TEXT = "the cat sat on the mat in 2023, the dog sat on the log. " * 20


def llama_cpp_permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """What llama.cpp's convert_hf_to_gguf.py does to a llama's q and k rows (its `LlamaModel.permute`)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def file_name(ours: str) -> str:
    if ours == "embed.tok.weight":
        return "token_embd.weight"
    if ours == "norm.weight":
        return "output_norm.weight"
    if ours == "head.weight":
        return "output.weight"
    _, layer, rest = ours.split(".", 2)
    module, kind = rest.rsplit(".", 1)
    return f"blk.{layer}.{NAMES[module]}.{kind}"


@__import__("functools").lru_cache(maxsize=1)
def byte_level_vocab():
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.train_from_iterator([TEXT], trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>", "<|im_start|>"],
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    vocab = bpe.get_vocab()
    tokens = sorted(vocab, key=vocab.get)
    merges = [" ".join(m) for m in __import__("json").loads(bpe.to_str())["model"]["merges"]]
    return tokens, merges


def write(path, model, arch: str, *, quantise: str | None = None):
    c = model.config
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(c.n_layer)
    w.add_context_length(c.max_len)
    w.add_embedding_length(c.d_model)
    w.add_feed_forward_length(c.d_ff)
    w.add_head_count(c.n_head)
    w.add_head_count_kv(c.n_kv_head)
    w.add_layer_norm_rms_eps(c.layer_norm_eps)
    w.add_rope_freq_base(c.rope_base)
    if arch == "llama":
        w.add_rope_dimension_count(c.d_head)
        tokens, merges = byte_level_vocab()
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("smollm")
        w.add_token_list(tokens)
        w.add_token_merges(merges)
        w.add_token_types([3 if t.startswith("<|") else 1 for t in tokens])
    else:
        w.add_key_length(c.d_head)
        w.add_value_length(c.d_head)
        w.add_sliding_window(c.sliding_window)
        tokens = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "\n\n", *[f"<0x{b:02X}>" for b in range(256)],
                  "▁", "a", "b", "c", "ab", "▁a", "▁ab", "abc", "▁abc", "▁▁", "d", "bc", "cd"]
        w.add_tokenizer_model("llama")
        w.add_token_list(tokens)
        w.add_token_scores([0.0] * len(tokens))
        w.add_token_types([3, 3, 3, 2, 3, 4, *[6] * 256, *[1] * 13])
        w.add_bos_token_id(2)
        w.add_eos_token_id(1)
        w.add_unk_token_id(3)
        w.add_add_bos_token(True)
    for name, t in model.state_dict().items():
        if name == "head.weight" and c.tie_embeddings:
            continue
        a = t.numpy().astype(np.float32)
        if arch == "llama" and name.endswith(("w_q.weight", "w_k.weight")):
            a = llama_cpp_permute(a, c.n_head if "w_q" in name else c.n_kv_head)
        if quantise and a.ndim == 2:
            qtype = gguf.GGMLQuantizationType[quantise]
            w.add_tensor(file_name(name), gguf.quants.quantize(a, qtype), raw_dtype=qtype)
        else:
            w.add_tensor(file_name(name), a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return tokens


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
