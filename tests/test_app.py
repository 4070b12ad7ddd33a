"""The app shell: flags, queue limits, GPU decorator, URL state, lecture presets, downloads, deploy."""

from __future__ import annotations

import csv
import json

import pytest

from ui.common import download_file


def test_download_file_writes_csv_with_a_header_and_json_as_a_list():
    rows = [{"layer": 0, "head": 1, "query": "the", "key": "cat", "weight": 0.25}]
    with open(download_file("attention.csv", rows), encoding="utf-8") as f:
        assert list(csv.DictReader(f)) == [{"layer": "0", "head": "1", "query": "the", "key": "cat", "weight": "0.25"}]
    with open(download_file("attention.json", rows), encoding="utf-8") as f:
        assert json.load(f) == rows


def test_download_file_keeps_two_downloads_of_the_same_name_apart():
    assert download_file("a.csv", [{"x": 1}]) != download_file("a.csv", [{"x": 2}])


def test_download_file_refuses_other_formats():
    with pytest.raises(ValueError, match="csv or .json"):
        download_file("attention.pkl", [])
