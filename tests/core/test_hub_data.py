"""Text that is not pinned (training/hub_data.py): your own file or folder, its fixed split, a Hub data set."""

import pytest

from transformer_core.training import data, hub_data


def test_local_text_reads_a_file_or_every_txt_in_a_folder(tmp_path):
    (tmp_path / "b.txt").write_text("second\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.txt").write_text("third")
    (tmp_path / "a.txt").write_text("first\n")
    (tmp_path / "notes.md").write_text("ignored")
    assert hub_data.local_text(tmp_path / "a.txt") == "first\n"
    assert hub_data.local_text(tmp_path) == "first\n\nsecond\n\nthird"


def test_local_text_errors_name_the_path(tmp_path):
    with pytest.raises(data.DataError, match="missing.txt"):
        hub_data.local_text(tmp_path / "missing.txt")
    with pytest.raises(data.DataError, match="No .txt files"):
        hub_data.local_text(tmp_path)


def test_split_text_is_contiguous_deterministic_and_never_cuts_a_line():
    text = "".join(f"line {i}\n" for i in range(100))
    split = hub_data.split_text(text, validation=0.1, test=0.2)
    assert split["train"] + split["validation"] + split["test"] == text
    assert split == hub_data.split_text(text, validation=0.1, test=0.2)
    for part in split.values():
        assert part.endswith("\n")
    assert 0.6 < len(split["train"]) / len(text) < 0.75
    assert hub_data.split_text("") == {"train": "", "validation": "", "test": ""}


def test_hub_text_downloads_a_dataset_repo_and_joins_its_txt_files(tmp_path, monkeypatch):
    (tmp_path / "poems.txt").write_text("roses")
    calls = []

    def fake_snapshot_download(repo_id, **kwargs):
        calls.append((repo_id, kwargs))
        return str(tmp_path)

    monkeypatch.setattr(hub_data, "snapshot_download", fake_snapshot_download)
    assert hub_data.hub_text("someone/poems") == "roses"
    assert calls[0][0] == "someone/poems" and calls[0][1]["repo_type"] == "dataset"


def test_hub_text_accepts_a_local_folder_and_wraps_hub_errors(tmp_path, monkeypatch):
    (tmp_path / "a.txt").write_text("local")
    assert hub_data.hub_text(str(tmp_path)) == "local"

    def unreachable(repo_id, **kwargs):
        raise OSError("network is unreachable")

    monkeypatch.setattr(hub_data, "snapshot_download", unreachable)
    with pytest.raises(data.DataError, match="someone/poems"):
        hub_data.hub_text("someone/poems")
