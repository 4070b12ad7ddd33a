"""Tiny GGUF files for tests, written with llama.cpp's own writer (the `gguf` package) in the layouts its converter
writes: a llama's q/k rows permuted, a byte-level BPE with merges and "smollm" pre-tokenizer; Gemma 3's
SentencePiece pieces with scores, control and user-defined tokens, byte fallback."""

import functools
import json

import gguf
import numpy as np
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

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


@functools.lru_cache(maxsize=1)
def byte_level_vocab():
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe.train_from_iterator([TEXT], trainers.BpeTrainer(vocab_size=300, special_tokens=specials,
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    vocab = bpe.get_vocab()
    tokens = sorted(vocab, key=vocab.get)
    merges = [" ".join(m) for m in json.loads(bpe.to_str())["model"]["merges"]]
    return tokens, merges


def write(path, model, arch: str, *, quantise: str | None = None, chat_template: str | None = None):
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
        if chat_template:
            w.add_chat_template(chat_template)
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
