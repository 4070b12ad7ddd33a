"""Small things every tab needs the same way: input limits, the notice when text is cut,
and files of raw numbers a student can download next to a figure."""

from __future__ import annotations

import csv
import json
import re
import tempfile
from pathlib import Path

MAX_CHARS = 5000  # longest text any tab takes; longer input is cut, with a visible notice

# Downloads go under the system temp folder, which Gradio serves by default; one fresh
# sub-folder per file, so two users downloading "attention.csv" at once never collide.
DOWNLOAD_DIR = Path(tempfile.gettempdir()) / "transformer-lab-downloads"


def truncate(text: str | None, limit: int = MAX_CHARS) -> tuple[str, str]:
    """(text cut to `limit` characters, a notice for the user or "" when nothing was cut)."""
    text = text or ""
    if len(text) <= limit:
        return text, ""
    return text[:limit], f"Your text has {len(text):,} characters; only the first {limit:,} are used."


def download_file(name: str, rows: list[dict]) -> str:
    """Write `rows` (one dict per record, same keys in each) to a file called `name`; return its path.

    The suffix of `name` picks the format: `.csv` (a header from the first row's keys) or
    `.json` (a list of objects). Give the path to a `gr.File` / `gr.DownloadButton` output.
    """
    suffix = Path(name).suffix.lower()
    if suffix not in (".csv", ".json"):
        raise ValueError(f"download_file writes .csv or .json, not {name!r}")
    safe_name = re.sub(r"[^\w.-]", "_", Path(name).name)
    DOWNLOAD_DIR.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(dir=DOWNLOAD_DIR)) / safe_name
    with path.open("w", encoding="utf-8", newline="") as f:
        if suffix == ".json":
            json.dump(rows, f, ensure_ascii=False)
        else:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else [])
            writer.writeheader()
            writer.writerows(rows)
    return str(path)
