"""Text that does not come pinned from PyPI: your own file or folder, a text data set on the Hugging Face Hub,
and IMDb from the Hub.

Lesson: the same rule as data.py, with text we do not pin. Your own text is cut into train,
validation and test as three consecutive blocks (`split_text`), always the same way; IMDb keeps its
own test file as the test split and cuts its train file by row index, so no test review can reach
training. Each source may also be a local folder (offline use, tests).
"""

from __future__ import annotations

import os
from pathlib import Path

from huggingface_hub import hf_hub_download, snapshot_download
from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

from .data import REVIEW_VALIDATION_DIGIT, DataError, Review, _check_split, _decode


# ---------------------------------------------------------------- your own text


def local_text(path: str | os.PathLike) -> str:
    """The text of a file, or of every .txt file under a folder (sorted by path, blank line between)."""
    path = Path(path).expanduser()
    if path.is_file():
        return _decode(path.read_bytes())
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.txt") if p.is_file())
        if not files:
            raise DataError(f"No .txt files under {path}.")
        return "\n\n".join(_decode(p.read_bytes()).strip("\n") for p in files)
    raise DataError(f"No such file or folder: {path}")


def split_text(text: str, validation: float = 0.1, test: float = 0.1) -> dict[str, str]:
    """Cut a text into train / validation / test as three consecutive blocks.

    Contiguous blocks (not random lines) keep neighbouring, near-duplicate
    lines on the same side of the cut. Each cut moves forward to the next line
    break so no line is split; the same text always gives the same split.
    """
    if not (0 <= validation and 0 <= test and validation + test < 1):
        raise ValueError("validation and test must be fractions with validation + test < 1.")
    validation_start = _next_line_start(text, round(len(text) * (1 - validation - test)))
    test_start = _next_line_start(text, max(validation_start, round(len(text) * (1 - test))))
    return {
        "train": text[:validation_start],
        "validation": text[validation_start:test_start],
        "test": text[test_start:],
    }


def _next_line_start(text: str, position: int) -> int:
    if position <= 0:
        return 0
    newline = text.find("\n", position - 1)
    return len(text) if newline == -1 else newline + 1


def hub_text(repo_id: str, revision: str | None = None, pattern: str = "*.txt") -> str:
    """The text files of a data set repo on the Hugging Face Hub, joined like `local_text`.

    `repo_id` may also be a local folder (handy offline and in tests). Only
    files matching `pattern` are downloaded.
    """
    if Path(repo_id).expanduser().is_dir():
        return local_text(repo_id)
    try:
        folder = snapshot_download(repo_id, repo_type="dataset", revision=revision,
                                   allow_patterns=[pattern])
    except (HfHubHTTPError, LocalEntryNotFoundError, OSError) as error:
        raise DataError(
            f"Could not fetch data set {repo_id!r} from the Hugging Face Hub: {error}\n"
            f"Fix: check the repo id and your connection, or pass a local folder instead."
        ) from error
    return local_text(folder)


# ---------------------------------------------------------------- IMDb on the Hugging Face Hub

IMDB_REPO = "stanfordnlp/imdb"
_IMDB_FILES = {"train": "plain_text/train-00000-of-00001.parquet", "test": "plain_text/test-00000-of-00001.parquet"}


def _imdb_file(repo_id: str, part: str, revision: str | None) -> Path:
    """One IMDb parquet file: from a local copy of the repo's folder layout, or downloaded (and cached)."""
    local = Path(repo_id).expanduser()
    if local.is_dir():
        path = local / _IMDB_FILES[part]
        if not path.is_file():
            raise DataError(f"No {_IMDB_FILES[part]} under {local} (a local IMDb copy keeps the Hub's layout).")
        return path
    try:
        return Path(hf_hub_download(repo_id, _IMDB_FILES[part], repo_type="dataset", revision=revision))
    except (HfHubHTTPError, LocalEntryNotFoundError, OSError) as error:
        raise DataError(
            f"Could not fetch {_IMDB_FILES[part]} of data set {repo_id!r} from the Hugging Face Hub: {error}\n"
            f"Fix: check your connection, or pass a local folder holding {_IMDB_FILES[part]}."
        ) from error


def imdb_reviews(split: str, repo_id: str = IMDB_REPO, revision: str | None = None) -> list[Review]:
    """IMDb movie reviews (Maas et al., 2011) as `Review`s, read from the Hub's parquet files.

    IMDb ships 25k train and 25k test reviews. Its test file is our test split;
    its train file is cut by row index like the snippets (index % 10 == 1 is
    validation, the rest train), so no test review can reach training. IMDb has
    labels only, so `rating` is +1.0 or -1.0. `repo_id` may be a local folder
    with the same `plain_text/*.parquet` layout (offline use, tests).
    """
    _check_split(split)
    try:
        import pyarrow.parquet as pq  # only this loader needs parquet
    except ImportError as error:
        raise DataError("Reading IMDb needs pyarrow: pip install pyarrow") from error
    table = pq.read_table(_imdb_file(repo_id, "test" if split == "test" else "train", revision),
                          columns=["text", "label"])
    reviews = [Review(i, 1.0 if label else -1.0, text, int(label))
               for i, (text, label) in enumerate(zip(table["text"].to_pylist(), table["label"].to_pylist()))]
    if split == "test":
        return reviews
    return [r for r in reviews if (r.id % 10 == REVIEW_VALIDATION_DIGIT) == (split == "validation")]
